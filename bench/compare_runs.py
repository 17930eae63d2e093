"""Compare trained runs on the cached features: accuracy and recall per split, accuracy per negative kind.

    python bench/compare_runs.py [RUN_OR_WEIGHTS...] [--json] [--data DS]

Each argument is a training run (``checkpoint.pt``) or a weights folder (``model.json`` + ``model.pt``). The
runs are scored with torch on the dataset's feature cache (built by ``rollscope train``; the match maps of the
test and held-out splits are built here when missing), at each run's own stored threshold, so seeds and
recipes can be compared in a minute instead of a full ``rollscope eval`` each (which also times decoding and
pruning). On the shipped weights it gives the same accuracy and recall as ``rollscope eval``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

import numpy as np  # noqa: E402

SPLITS = ("val", "test", "heldout_task")


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", default=[str(_common.REPO / "models" / "weights")],
                   help="run folders or weights folders (default: the shipped weights)")
    p.add_argument("--data", default=str(_common.REPO / "data" / "ds"), help="dataset folder (manifest.parquet)")
    args = p.parse_args()
    fig = _common.Figures(args.json)
    if not (Path(args.data) / "manifest.parquet").is_file():
        fig.add("skipped", f"no dataset at {args.data} (see the README's reproduce commands)")
        fig.emit()
        return 0

    from models.data import build_match_cache, load_records, read_manifest
    from models.runtime import RewardModel
    from models.train import basic_metrics, predict

    df = read_manifest(args.data)
    cache = str(Path(args.data) / "cache")
    records: dict[tuple, list] = {}
    for run in args.runs:
        model = RewardModel.load(run, backend="torch", threads=2)  # a run folder or a weights folder
        cfg, tok, thr, net = model.cfg, model.tokenizer, model.threshold, model.backend.net
        feats = (cfg.working_size, cfg.max_component, cfg.hide_instruction_box, cfg.word_match, cfg.cursor_match)
        for split in SPLITS:
            key = (feats, split)
            if key not in records:
                part = df.filter(df["split"] == split)
                if cfg.word_match:
                    build_match_cache(part, cfg, cache, workers=2)
                records[key] = load_records(part, cfg, cache)
            recs = records[key]
            y = np.array([r.success for r in recs], dtype=float)
            prob, _ = predict(net, recs, tok, cfg)
            m = basic_metrics(prob, y, thr)
            name = Path(run).name
            fig.add(f"{name}_{split}_accuracy", round(m["accuracy"], 4))
            fig.add(f"{name}_{split}_recall", round(m["recall"], 4))
            if split != "val":
                kinds: dict[str, list] = {}
                for r, pr in zip(recs, prob):
                    kinds.setdefault(r.meta.get("negative_kind") or "none", []).append(
                        (pr >= thr) == r.success)
                for k, v in sorted(kinds.items()):
                    fig.add(f"{name}_{split}_accuracy_{k}", round(float(np.mean(v)), 4))
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
