"""``rollscope collect miniwob|desktop``: record real episodes with scripted agents.

``miniwob``: MiniWoB++ tasks in headless Chromium, as native trajectories (and/or OSWorld result folders).
``desktop``: real Debian desktop applications under Xvfb (LibreOffice, Mousepad, PCManFM, galculator, Chromium),
as native trajectories and OSWorld result folders; ``--tasks threats`` records the threat scenarios (a benign task
with a threat in the environment, a harm checker beside the task's), ``--profile b`` another desktop agent.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", choices=["miniwob", "desktop"],
                   help="where to record from: MiniWoB++ in headless Chromium, or real desktop apps under Xvfb")
    p.add_argument("--tasks", default=None,
                   help="comma-separated task names; miniwob: or 'train' (the training task types, default), "
                        "'heldout' (the 11 held-out types, for evaluation) or 'all'; desktop: or 'all' (the benign "
                        "tasks, default) or 'threats' (the threat scenarios)")
    p.add_argument("--episodes", type=int, default=10, help="episodes per task (default 10)")
    p.add_argument("--out", required=True, help="output folder (one sub-folder per task and episode)")
    p.add_argument("--seed", type=int, default=0, help="base seed: episode i of a task gets seed S*1e6+i")
    p.add_argument("--fail-rate", type=float, default=0.3,
                   help="probability that the scripted agent makes a mistake in an episode (default 0.3)")
    p.add_argument("--agent", default="A", choices=["A", "B", "mix"],
                   help="miniwob: A: scripted-v1, B: scripted-v2 (other habits, WAIT/DONE steps, recoveries), "
                        "mix: either, drawn per episode (default A)")
    p.add_argument("--styles", default="plain", choices=["plain", "A", "B", "all"],
                   help="miniwob: recording style families, drawn per episode: plain (the first recorder's look), "
                        "A, B (disjoint pointer themes, scales, fonts, colours, frames) or all (default plain)")
    p.add_argument("--layout", default=None, choices=["native", "osworld", "both"],
                   help="native trajectory folders, OSWorld result folders under OUT/osworld/, or both "
                        "(default: native for miniwob, both for desktop)")
    p.add_argument("--scale", type=int, default=2,
                   help="miniwob: device scale of the plain style, 2 records 320x420 frames")
    p.add_argument("--workers", type=int, default=1, help="parallel browsers / X displays (default 1)")
    p.add_argument("--size", default="1280x720", help="desktop: screen size WxH (default 1280x720)")
    p.add_argument("--fps", type=int, default=5, help="desktop: frames per second of recording.mp4 (default 5)")
    p.add_argument("--think", default="0.4,2.0",
                   help="desktop: min,max seconds the agent pauses before each action (default 0.4,2.0)")
    p.add_argument("--profile", default="a", choices=["a", "b"],
                   help="desktop: the agent profile: a (the first agent) or b (keyboard shortcuts, hovers, extra "
                        "looks and waits, other typing bursts) (default a)")
    p.add_argument("--harm-rate", type=float, default=0.5,
                   help="desktop threat scenarios: probability that the agent falls for the threat (default 0.5)")
    p.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def task_list(spec: str) -> list[str]:
    """MiniWoB tasks: ``train`` / ``heldout`` / ``all`` or a comma-separated list."""
    from gui_app.recorders import registry

    named = {"train": list(registry.TRAIN_TASKS), "heldout": list(registry.HELDOUT_TASKS),
             "all": list(registry.ALL_TASKS)}
    if spec in named:
        return named[spec]
    return [t.strip() for t in spec.split(",") if t.strip()]


def _progress(total: int, desc: str, json_mode: bool):  # noqa: ANN202
    """A progress bar and the callback that counts finished episodes (ok / fail / err) on it."""
    from gui_app.commands.progress import bar

    pbar = bar(total, desc=desc, json_mode=json_mode)
    counts = {"ok": 0, "fail": 0, "err": 0}

    def on_progress(r) -> None:  # noqa: ANN001
        counts["err" if r.error else ("ok" if r.success else "fail")] += 1
        pbar.set_postfix(counts, refresh=False)
        pbar.update(1)

    return pbar, on_progress


def run(args: argparse.Namespace) -> int:
    if args.source == "desktop":
        return _run_desktop(args)
    from gui_app.recorders.miniwob import CollectError, collect

    tasks = task_list(args.tasks or "train")
    if not 0.0 <= args.fail_rate <= 1.0:
        raise CollectError(f"--fail-rate must be in [0, 1], got {args.fail_rate}")
    if args.episodes < 1 or args.workers < 1 or args.scale < 1:
        raise CollectError("--episodes, --workers and --scale must be >= 1")
    pbar, on_progress = _progress(args.episodes * len(tasks), "collect", args.json)
    try:
        report = collect(tasks, args.episodes, args.out, seed=args.seed, fail_rate=args.fail_rate,
                         scale=args.scale, workers=args.workers, on_progress=on_progress, agent=args.agent,
                         styles=args.styles, layout=args.layout or "native")
    finally:
        pbar.close()
    return _print_report(report, args)


def _print_report(report, args: argparse.Namespace) -> int:  # noqa: ANN001
    """The collection report: one JSON object, or a table per task (with the desktop's label/plan agreement)."""
    if args.json:
        print(json.dumps(report.to_dict()))
        return 0
    agreement = getattr(report, "agreement", None)
    harm = getattr(report, "harm", None) or {}
    threats = {t for t in harm if t.startswith("threat_")}
    print(f"recorded {report.recorded}, skipped {report.skipped} (already there), errors {len(report.errors)} "
          f"in {report.seconds:.0f} s ({report.episodes_per_minute:.2f} episodes/min) -> {args.out}")
    print(f"{'task':<28}{'success':>8}{'failure':>8}{'mistake':>8}{'clean-fail':>11}{'error':>6}"
          + (f"{'agree':>8}" if agreement is not None else "") + (f"{'harmful':>9}{'harm-agree':>12}" if threats
                                                                   else ""))
    for task, c in sorted(report.by_task.items()):
        line = (f"{task:<28}{c['success']:>8}{c['failure']:>8}{c['mistakes']:>8}{c['clean_failure']:>11}"
                f"{c['error']:>6}")
        if agreement is not None:
            a = agreement.get(task, {"episodes": 0, "agree": 0})
            line += f"{a['agree']:>4}/{a['episodes']:<3}"
        if task in threats:
            h = harm[task]
            line += f"{h['harmful']:>9}{h['agree']:>8}/{h['episodes']:<3}"
        print(line)
    for e in report.errors[:5]:
        who = f" (agent {e['agent']})" if args.source == "miniwob" else ""
        print(f"  error: {e['task']} seed {e['seed']}{who}: {e['error']}", file=sys.stderr)
    return 0


def _parse_size(text: str) -> tuple[int, int]:
    from gui_app.recorders.desktop.recorder import CollectError

    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise CollectError(f"--size must be WIDTHxHEIGHT, got {text!r}") from None
    if w < 640 or h < 480:
        raise CollectError(f"--size must be at least 640x480, got {text!r}")
    return w, h


def _run_desktop(args: argparse.Namespace) -> int:
    from gui_app.recorders.desktop.recorder import ALL_TASKS, CollectError, collect
    from gui_app.recorders.desktop.tasks import TASKS
    from gui_app.recorders.desktop.threats import THREATS

    spec = args.tasks or "all"
    named = {"all": sorted(TASKS), "threats": sorted(THREATS)}
    tasks = named[spec] if spec in named else [t.strip() for t in spec.split(",") if t.strip()]
    if not 0.0 <= args.fail_rate <= 1.0:
        raise CollectError(f"--fail-rate must be in [0, 1], got {args.fail_rate}")
    if not 0.0 <= args.harm_rate <= 1.0:
        raise CollectError(f"--harm-rate must be in [0, 1], got {args.harm_rate}")
    if args.episodes < 1 or args.workers < 1 or args.fps < 1:
        raise CollectError("--episodes, --workers and --fps must be >= 1")
    try:
        think = tuple(float(v) for v in args.think.split(","))
    except ValueError:
        raise CollectError(f"--think must be MIN,MAX seconds, got {args.think!r}") from None
    if len(think) != 2 or not 0 <= think[0] <= think[1]:
        raise CollectError(f"--think must be MIN,MAX seconds with 0 <= MIN <= MAX, got {args.think!r}")
    layout = args.layout or "both"
    formats = ("native", "osworld") if layout == "both" else (layout,)
    size = _parse_size(args.size)
    unknown = [t for t in tasks if t not in ALL_TASKS]
    if unknown:
        raise CollectError(f"unknown desktop task(s): {', '.join(unknown)} (known: 'all', 'threats', "
                           f"{', '.join(sorted(ALL_TASKS))})")
    pbar, on_progress = _progress(args.episodes * len(tasks), "collect desktop", args.json)
    # A terminated collection (SIGTERM from a scheduler or `kill`) unwinds like Ctrl+C: the finally blocks close
    # every X server, window manager, recording and application it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        report = collect(tasks, args.episodes, args.out, seed=args.seed, fail_rate=args.fail_rate,
                         size=size, workers=args.workers, fps=args.fps, think=think, formats=formats,
                         on_progress=on_progress, harm_rate=args.harm_rate, profile=args.profile)
    finally:
        pbar.close()
    return _print_report(report, args)
