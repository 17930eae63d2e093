"""The v2 training recipe's parts: hidden instruction box, character n-grams, conv stem, online negatives,
token-budget batching. Real frames, real ONNX sessions, no training."""

from __future__ import annotations

import numpy as np
import onnx
import torch

from gui_app.core import native
from models import synthetic
from models.config import ModelConfig
from models.data import Record
from models.export_onnx import compare, export, sample_batch
from models.features import featurize, hidden_box, hide_regions, make_batch, model_keyframes
from models.network import RewardNet, input_names
from models.pruning import prune
from models.tokenizer import Tokenizer
from models.train import Item, NegativeSource, batches, epoch_items, to_batch


def _miniwob_like(height: int = 420, width: int = 320) -> np.ndarray:
    """A MiniWoB-looking frame: the yellow instruction box over the top 50/210 and a body with text."""
    f = synthetic.blank(height, width)
    f[:100] = (255, 255, 0)
    synthetic.draw_text(f, 30, 10, 20, np.random.default_rng(0))  # the instruction, printed in the box
    synthetic.draw_text(f, 150, 10, 12, np.random.default_rng(1))  # the task body
    return f


def test_instruction_box_of_miniwob_runs_is_hidden_and_pruned(syn_traj_dir):
    traj = native.load(syn_traj_dir)
    traj.app = "miniwob"
    assert hidden_box(traj, 420, 320) == (0, 0, 320, 100)
    frame = _miniwob_like()
    out = hide_regions([frame], traj)[0]
    assert (out[:100] == 128).all() and (out[100:] == frame[100:]).all()
    assert (frame[:100] != 128).any()  # the input is untouched
    res = prune([out], working_size=416)
    rows = 100 // 16  # patch rows entirely inside the box
    assert not res.masks[0, :rows].any()  # the flat box leaves no token
    assert res.masks[0, 9:11].any()  # the body's text survives


def test_explicit_model_hide_and_other_apps(syn_traj_dir):
    traj = native.load(syn_traj_dir)
    traj.app = "chrome"
    assert hidden_box(traj, 420, 320) is None
    frames = [_miniwob_like()]
    assert hide_regions(frames, traj)[0] is frames[0]
    traj.metadata["model_hide"] = [10, 20, 400, 60]
    assert hidden_box(traj, 420, 320) == (10, 20, 320, 60)  # clipped to the frame


def test_model_keyframes_hide_only_when_configured(syn_traj_dir):
    traj = native.load(syn_traj_dir)
    traj.app = "miniwob"
    plain, _ = model_keyframes(traj, ModelConfig.tiny())
    hidden, steps = model_keyframes(traj, ModelConfig.tiny(hide_instruction_box=True))
    assert len(plain) == len(hidden) == len(steps) == traj.n_steps
    assert (hidden[0][:100] == 128).all() and not (plain[0][:100] == 128).all()


def test_ngrams_give_unseen_and_misspelt_words_an_embedding_from_their_spelling():
    tok = Tokenizer.build(["enter kasey into the field"], min_count=1, ngram_buckets=256, ngrams_per_word=8)
    g = tok.encode_ngrams('enter "Kasye" please')
    assert len(g) == len(tok.encode('enter "Kasye" please'))
    assert g[0] == []  # [TXT]
    kasey, kasye = tok.word_ngrams("kasey"), tok.word_ngrams("kasye")
    assert 0 < len(kasey) <= 8 and all(1 <= i <= 256 for i in kasey)
    assert set(kasey) & set(kasye) and set(kasey) != set(kasye)
    assert Tokenizer.from_dict(tok.to_dict()).encode_ngrams("kasey") == tok.encode_ngrams("kasey")
    assert Tokenizer.from_dict({"vocab": {}, "n_buckets": 8, "max_len": 4}).encode_ngrams("a b") == [[], [], []]


