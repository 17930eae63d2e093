"""Reward model speed on 2 CPU threads: end to end (decode, perception, features, network) per trajectory.

    python bench/reward_model.py [--quick] [--json] [--model DIR]

Inputs are real recorded screens: a 16-step 320x420 run made of the bundled MiniWoB++ samples' step screenshots,
and a 16-step 1280x720 run made of the bundled desktop samples' screenshots (each step a different screen: the
worst case for pruning, which keeps what does not change), plus the bundled recorded runs as they are (consecutive
screens of one run: ``real_*``). Each run is scored pruned and unpruned, side by side, several times; the medians
are reported with the time per stage, the text crops read (``reads``), the tokens kept, and the size of
everything the model ships (network, pointer detector, reader). Default model: the shipped weights.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

from gui_app.core.trajectory.model import Outcome, Step, Trajectory  # noqa: E402
from models.runtime import WEIGHTS_DIR, RewardModel  # noqa: E402

SAMPLES = _common.REPO / "resources" / "samples"


def run_of(shots: list[Path], name: str, n: int = 16) -> Trajectory:
    """A trajectory whose ``n`` steps show the given screenshots in turn."""
    steps = [Step(index=i, action="click(x=10, y=10)", action_type="click", screenshot=str(shots[i % len(shots)]))
             for i in range(n)]
    return Trajectory(id=name, instruction='Enter "Bernardine" into the text field and press Submit.',
                      source_format="native", source_path=str(shots[0].parent), steps=steps,
                      outcome=Outcome(success=None))


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="weights folder (default: shipped weights)")
    p.add_argument("--run", action="append", default=[],
                   help="also time this run (any format Rollscope reads; repeatable), e.g. a long desktop recording; "
                        "a run without screenshots is judged from its video (its name ends in _video)")
    args = p.parse_args()
    reps = 3 if args.quick else 9
    model = RewardModel.load(Path(args.model) if args.model else WEIGHTS_DIR)
    fig = _common.Figures(args.json)
    from gui_app.core.trajectory.formats import load

    runs = {
        "320x420": run_of(sorted(SAMPLES.glob("miniwob/*/frames/step_*.png")), "miniwob16"),
        "1280x720": run_of(sorted(SAMPLES.glob("desktop/**/frames/step_*.png")), "desktop16"),
        "real_miniwob_email_inbox": load(SAMPLES / "miniwob" / "email-inbox-success"),
        "real_desktop_files_rename": load(SAMPLES / "desktop" / "files_rename" / "files_rename-s900100"),
    }
    for path in args.run:
        t = load(path)
        h = t.video.height if t.video else None
        shots = all(Path(s.screenshot or "").is_file() for s in t.steps)
        runs[f"run_{Path(path).name}_{t.n_steps}steps" + (f"_{h}p" if h else "") + ("" if shots else "_video")] = t
    for size, traj in runs.items():
        if not traj.steps or not (Path(traj.steps[0].screenshot or "").is_file()
                                  or (traj.video is not None and Path(traj.video.path).is_file())):
            continue
        for prune in (True, False):
            tag = f"{size}_{'pruned' if prune else 'unpruned'}"
            model.score(traj, prune=prune)  # warm up: first calls pay for allocations
            totals, stages, last = [], {}, None
            for _ in range(reps):
                model.perceiver.reader._cache.clear()  # every run reads its text afresh
                t0 = time.perf_counter()
                last = model.score(traj, prune=prune)
                totals.append(time.perf_counter() - t0)
                for k, v in last.timings.items():
                    stages.setdefault(k, []).append(v)
            fig.add(f"e2e_ms_{tag}", statistics.median(totals) * 1000, f"ms ({traj.n_steps} steps, median)")
            for k, v in sorted(stages.items()):
                fig.add(f"{k}_ms_{tag}", statistics.median(v) * 1000, "ms")
            if last is not None and last.text_reads is not None:
                fig.add(f"reads_{tag}", last.text_reads, f"text crops read ({traj.n_steps} steps)")
            if last is not None and last.tokens_total:
                fig.add(f"tokens_kept_{tag}", last.tokens_kept / last.tokens_total * 100, "%")
    wdir = Path(args.model) if args.model else WEIGHTS_DIR
    sizes = {n: (wdir / n).stat().st_size for n in ("model.onnx", "pointer.onnx", "trees.onnx", "harm.onnx")
             if (wdir / n).is_file()}
    sizes["reader"] = Path(model.perceiver.reader.path).stat().st_size
    for n, b in sizes.items():
        fig.add(f"size_{n}", b / 1e6, "MB")
    fig.add("size_total", sum(sizes.values()) / 1e6, "MB (target 50)")
    fig.add("peak_rss", _common.peak_rss_mb(), "MB")
    fig.emit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
