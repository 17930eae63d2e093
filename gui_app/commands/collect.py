"""``rollscope collect miniwob``: record real MiniWoB++ episodes in headless Chromium as native trajectories."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", choices=["miniwob"], help="where to record from (MiniWoB++ in headless Chromium)")
    p.add_argument("--tasks", default="train",
                   help="comma-separated MiniWoB task names, or 'train' (the training task types, default), "
                        "'heldout' (the 11 held-out types, for evaluation), or 'all'")
    p.add_argument("--episodes", type=int, default=10, help="episodes per task (default 10)")
    p.add_argument("--out", required=True, help="output folder (one sub-folder per task and episode)")
    p.add_argument("--seed", type=int, default=0, help="base seed: episode i of a task gets seed S*1e6+i")
    p.add_argument("--fail-rate", type=float, default=0.3,
                   help="probability that the scripted agent makes a mistake in an episode (default 0.3)")
    p.add_argument("--agent", default="A", choices=["A", "B", "mix"],
                   help="A: scripted-v1, B: scripted-v2 (other habits, WAIT/DONE steps, recoveries), "
                        "mix: either, drawn per episode (default A)")
    p.add_argument("--styles", default="plain", choices=["plain", "A", "B", "all"],
                   help="recording style families, drawn per episode: plain (the first recorder's look), A, B "
                        "(disjoint pointer themes, scales, fonts, colours, frames) or all (default plain)")
    p.add_argument("--layout", default="native", choices=["native", "osworld", "both"],
                   help="native trajectory folders, OSWorld result folders under OUT/osworld/, or both")
    p.add_argument("--scale", type=int, default=2, help="device scale of the plain style: 2 records 320x420 frames")
    p.add_argument("--workers", type=int, default=1, help="parallel browsers (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def task_list(spec: str) -> list[str]:
    """``train`` / ``heldout`` / ``all`` or a comma-separated list."""
    from gui_app.recorders import registry

    named = {"train": list(registry.TRAIN_TASKS), "heldout": list(registry.HELDOUT_TASKS),
             "all": list(registry.ALL_TASKS)}
    if spec in named:
        return named[spec]
    return [t.strip() for t in spec.split(",") if t.strip()]


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.recorders.miniwob import CollectError, collect

    tasks = task_list(args.tasks)
    if not 0.0 <= args.fail_rate <= 1.0:
        raise CollectError(f"--fail-rate must be in [0, 1], got {args.fail_rate}")
    if args.episodes < 1 or args.workers < 1 or args.scale < 1:
        raise CollectError("--episodes, --workers and --scale must be >= 1")
    pbar = bar(args.episodes * len(tasks), desc="collect", json_mode=args.json)
    counts = {"ok": 0, "fail": 0, "err": 0}

    def on_progress(r) -> None:  # noqa: ANN001
        counts["err" if r.error else ("ok" if r.success else "fail")] += 1
        pbar.set_postfix(counts, refresh=False)
        pbar.update(1)

    try:
        report = collect(tasks, args.episodes, args.out, seed=args.seed, fail_rate=args.fail_rate,
                         scale=args.scale, workers=args.workers, on_progress=on_progress, agent=args.agent,
                         styles=args.styles, layout=args.layout)
    finally:
        pbar.close()
    info = report.to_dict()
    if args.json:
        print(json.dumps(info))
        return 0
    print(f"recorded {report.recorded}, skipped {report.skipped} (already there), errors {len(report.errors)} "
          f"in {report.seconds:.0f} s ({report.episodes_per_minute:.1f} episodes/min) -> {args.out}")
    print(f"{'task':<28}{'success':>8}{'failure':>8}{'mistake':>8}{'clean-fail':>11}{'error':>6}")
    for task, c in sorted(report.by_task.items()):
        print(f"{task:<28}{c['success']:>8}{c['failure']:>8}{c['mistakes']:>8}{c['clean_failure']:>11}"
              f"{c['error']:>6}")
    for e in report.errors[:5]:
        print(f"  error: {e['task']} seed {e['seed']} (agent {e['agent']}): {e['error']}", file=sys.stderr)
    return 0
