"""The judge: a small transformer over [CLS, instruction words, terms, read lines, keyframes, visual tokens].

Inputs (B batch; L words, M terms, N lines, T keyframes, V visual tokens; G hashed ids per word or text):

* ``word_ids`` (B, L, G) int64, ``word_mask`` (B, L) bool: the instruction (:mod:`models.hashing`);
* ``term_ids`` (B, M, G), ``term_feat`` (B, M, TERM_FEATS), ``term_mask`` (B, M): what the instruction names,
  with how well the run's acted, changed and final text matches each (:mod:`models.features`);
* ``line_ids`` (B, N, G), ``line_feat`` (B, N, LINE_FEATS), ``line_t`` (B, N) keyframe, ``line_mask`` (B, N);
* ``frame_feat`` (B, T, FRAME_FEATS), ``frame_mask`` (B, T): per keyframe (pointer, change, acting point);
* ``vis`` (B, V, P*P) standardised grey patches near the acting points, ``vis_feat`` (B, V, VIS_FEATS),
  ``vis_t`` (B, V), ``vis_mask`` (B, V);
* ``run_feat`` (B, RUN_FEATS): the run's coverage of the instruction's terms, read by a small MLP whose logit is
  added to the CLS logit (one reading for every task: what carries the verdict to unseen task types).

Outputs: ``success_logit`` (B,), ``frame_logits`` (B, T) ("the run first deviates at this keyframe"; padding
frames get -1e9) and ``embedding`` (B, d), the CLS state the out-of-distribution measure reads.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from models import hashing
from models.config import ModelConfig
from models.features import FRAME_FEATS, LINE_FEATS, RUN_FEATS, TERM_FEATS, VIS_FEATS

_NEG = -1e9


class Block(nn.Module):
    """Pre-norm transformer block with a key padding mask."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.d = d
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, cfg.mlp_ratio * d), nn.GELU(), nn.Linear(cfg.mlp_ratio * d, d))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        h, dh = self.n_heads, self.d // self.n_heads
        q, k, v = self.qkv(self.ln1(x)).split(self.d, dim=2)  # 3 x (B, S, d)
        q = q.view(b, s, h, dh).transpose(1, 2)  # (B, H, S, dh)
        k = k.view(b, s, h, dh).transpose(1, 2)
        v = v.view(b, s, h, dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (dh ** -0.5) + key_bias  # (B, H, S, S)
        att = self.drop(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, s, self.d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.mlp(self.ln2(x)))


class HashEmbedding(nn.Module):
    """Sum of the embeddings of a word's (or a text's) hashed ids; id 0 is padding."""

    def __init__(self, d: int):
        super().__init__()
        self.emb = nn.Embedding(hashing.BUCKETS, d, padding_idx=0)
        nn.init.normal_(self.emb.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (B, X, G) -> (B, X, d)
        n = (ids > 0).sum(-1, keepdim=True).clamp(min=1).to(torch.float32)
        return self.emb(ids).sum(dim=-2) / n.sqrt()


class RewardNet(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.hash = HashEmbedding(d)
        self.kind = nn.Embedding(6, d)  # cls, word, term, line, frame, visual
        self.word_pos = nn.Embedding(cfg.max_words, d)
        self.time = nn.Embedding(cfg.max_frames, d)
        self.term_in = nn.Linear(TERM_FEATS, d)
        self.line_in = nn.Linear(LINE_FEATS, d)
        self.frame_in = nn.Linear(FRAME_FEATS, d)
        self.vis_in = nn.Linear(cfg.patch * cfg.patch, d)
        self.vis_feat_in = nn.Linear(VIS_FEATS, d)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(d)
        self.success_head = nn.Linear(d, 1)
        self.run_mlp = nn.Sequential(nn.Linear(RUN_FEATS, cfg.run_hidden), nn.GELU(), nn.Linear(cfg.run_hidden, 1))
        self.frame_head = nn.Linear(d, 1)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, word_ids: torch.Tensor, word_mask: torch.Tensor, term_ids: torch.Tensor,
                term_feat: torch.Tensor, term_mask: torch.Tensor, line_ids: torch.Tensor, line_feat: torch.Tensor,
                line_t: torch.Tensor, line_mask: torch.Tensor, frame_feat: torch.Tensor, frame_mask: torch.Tensor,
                vis: torch.Tensor, vis_feat: torch.Tensor, vis_t: torch.Tensor, vis_mask: torch.Tensor,
                run_feat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b = word_ids.shape[0]
        t_len = frame_feat.shape[1]
        if t_len > self.cfg.max_frames:
            # The callers subsample a longer run uniformly to max_frames keyframes (models.features.keyframe_steps);
            # more here would share the last position in silence. (Evaluated while tracing only: in the ONNX graph
            # a position past the table fails the embedding lookup instead.)
            raise ValueError(f"{t_len} keyframes, more than the network's table of {self.cfg.max_frames}")
        ty = self.kind.weight  # (6, d)
        l_words = word_ids.shape[1]
        wpos = torch.arange(l_words, device=word_ids.device).clamp(max=self.cfg.max_words - 1)
        words = self.hash(word_ids) + self.word_pos(wpos)[None] + ty[1]  # (B, L, d)
        terms = self.hash(term_ids) + self.term_in(term_feat) + ty[2]  # (B, M, d)
        lines = self.hash(line_ids) + self.line_in(line_feat) + self.time(line_t) + ty[3]  # (B, N, d)
        tpos = torch.arange(t_len, device=frame_feat.device)
        frames = self.frame_in(frame_feat) + self.time(tpos)[None] + ty[4]  # (B, T, d)
        visual = self.vis_in(vis) + self.vis_feat_in(vis_feat) + self.time(vis_t) + ty[5]  # (B, V, d)
        cls = self.cls.expand(b, 1, -1) + ty[0]
        x = self.drop(torch.cat([cls, words, terms, lines, frames, visual], dim=1))  # (B, S, d)
        mask = torch.cat([torch.ones(b, 1, dtype=torch.bool, device=x.device), word_mask, term_mask, line_mask,
                          frame_mask, vis_mask], dim=1)  # (B, S)
        key_bias = (~mask).to(x.dtype)[:, None, None, :] * _NEG  # (B, 1, 1, S)
        for blk in self.blocks:
            x = blk(x, key_bias)
        x = self.ln(x)
        emb = x[:, 0]  # (B, d)
        success = self.success_head(emb)[:, 0] + self.run_mlp(run_feat)[:, 0]  # (B,)
        f0 = 1 + l_words + term_ids.shape[1] + line_ids.shape[1]
        fr = x[:, f0:f0 + t_len]  # (B, T, d)
        frame_logits = self.frame_head(fr)[..., 0].masked_fill(~frame_mask, _NEG)  # (B, T)
        return success, frame_logits, emb


class Ensemble(nn.Module):
    """``cfg.members`` networks of one shape, trained apart (other seeds) and judged together: the mean of their
    success and first-deviation logits, their embeddings side by side (B, members * d). Its inputs and outputs are
    a :class:`RewardNet`'s, so it exports to one ONNX graph and the runtime cannot tell the two apart."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        one = replace(cfg, members=1)
        self.nets = nn.ModuleList(RewardNet(one) for _ in range(cfg.members))

    def forward(self, **inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        outs = [net(**inputs) for net in self.nets]
        success = torch.stack([o[0] for o in outs]).mean(dim=0)
        frames = torch.stack([o[1] for o in outs]).mean(dim=0)  # padding stays at -1e9 in every member
        return success, frames, torch.cat([o[2] for o in outs], dim=-1)


#: What :func:`build` returns: one network or an ensemble (the same inputs and outputs).
Network = RewardNet | Ensemble


def build(cfg: ModelConfig) -> Network:
    """The network a config describes: one :class:`RewardNet`, or an :class:`Ensemble` of ``cfg.members``."""
    return RewardNet(cfg) if cfg.members <= 1 else Ensemble(cfg)


def losses(out: tuple[torch.Tensor, torch.Tensor, torch.Tensor], success: torch.Tensor, first_frame: torch.Tensor,
           frame_weight: float = 0.5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(total, success BCE, first-deviation CE over failures with a known keyframe)."""
    logit, frame_logits, _ = out
    bce = F.binary_cross_entropy_with_logits(logit, success.float())
    known = first_frame >= 0
    if known.any():
        ce = F.cross_entropy(frame_logits[known], first_frame[known])
    else:
        ce = logit.sum() * 0.0
    return bce + frame_weight * ce, bce, ce
