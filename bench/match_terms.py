"""Word-match terms and sizes: what each costs and what it is worth to a trained model, with no retraining.

    python bench/match_terms.py [--quick] [--json] [--data DS] [--model DIR] [--split SPLIT]

Scores every run of a split (default: validation) with the model (default: the shipped weights) while the
term list and the type sizes of :mod:`models.grounding` are changed at run time, and prints per variant the
accuracy at the model's threshold, the verdicts that differ from the first variant and the mean match time
per run. Variants: ``trained`` (function-word stop list, sizes 20/26/28: what the shipped model was trained
on), ``no_verbs`` (action verbs dropped too), ``no_28`` (sizes 20/26), ``no_verbs_no_28`` (what the runtime
uses), ``no_ui_nouns`` (generic UI nouns dropped as well). Keyframes are decoded and pruned once per run.
Needs recordings (``rollscope collect miniwob`` + ``rollscope dataset build``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

import numpy as np  # noqa: E402

_FUNCTION_WORDS = """a an and are as at be by for from in into is it its of on or that the then this to with
your you all any both each""".split()
_VERBS = "click clicking enter select type navigate through find focus press choose".split()
_UI_NOUNS = "button text field fields box list link widget item icon dialog textbox file".split()
VARIANTS = {
    "trained": (_FUNCTION_WORDS, (20, 26, 28)),
    "no_verbs": (_FUNCTION_WORDS + _VERBS, (20, 26, 28)),
    "no_28": (_FUNCTION_WORDS, (20, 26)),
    "no_verbs_no_28": (_FUNCTION_WORDS + _VERBS, (20, 26)),
    "no_ui_nouns": (_FUNCTION_WORDS + _VERBS + _UI_NOUNS, (20, 26)),
}


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--data", default=str(_common.REPO / "data" / "ds"), help="dataset folder (manifest.parquet)")
    p.add_argument("--model", default=None, help="weights folder (default: shipped weights)")
    p.add_argument("--split", default="val", help="split to score (default: val)")
    args = p.parse_args()

    import polars as pl

    from gui_app.core import native
    from models import grounding
    from models.data import read_manifest
    from models.features import featurize_frames, make_example, model_keyframes
    from models.runtime import WEIGHTS_DIR, RewardModel

    model = RewardModel.load(Path(args.model) if args.model else WEIGHTS_DIR)
    if not model.cfg.word_match:
        sys.exit(f"{args.model or WEIGHTS_DIR}: the model does not use word matching")
    df = read_manifest(args.data).filter(pl.col("split") == args.split)
    if args.quick:
        df = df.head(40)
    runs = []
    for row in df.iter_rows(named=True):
        traj = native.load(row["path"])
        frames, steps = model_keyframes(traj, model.cfg)
        runs.append((featurize_frames(frames, model.cfg, True), row["instruction"] or "", steps, traj.n_steps,
                     bool(row["success"])))
    _common.log(f"{len(runs)} runs of {args.split} decoded and pruned")
    fig = _common.Figures(args.json)
    stop0, defaults0 = grounding._STOP, grounding.match_maps.__defaults__
    first = None
    try:
        for name, (stop, sizes) in VARIANTS.items():
            grounding._STOP = frozenset(stop)
            grounding.match_maps.__defaults__ = (None, sizes) + defaults0[2:]  # (masks, sizes, threads)
            pred, truth, match_s = [], [], 0.0
            for res, text, steps, n_steps, success in runs:
                t0 = time.perf_counter()
                ex = make_example(res, text, steps, model.tokenizer, model.cfg)
                match_s += time.perf_counter() - t0
                pred.append(model.score_example(ex, n_steps).success)
                truth.append(success)
            pred_a, truth_a = np.array(pred), np.array(truth)
            first = pred_a if first is None else first
            fig.add(f"{name}_accuracy", 100 * float((pred_a == truth_a).mean()), "%")
            fig.add(f"{name}_verdicts_changed", int((pred_a != first).sum()))
            fig.add(f"{name}_match_ms_per_run", 1000 * match_s / max(1, len(runs)), "ms")
    finally:
        grounding._STOP, grounding.match_maps.__defaults__ = stop0, defaults0
    fig.add("runs", len(runs))
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
