"""The shipped verdict recipe on pruned and on unpruned tokens: the "<= 1 point accuracy loss" target.

    python bench/verdict_twin.py [--quick] [--json] [--data DS] [--steps N]

The shipped model's verdict is the run-statistics MLP, fitted full batch on the training split before the
transformer trains (``rollscope train --stats-fit``) and fixed afterwards, so the same recipe unpruned
(``--no-prune``) gives its verdict from the same fit on statistics of every token: the word-match and pointer
maps over whole keyframes instead of around kept patches, token counts of whole keyframes. This bench fits
both, seeds 0/1/2, with the threshold chosen on validation as training does, and reports accuracy on
validation, test (held-out seeds) and held-out task types, and the pruned-minus-unpruned difference. Seed 0 on
pruned tokens is the shipped fit (``pruned_seed0_same_as_shipped``). Builds the unpruned match maps where
missing (about 3 minutes for the whole dataset on 2 cores). Needs recordings (see the README).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

import numpy as np  # noqa: E402

SPLITS = ("train", "val", "test", "heldout_task")


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--data", default=str(_common.REPO / "data" / "ds"), help="dataset folder (manifest.parquet)")
    p.add_argument("--steps", type=int, default=None, help="full-batch steps (default 1000, the shipped --stats-fit)")
    args = p.parse_args()
    fig = _common.Figures(args.json)
    if not (Path(args.data) / "manifest.parquet").is_file():
        fig.add("skipped_no_recordings", str(Path(args.data) / "manifest.parquet"))
        fig.emit()
        return 0

    import torch

    from models.config import ModelConfig
    from models.data import build_cache, build_match_cache, load_records, read_manifest
    from models.network import RewardNet
    from models.runtime import WEIGHTS_DIR, RewardModel
    from models.train import choose_threshold, fit_stats_mlp, record_stats, set_stats_norm

    torch.set_num_threads(2)
    meta = json.loads((WEIGHTS_DIR / "model.json").read_text())
    cfg = ModelConfig.from_dict(meta["config"])
    if not cfg.stats_mlp:
        fig.add("skipped_shipped_model_has_no_stats_mlp", 1)
        fig.emit()
        return 0
    steps = args.steps or 1000  # the shipped recipe's --stats-fit
    fig.add("fit_steps", steps)
    df = read_manifest(args.data)
    parts = {s: df.filter(df["split"] == s) for s in SPLITS}
    if args.quick:
        parts = {s: part.sample(n=min(400 if s == "train" else 150, len(part)), seed=0) for s, part in parts.items()}
    cache = Path(args.data) / "cache"
    acc: dict[bool, dict[str, list[float]]] = {True: {}, False: {}}
    for prune in (True, False):
        name = "pruned" if prune else "unpruned"
        recs, t_stats = {}, 0.0
        for s, part in parts.items():
            _common.log(f"{name}: features and match maps, {s} ({len(part)} runs)")
            build_cache(part, cfg, cache)
            build_match_cache(part, cfg, cache, prune=prune, workers=2)
            recs[s] = load_records(part, cfg, cache, prune=prune)
        t0 = time.perf_counter()
        stats = {s: torch.stack([record_stats(r) for r in rs]) for s, rs in recs.items()}
        t_stats = time.perf_counter() - t0
        n_runs = sum(len(rs) for rs in recs.values())
        fig.add(f"{name}_tokens_per_run", float(np.mean([len(r.positions) for r in recs["test"]])))
        fig.add(f"{name}_statistics_ms_per_run", 1000 * t_stats / max(1, n_runs), "ms")
        y = {s: np.array([r.success for r in rs], dtype=float) for s, rs in recs.items()}
        for seed in (0, 1, 2):
            net = RewardNet(cfg).eval()
            set_stats_norm(net, recs["train"])
            fit_stats_mlp(net, recs["train"], steps, seed)
            with torch.no_grad():
                prob = {s: torch.sigmoid(net.stats_logit(x)).numpy() for s, x in stats.items()}
            thr = choose_threshold(prob["val"], y["val"])
            for s in ("val", "test", "heldout_task"):
                a = float(((prob[s] >= thr) == (y[s] > 0.5)).mean())
                acc[prune].setdefault(s, []).append(a)
                fig.add(f"{name}_seed{seed}_{s}_accuracy", a)
            if prune and seed == 0 and not args.quick:
                shipped = RewardModel.load(WEIGHTS_DIR, backend="torch").backend.net.stats_mlp.state_dict()
                same = all(torch.allclose(v.half().float(), shipped[k].float(), rtol=1e-3, atol=1e-4)
                           for k, v in net.stats_mlp.state_dict().items())  # the shipped file is float16
                fig.add("pruned_seed0_same_as_shipped", int(same))
    for s in ("val", "test", "heldout_task"):
        p_mean, u_mean = float(np.mean(acc[True][s])), float(np.mean(acc[False][s]))
        fig.add(f"pruned_mean_{s}_accuracy", p_mean)
        fig.add(f"unpruned_mean_{s}_accuracy", u_mean)
        fig.add(f"unpruned_minus_pruned_{s}", round(100 * (u_mean - p_mean), 2), "points")
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
