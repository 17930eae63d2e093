"""Statistics probe: how far do a few run statistics go, with no network at all?

    python bench/stats_probe.py [--quick] [--json] [--data DS]

Logistic regression (train split -> validation split) on the task type (one-hot) and eight statistics of each
pruned run, the ones the shipped model's statistics head computes in its graph: log number of keyframes, log
tokens in the last keyframe, log tokens in all, best quoted-term and word match scores overall and in the last
keyframe, share of tokens with a quoted match above 0.8. Prints validation accuracy for the task alone, task +
lengths, task + match scores, all of them, and all with per-task weights (task x statistic interactions); and
the statistics alone (one set of weights for every task) on validation and on the held-out task types.
Features come from the training cache of the shipped config without its pointer channel (``rollscope train``
builds it; built here if missing, a few minutes). Needs recordings (``rollscope collect miniwob`` +
``rollscope dataset build``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

import numpy as np  # noqa: E402


def statistics(rec) -> list[float]:
    """The run statistics of one record (eight; thirteen with a pointer channel): :func:`models.train.record_stats`."""
    from models.train import record_stats

    return record_stats(rec).tolist()


def fit_accuracy(xt: np.ndarray, yt: np.ndarray, xv: np.ndarray, yv: np.ndarray, l2: float = 1e-3) -> float:
    """Validation accuracy (threshold 0.5) of an L2-regularised logistic regression fitted with L-BFGS."""
    import torch

    a, b = torch.tensor(xt, dtype=torch.float32), torch.tensor(yt, dtype=torch.float32)
    w = torch.zeros(a.shape[1], requires_grad=True)
    c = torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([w, c], max_iter=300)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(a @ w + c, b) + l2 * (w ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    p = torch.sigmoid(torch.tensor(xv, dtype=torch.float32) @ w + c).detach().numpy()
    return float(((p > 0.5) == (yv > 0.5)).mean())


def fit_mlp_accuracy(xt: np.ndarray, yt: np.ndarray, xv: np.ndarray, yv: np.ndarray, hidden: int = 64,
                     epochs: int = 1000, seed: int = 0) -> float:
    """Validation accuracy (threshold 0.5) of a one-hidden-layer MLP (GELU, dropout 0.2) fitted full batch as
    the shipped verdict is (:func:`models.train.fit_full_batch`) for a fixed number of steps: no early stopping
    on the evaluated set."""
    import torch

    from models.train import fit_full_batch

    net = torch.nn.Sequential(torch.nn.Linear(xt.shape[1], hidden), torch.nn.GELU(), torch.nn.Dropout(0.2),
                              torch.nn.Linear(hidden, 1))
    fit_full_batch(net, torch.tensor(xt, dtype=torch.float32), torch.tensor(yt, dtype=torch.float32), epochs, seed)
    with torch.no_grad():
        p = torch.sigmoid(net(torch.tensor(xv, dtype=torch.float32))[:, 0]).numpy()
    return float(((p > 0.5) == (yv > 0.5)).mean())


def prepare(fig, data: str, quick: bool, pointer: bool = False,
            splits: tuple[str, ...] = ("train", "val", "heldout_task")):
    """``(cfg, parts, cache)`` for a probe: the shipped config (word matching on, the pointer channel as asked),
    the manifest parts of ``splits`` (train and held-out sampled under ``quick``) and the cache
    folder, with features and match maps built where missing; None (and a ``skipped`` figure) without data."""
    import json

    from models.config import ModelConfig
    from models.data import build_cache, build_match_cache, read_manifest
    from models.runtime import WEIGHTS_DIR

    if not (Path(data) / "manifest.parquet").is_file():
        fig.add("skipped_no_recordings", str(Path(data) / "manifest.parquet"))
        return None
    cfg = ModelConfig.from_dict(json.loads((WEIGHTS_DIR / "model.json").read_text())["config"])
    cfg.word_match, cfg.cursor_match = True, pointer
    df = read_manifest(data)
    parts = {s: df.filter(df["split"] == s) for s in splits}
    if quick:
        parts["train"] = parts["train"].sample(n=min(800, len(parts["train"])), seed=0)
        parts["heldout_task"] = parts["heldout_task"].sample(n=min(300, len(parts["heldout_task"])), seed=0)
    cache = Path(data) / "cache"
    for name, part in parts.items():
        _common.log(f"features: {name} ({len(part)} runs)")
        build_cache(part, cfg, cache)
        build_match_cache(part, cfg, cache, workers=2)
    return cfg, parts, cache


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--data", default=str(_common.REPO / "data" / "ds"), help="dataset folder (manifest.parquet)")
    args = p.parse_args()
    fig = _common.Figures(args.json)
    from models.data import load_records

    ready = prepare(fig, args.data, args.quick)
    if ready is None:
        fig.emit()
        return 0
    cfg, parts, cache = ready
    recs = {s: load_records(part, cfg, cache) for s, part in parts.items()}
    tasks = sorted({str(r.meta.get("task")) for r in recs["train"]})

    def design(rs):
        stats = np.array([statistics(r) for r in rs])
        onehot = np.array([[float(r.meta.get("task") == t) for t in tasks] for r in rs])
        return stats, onehot, np.array([float(r.success) for r in rs])

    st, ot, yt = design(recs["train"])
    sv, ov, yv = design(recs["val"])
    sh, _, yh = design(recs["heldout_task"])  # task types never trained on: their one-hot would be all zeros
    mu, sd = st.mean(0), st.std(0) + 1e-6
    st, sv, sh = (st - mu) / sd, (sv - mu) / sd, (sh - mu) / sd
    lengths, match = [0, 1, 2], [3, 4, 5, 6, 7]
    fig.add("runs_train", len(yt))
    fig.add("runs_val", len(yv))
    fig.add("val_majority", float(max(yv.mean(), 1 - yv.mean())))
    fig.add("val_acc_task_only", fit_accuracy(ot, yt, ov, yv))
    fig.add("val_acc_task_lengths", fit_accuracy(np.hstack([ot, st[:, lengths]]), yt, np.hstack([ov, sv[:, lengths]]), yv))
    fig.add("val_acc_task_match", fit_accuracy(np.hstack([ot, st[:, match]]), yt, np.hstack([ov, sv[:, match]]), yv))
    fig.add("val_acc_task_all_stats", fit_accuracy(np.hstack([ot, st]), yt, np.hstack([ov, sv]), yv))
    inter_t = np.hstack([ot, st] + [st * ot[:, [k]] for k in range(len(tasks))])
    inter_v = np.hstack([ov, sv] + [sv * ov[:, [k]] for k in range(len(tasks))])
    fig.add("val_acc_per_task_weights", fit_accuracy(inter_t, yt, inter_v, yv))
    # What carries over to task types never seen: the statistics with one set of weights for every task.
    fig.add("val_acc_stats_only", fit_accuracy(st, yt, sv, yv))
    fig.add("heldout_runs", len(yh))
    fig.add("heldout_majority", float(max(yh.mean(), 1 - yh.mean())))
    fig.add("heldout_acc_stats_only", fit_accuracy(st, yt, sh, yh))
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
