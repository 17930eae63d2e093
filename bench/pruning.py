"""Token pruning speed: milliseconds per frame (resize + patchify + prune) at 320x420 and 1280x720.

    python bench/pruning.py [--quick] [--json] [--model DIR]

Frames are GUI-like (flat panels, glyph text, a button that moves), 16 keyframes per sequence, as one
trajectory's step-end keyframes would be, pruned with the shipped model's settings (working size, thresholds).
Prints ``name: value unit`` lines, or one JSON object with --json.
"""

from __future__ import annotations

import sys
import time

import _common  # noqa: I001 -- first: puts the repository on sys.path
import numpy as np

from models import synthetic  # noqa: E402
from models.config import ModelConfig  # noqa: E402
from models.features import featurize_frames  # noqa: E402


def model_config(weights: str | None) -> ModelConfig:
    """The shipped model's pruning settings (``model.json``), or the defaults when there is none."""
    import json
    from pathlib import Path

    from models.runtime import WEIGHTS_DIR

    meta = Path(weights) / "model.json" if weights else WEIGHTS_DIR / "model.json"
    return ModelConfig.from_dict(json.loads(meta.read_text())["config"]) if meta.is_file() else ModelConfig()


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="weights folder whose pruning settings to time (default: shipped)")
    args = p.parse_args()
    cfg = model_config(args.model)
    reps = 3 if args.quick else 15
    fig = _common.Figures(args.json)
    for h, w in ((420, 320), (720, 1280)):
        frames = synthetic.episode_frames(15, seed=0, height=h, width=w)  # 16 frames
        featurize_frames(frames, cfg, prune=True)  # warm-up
        times, kept = [], 0.0
        for _ in range(reps):
            t0 = time.perf_counter()
            res = featurize_frames(frames, cfg, prune=True)
            times.append(time.perf_counter() - t0)
            kept = res.tokens_kept / res.tokens_total
        t0 = time.perf_counter()
        for _ in range(reps):
            featurize_frames(frames, cfg, prune=False)
        base = (time.perf_counter() - t0) / reps
        ms = float(np.median(times)) * 1000 / len(frames)
        name = f"{w}x{h}"
        fig.add(f"prune_ms_per_frame_{name}", ms, "ms")
        fig.add(f"resize_patchify_only_ms_per_frame_{name}", base * 1000 / len(frames), "ms")
        fig.add(f"tokens_kept_ratio_{name}", kept)
    fig.add("working_size", cfg.working_size, "px")
    fig.add("max_component", cfg.max_component, "patches")
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
