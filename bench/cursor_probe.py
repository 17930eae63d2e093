"""Pointer probe: is the instruction's named word where the pointer is, and does that tell success apart?

    python bench/cursor_probe.py [--quick] [--json] [--data DS]

A screen recording shows the pointer. Where it rests at the end of a step is where the agent acted, so "the
quoted term is written under the pointer" is a direct reading of "the agent clicked what it was told to"; the
word-match maps alone only say the term is somewhere on screen. This probe computes the features of the shipped
config with ``cursor_match`` on (the pointer found on every keyframe by :func:`models.grounding.find_cursor`,
its patch kept and marked), takes the run statistics of the network's own statistics head (eight without the
pointer, thirteen with it) and fits the same logistic regressions as ``bench/stats_probe.py`` on both: per-task
weights on the validation split, and the statistics alone (one set of weights for every task) on validation and
on the held-out task types, and a small MLP on the statistics alone (what ``stats_mlp`` adds to the network;
fitted full batch as ``rollscope train --stats-fit`` does, with three seeds on validation, test and held-out).
Also checks the coarse-to-fine pointer search against the full one. Needs
recordings and the training cache of the shipped config (built here if missing, plus the pointer match maps).
"""

from __future__ import annotations

import sys
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

import numpy as np  # noqa: E402
from stats_probe import fit_accuracy, fit_mlp_accuracy, prepare, statistics  # noqa: E402


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--data", default=str(_common.REPO / "data" / "ds"), help="dataset folder (manifest.parquet)")
    args = p.parse_args()
    fig = _common.Figures(args.json)
    from models.data import load_records

    ready = prepare(fig, args.data, args.quick, pointer=True, splits=("train", "val", "test", "heldout_task"))
    if ready is None:
        fig.emit()
        return 0
    cfg, parts, cache = ready

    # The coarse-to-fine pointer search against the full one, on the validation keyframes: answers and time.
    import time

    import cv2

    from models.data import cache_file
    from models.grounding import find_cursor
    from models.pruning import unpatchify

    frames = agree = 0
    t_fast = t_full = 0.0
    for rid in parts["val"]["id"].to_list():
        f = cache_file(cache, cfg, rid)
        if not f.is_file():
            continue
        with np.load(f) as z:
            pt = z["patches"]
        img = unpatchify(pt, cfg.patch)
        for k in range(len(img)):
            g = cv2.cvtColor(np.ascontiguousarray(img[k]), cv2.COLOR_RGB2GRAY)
            t0 = time.perf_counter()
            a = find_cursor(g)
            t1 = time.perf_counter()
            b = find_cursor(g, exact=True)
            t_fast, t_full = t_fast + t1 - t0, t_full + time.perf_counter() - t1
            frames, agree = frames + 1, agree + (a == b)
    fig.add("pointer_search_frames_val", frames)
    fig.add("pointer_search_same_as_full", agree)
    fig.add("pointer_search_ms_per_frame", 1000 * t_fast / max(1, frames), "ms")
    fig.add("pointer_search_full_ms_per_frame", 1000 * t_full / max(1, frames), "ms")

    def design(part):
        recs = load_records(part, cfg, cache)
        stats = np.array([statistics(r) for r in recs])
        return (stats, np.array([float(r.success) for r in recs]), [str(r.meta.get("negative_kind")) for r in recs],
                [str(r.meta.get("task")) for r in recs])

    st, yt, _, tt = design(parts["train"])
    sv, yv, _, tv = design(parts["val"])
    sh, yh, _, _ = design(parts["heldout_task"])
    ss, ys, _, _ = design(parts["test"])
    tasks = sorted(set(tt))
    fig.add("pointer_seen_last_keyframe_val", float(sv[:, 12].mean()))
    mu, sd = st.mean(0), st.std(0) + 1e-6
    st, sv, sh, ss = (st - mu) / sd, (sv - mu) / sd, (sh - mu) / sd, (ss - mu) / sd
    base = list(range(8))
    fig.add("runs_train", len(yt))
    fig.add("val_majority", float(max(yv.mean(), 1 - yv.mean())))
    fig.add("val_acc_stats_only", fit_accuracy(st[:, base], yt, sv[:, base], yv))
    fig.add("val_acc_stats_pointer", fit_accuracy(st, yt, sv, yv))
    def per_task(x, names):  # task one-hot, the statistics, and each statistic times each task's indicator
        onehot = np.array([[float(n == t) for t in tasks] for n in names])
        return np.hstack([onehot, x] + [x * onehot[:, [k]] for k in range(len(tasks))])

    fig.add("val_acc_per_task_weights", fit_accuracy(per_task(st[:, base], tt), yt, per_task(sv[:, base], tv), yv))
    fig.add("val_acc_per_task_weights_pointer", fit_accuracy(per_task(st, tt), yt, per_task(sv, tv), yv))
    fig.add("heldout_majority", float(max(yh.mean(), 1 - yh.mean())))
    fig.add("heldout_acc_stats_only", fit_accuracy(st[:, base], yt, sh[:, base], yh))
    fig.add("heldout_acc_stats_pointer", fit_accuracy(st, yt, sh, yh))
    # One nonlinear reading of the statistics for every task (no task input): what `stats_mlp` builds in.
    fig.add("val_acc_stats_pointer_mlp", fit_mlp_accuracy(st, yt, sv, yv))
    fig.add("heldout_acc_stats_pointer_mlp", fit_mlp_accuracy(st, yt, sh, yh))
    fig.add("heldout_acc_stats_only_mlp", fit_mlp_accuracy(st[:, base], yt, sh[:, base], yh))
    # The same MLP fit with other seeds, on every split: what `rollscope train --stats-fit` ships as the verdict.
    for seed in (0, 1, 2):
        for split, (x, y) in (("val", (sv, yv)), ("test", (ss, ys)), ("heldout", (sh, yh))):
            fig.add(f"{split}_acc_stats_pointer_mlp_seed{seed}", fit_mlp_accuracy(st, yt, x, y, seed=seed))
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
