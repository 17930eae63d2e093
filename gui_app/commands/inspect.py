"""``rollscope inspect PATH [--json]``: load one trajectory of any supported format and describe it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gui_app.commands.options import add_tasks_root, tasks_roots
from gui_app.core.trajectory.model import Trajectory


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="trajectory file or directory (PATH#N selects one of a multi-trajectory file)")
    p.add_argument("--format", dest="fmt", default=None, help="importer name (default: detect from content)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--root", default=None,
                   help="library root: media may be read from anywhere under it (default: only the trajectory's "
                        "own folder)")
    add_tasks_root(p)


def describe(traj: Trajectory) -> dict[str, Any]:
    """The ``inspect --json`` object (a contract other tools depend on)."""
    v = traj.video
    return {
        "id": traj.id,
        "format": traj.source_format,
        "instruction": traj.instruction,
        "instruction_source": traj.instruction_source,
        "n_steps": traj.n_steps,
        "outcome": {"success": traj.outcome.success, "score": traj.outcome.score, "source": traj.outcome.source},
        "video": None if v is None else {"path": v.path, "fps": v.fps, "frames": v.frames, "width": v.width,
                                          "height": v.height},
        "steps": [{"index": s.index, "t_start": s.t_start, "t_end": s.t_end, "action": s.action,
                   "screenshot": s.screenshot, "align_method": s.align_method,
                   "align_confidence": s.align_confidence} for s in traj.steps],
        "alignment": traj.alignment_summary(),
        "warnings": list(traj.warnings),
    }


def run(args: argparse.Namespace) -> int:
    from gui_app.core.trajectory import formats
    from gui_app.core.media import video
    from gui_app.core.errors import VideoError
    from gui_app.core.safety import printable

    traj = formats.load(args.path, args.fmt, library_root=args.root, tasks_roots=tasks_roots(args))
    if traj.video is not None and (traj.video.fps is None or traj.video.frames is None):
        try:
            traj.video = video.probe(traj.video.path)
        except VideoError as exc:
            traj.warnings.append(str(exc))
    info = describe(traj)
    if args.json:
        print(json.dumps(info, ensure_ascii=False))
        return 0
    # Ids, instructions, actions and paths come from the file: printed escaped, they cannot drive the terminal or
    # forge a line (an instruction ending "\noutcome: success=True").
    t = printable
    out = info["outcome"]
    print(f"{t(info['id'])}  [{t(info['format'])}]  {t(traj.source_path)}")
    source = f"  (from {t(info['instruction_source']).replace('_', ' ')})" if info["instruction_source"] else ""
    print(f"  instruction: {t(info['instruction'] or '(none)')}{source}")
    print(f"  outcome:     success={out['success']} score={out['score']} source={t(out['source'])}")
    if info["video"]:
        vi = info["video"]
        print(f"  video:       {t(vi['path'])} ({vi['width']}x{vi['height']}, {vi['fps']} fps, {vi['frames']} frames)")
    al = info["alignment"]
    if al["method"]:
        conf = "n/a" if al["mean_confidence"] is None else f"{al['mean_confidence']:.2f}"
        offset = "" if al["offset"] is None else f", wall clock offset {al['offset']:.2f} s into the video"
        print(f"  alignment:   {t(al['method'])} (mean confidence {conf}{offset})")
        if al["low_confidence_steps"]:
            low = ", ".join(str(k) for k in al["low_confidence_steps"])
            print(f"               low confidence: step{'s' if len(al['low_confidence_steps']) > 1 else ''} {low} "
                  f"(check against the video)")
    print(f"  steps:       {info['n_steps']}")
    low = set(al["low_confidence_steps"])
    for s in traj.steps:
        ts = "      -" if s.t_start is None else f"{s.t_start:6.2f}s"
        flag = "?" if s.index in low else " "
        print(f"    {s.index:3d} {ts}{flag} {t(s.action_type):<12} {t(s.action[:80])}")
    for w in info["warnings"]:
        print(f"  warning: {t(w)}")
    return 0