def test_ngrams_change_the_text_embedding_and_padding_does_not():
    cfg = ModelConfig.tiny(char_ngrams=64)
    net = RewardNet(cfg).eval()
    b = sample_batch(cfg, batch=1, frames=2, tokens_per_frame=3, text=4)
    assert "text_ngrams" in b and input_names(cfg)[-1] == "text_ngrams"
    names = input_names(cfg)
    with torch.no_grad():
        base = net(*[torch.from_numpy(b[k]) for k in names])[0]
        more = dict(b, text_ngrams=np.concatenate([b["text_ngrams"], np.zeros_like(b["text_ngrams"])], axis=2))
        padded = net(*[torch.from_numpy(more[k]) for k in names])[0]
        other = dict(b, text_ngrams=(b["text_ngrams"] % 63) + 1)
        changed = net(*[torch.from_numpy(other[k]) for k in names])[0]
    assert torch.allclose(base, padded, atol=1e-6)
    assert not torch.allclose(base, changed, atol=1e-6)


def test_conv_stem_with_ngrams_exports_and_matches_torch(tmp_path):
    cfg = ModelConfig.tiny(stem="conv", char_ngrams=32)
    net = RewardNet(cfg)
    info = export(net, tmp_path / "m.onnx")
    assert info["max_abs_diff"] <= 1e-4
    model = onnx.load(tmp_path / "m.onnx")
    assert [i.name for i in model.graph.input] == list(input_names(cfg))
    assert compare((tmp_path / "m.onnx").read_bytes(), net.eval(),
                   sample_batch(cfg, batch=3, frames=6, tokens_per_frame=4, text=7, seed=9)) <= 1e-4


def test_featurize_carries_ngrams_into_the_batch(syn_traj_dir):
    traj = native.load(syn_traj_dir)
    cfg = ModelConfig.tiny(char_ngrams=32)
    tok = Tokenizer.build([traj.instruction], min_count=1, ngram_buckets=32, max_len=16)
    ex = featurize(traj, cfg, tok)
    assert ex.text_ngrams is not None and len(ex.text_ngrams) == len(ex.text_ids)
    batch = make_batch([ex])
    assert batch["text_ngrams"].shape[:2] == batch["text_ids"].shape
    no_ngrams = featurize(traj, ModelConfig.tiny(), Tokenizer.build([traj.instruction], min_count=1))
    assert "text_ngrams" not in make_batch([no_ngrams])


def _record(frames: list[np.ndarray], rid: str, task: str, success: bool = True) -> Record:
    res = prune(frames, working_size=64)
    return Record(patches=res.patches[res.masks], positions=res.positions(), n_frames=len(frames), grid=res.grid,
                  tokens_total=res.tokens_total, instruction=f"click the {rid} button", success=success,
                  error_frame=None if success else 0,
                  meta={"id": rid, "task": task, "negative_kind": "none", "path": ""}, steps=list(range(len(frames))))


def test_online_truncation_equals_pruning_the_cut_video():
    frames = synthetic.episode_frames(4, seed=2, height=64, width=64)
    rec = _record(frames, "a", "t1")
    src = NegativeSource(rewrites={}, instructions={"t1": ["x"]})
    items = epoch_items([rec], src, share=1.0, rng=np.random.default_rng(0))
    cut = [it for it in items if it.keep_frames is not None]
    assert len(items) == 2 and len(cut) == 1
    k = cut[0].keep_frames
    assert 1 <= k < rec.n_frames and cut[0].label is False and cut[0].error_frame == k - 1
    want = prune(frames[:k], working_size=64)
    cfg = ModelConfig.tiny(max_grid=8)
    tok = Tokenizer.build(["click the a button"], min_count=1)
    inputs, y, e = to_batch([cut[0]], tok, cfg, None)
    n = int(inputs["token_mask"].sum())
    assert n == want.tokens_kept
    assert np.array_equal(inputs["positions"][0, :n].numpy(), want.positions())
    assert y.tolist() == [0.0] and e.tolist() == [k - 1]


def test_online_negatives_cover_the_kinds_and_keep_the_records():
    frames = synthetic.episode_frames(3, seed=1, height=64, width=64)
    recs = [_record(frames, "a", "t1"), _record(frames, "b", "t2"),
            _record(frames, "c", "t1", success=False)]
    src = NegativeSource(rewrites={"a": [("click the z button", 1)]},
                         instructions={"t1": ["click the a button"], "t2": ["type b"]})
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(30):
        items = epoch_items(recs, src, share=1.0, rng=rng)
        assert [it.rec for it in items[:3]] == recs and all(it.success is None for it in items[:3])
        for it in items[3:]:
            assert it.label is False and it.rec.success  # negatives are made from successful runs only
            if it.keep_frames is not None:
                seen.add("truncation")
            elif it.instruction == "click the z button":
                seen.add("adversarial")
                assert it.error_frame == 1
            else:
                seen.add("swap")
                assert it.error_frame == 0
                assert it.instruction != it.rec.instruction
                # another task's instruction
                assert it.instruction in src.instructions["t2" if it.rec.meta["task"] == "t1" else "t1"]
    assert seen == {"truncation", "adversarial", "swap"}
    assert epoch_items(recs, src, share=0.0, rng=rng) == [Item(r) for r in recs]


