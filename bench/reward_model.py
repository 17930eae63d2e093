"""Reward model speed: end-to-end and forward time per trajectory, pruned vs unpruned, on 2 CPU threads.

    python bench/reward_model.py [--quick] [--json] [--model DIR] [--traj PATH]

Default input: a 16-step 320x420 trajectory with a real 1 fps H.264 video (GUI-like synthetic screens), or
``--traj`` for a recorded one. Default model: the shipped weights (``models/weights``); without them, a randomly
initialised model of the default config exported to a temp folder (time does not depend on weight values).
Prints ``name: value unit`` lines, or one JSON object with --json.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

from gui_app.core import formats  # noqa: E402
from models import synthetic  # noqa: E402
from models.features import example_from_result, featurize_frames, model_keyframes, with_word_match  # noqa: E402
from models.runtime import WEIGHTS_DIR, RewardModel  # noqa: E402


def random_weights(out: Path) -> Path:
    import torch

    from models.config import FEATURE_VERSION, ModelConfig
    from models.export_onnx import export_run
    from models.network import RewardNet
    from models.tokenizer import Tokenizer

    tok = Tokenizer.build(["click the button"], min_count=1)
    cfg = ModelConfig(vocab_size=tok.vocab_size)
    torch.save({"state_dict": RewardNet(cfg).state_dict(), "config": cfg.to_dict(), "feature_version": FEATURE_VERSION,
                "tokenizer": tok.to_dict(), "threshold": 0.5}, out / "checkpoint.pt")
    export_run(out, out / "export")
    return out / "export"


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="weights folder (default: shipped weights)")
    p.add_argument("--traj", default=None, help="trajectory to time (default: a synthetic 16-step 320x420 one)")
    args = p.parse_args()
    reps = 5 if args.quick else 20
    tmp = Path(tempfile.mkdtemp(prefix="rollscope-bench-"))
    model_dir = Path(args.model) if args.model else WEIGHTS_DIR
    if not (model_dir / "model.onnx").is_file():
        model_dir = random_weights(tmp)
    model = RewardModel.load(model_dir)
    path = args.traj or str(synthetic.write_native(tmp / "traj16", n_steps=16, seed=0))
    traj = formats.load(path)
    fig = _common.Figures(args.json)
    add = fig.add

    for prune in (True, False):
        tag = "pruned" if prune else "unpruned"
        model.score(formats.load(path), prune=prune)  # warm-up
        e2e, fwd, cpu = [], [], []
        for _ in range(reps):
            t = formats.load(path)
            c0 = time.process_time()
            r = model.score(t, prune=prune)
            cpu.append(time.process_time() - c0)
            e2e.append(r.seconds)
            fwd.append(r.timings["forward"])
        add(f"e2e_ms_{tag}", statistics.median(e2e) * 1000, "ms")
        # CPU time of the same calls (all threads): on a machine shared with other jobs, wall time includes
        # waiting for a core; CPU time is what the work itself costs.
        add(f"e2e_cpu_ms_{tag}", statistics.median(cpu) * 1000, "ms")
        add(f"forward_ms_{tag}", statistics.median(fwd) * 1000, "ms")
        add(f"tokens_{tag}", r.tokens_kept, "tokens")
    # Decode once, then split the pruned run into its stages (median of reps).
    frames, steps = model_keyframes(traj, model.cfg)
    t0 = time.perf_counter()
    for _ in range(reps):
        model_keyframes(formats.load(path), model.cfg)
    add("decode_ms", (time.perf_counter() - t0) / reps * 1000, "ms")
    t0 = time.perf_counter()
    for _ in range(reps):
        example_from_result(featurize_frames(frames, model.cfg, True), [1], steps)
    add("prune_ms", (time.perf_counter() - t0) / reps * 1000, "ms")
    if model.cfg.word_match:  # the word-match maps of the kept tokens (models/grounding.py)
        res = featurize_frames(frames, model.cfg, True)
        t0 = time.perf_counter()
        for _ in range(reps):
            with_word_match(example_from_result(res, [1], steps), res.patches, res.masks, traj.instruction or "",
                            model.cfg)
        add("match_ms", (time.perf_counter() - t0) / reps * 1000, "ms")
    add("keyframes", len(frames))
    add("tokens_total", r.tokens_total, "tokens")
    v = {k: f["value"] for k, f in fig.values.items()}
    add("tokens_kept_ratio", v["tokens_pruned"] / r.tokens_total)
    add("forward_speedup_pruned_vs_unpruned", v["forward_ms_unpruned"] / max(1e-9, v["forward_ms_pruned"]), "x")
    add("load_average_1min", os.getloadavg()[0])
    add("onnx_mb", (model_dir / "model.onnx").stat().st_size / 1e6, "MB")
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