def test_token_budget_batches_keep_long_runs_apart():
    class R:
        def __init__(self, n):
            self.positions = np.zeros((n, 3))

    recs = [R(50) for _ in range(30)] + [R(1000), R(1100)]
    out = batches(recs, batch_size=16, rng=np.random.default_rng(0), max_tokens=2048)
    assert sorted(len(r.positions) for b in out for r in b) == sorted(len(r.positions) for r in recs)
    for b in out:
        assert len(b) <= 16
        assert len(b) == 1 or len(b) * max(len(r.positions) for r in b) <= 2048


def test_mil_head_exports_ignores_padding_and_uses_token_evidence(tmp_path):
    cfg = ModelConfig.tiny(mil_head=True, stem="conv", char_ngrams=16)
    net = RewardNet(cfg)
    assert export(net, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4
    net.eval()
    names = input_names(cfg)
    b = sample_batch(cfg, batch=1, frames=2, tokens_per_frame=3, text=4)
    padded = {k: np.concatenate([v, np.zeros((1, 4) + v.shape[2:], v.dtype)], axis=1)
              if k in ("tokens", "positions", "token_mask") else v for k, v in b.items()}
    with torch.no_grad():
        a = net(*[torch.from_numpy(b[k]) for k in names])[0]
        c = net(*[torch.from_numpy(padded[k]) for k in names])[0]
        net.token_head.bias.add_(torch.tensor([3.0, 0.0]))
        d = net(*[torch.from_numpy(b[k]) for k in names])[0]
    assert torch.allclose(a, c, atol=1e-5)
    # a uniform +3 on every token's "for" score raises its soft maximum, hence the success logit, by exactly 3
    assert torch.allclose(d - a, torch.full_like(a, 3.0), atol=1e-4)


def test_drawn_instruction_patches():
    from models.render import instruction_patches

    a, pos = instruction_patches('Click on the "okay" button.')
    assert a.dtype == np.uint8 and a.shape[1] == 768 and len(a) == len(pos) > 5
    assert (a.min(axis=1) < 200).all()  # only patches with ink
    b, _ = instruction_patches('Click on the "next" button.')
    assert a.shape != b.shape or not np.array_equal(a, b)
    again, pos2 = instruction_patches('Click on the "okay" button.')
    assert np.array_equal(a, again) and np.array_equal(pos, pos2)
    long, lpos = instruction_patches(" ".join(["word"] * 200))  # wraps, and stops at the kept rows
    assert lpos[:, 0].max() < 6 and lpos[:, 1].max() < 20
    empty, epos = instruction_patches("")
    assert len(empty) == 1  # an empty instruction still gives one token


def test_drawn_instruction_reaches_the_network_and_exports(syn_traj_dir, tmp_path):
    traj = native.load(syn_traj_dir)
    cfg = ModelConfig.tiny(text_pixels=True, max_grid=32, char_ngrams=16, mil_head=True)
    tok = Tokenizer.build([traj.instruction], min_count=1, ngram_buckets=16, max_len=16)
    ex = featurize(traj, cfg, tok)
    assert ex.text_pixels is not None and len(ex.text_pixels) == len(ex.text_pixel_pos)
    batch = make_batch([ex])
    assert batch["text_pixels"].shape == (1, len(ex.text_pixels), 768) and batch["text_pixel_mask"].all()
    net = RewardNet(cfg)
    assert export(net, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4
    net.eval()
    names = input_names(cfg)
    with torch.no_grad():
        a = net(**{k: torch.from_numpy(batch[k]) for k in names})[0]
        other = dict(batch, text_pixels=np.zeros_like(batch["text_pixels"]))
        b = net(**{k: torch.from_numpy(other[k]) for k in names})[0]
    assert not torch.allclose(a, b)  # the drawn words change the verdict's input
    assert not net.training  # exporting left the network in eval mode
