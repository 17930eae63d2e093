"""A plain screen recording with a step log beside it.

A directory holding one video (mp4/webm/mkv/avi, recognised by its bytes, not its name) and a step log
(``steps.jsonl`` or ``steps.csv``, or any JSONL/CSV whose first record has a start time), plus optional
``meta.json``/``task.json`` (instruction, id, app, os, agent, success, score). Or the video file itself with its
log beside it. Each log row gives at least a start time in seconds (``t_start``, ``start``, ``time`` or
``timestamp``; ``HH:MM:SS.fff`` accepted) and optionally ``index``, ``t_end``, ``action``, ``thought``,
``screenshot``, ``x``, ``y``, ``text``, ``reward``.

Times are stored, so alignment is ``stored`` with confidence 1; a step without ``t_end`` ends where the next one
starts (the last one at the end of the video). A video that will not open is an error here: it is the unit.
"""

from __future__ import annotations

from pathlib import Path

from gui_app.core.errors import TrajectoryFormatError, VideoError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.model import Trajectory


# Files never opened to look for a video: screenshots and logs, which can number thousands in one directory.
_NOT_VIDEO = c.IMAGE_SUFFIXES + (".json", ".jsonl", ".csv", ".txt", ".log", ".md", ".gz", ".pkl", ".py")


def _videos(root: Path) -> list[Path]:
    """Files whose bytes are a video container, whatever their name says."""
    return [p for p in c.list_dir(root) if p.suffix.lower() not in _NOT_VIDEO and c.is_video_file(p)]


def _named_videos(root: Path) -> list[Path]:
    """Files (or links, or FIFOs) named as videos, whatever their bytes are."""
    return [p for p in c.list_dir(root) if p.suffix.lower() in c.VIDEO_SUFFIXES and not p.is_dir()]


class PlainVideoImporter:
    name = "plain_video"

    def sniff(self, path: Path) -> float:
        if path.is_file():
            if not c.is_video_file(path):
                return 0.0
            return 0.8 if c.find_step_log(path.parent, need_time=True) else 0.0
        if not path.is_dir():
            return 0.0
        vids = _videos(path)
        if not vids and len(_named_videos(path)) == 1 and c.find_step_log(path, need_time=True):
            # A step log with times beside a file named as a video that is not one: this folder is a plain-video
            # run with a broken recording. Claimed, so that loading says so, rather than left to be walked into
            # (its screenshots folder would be listed as a run of its own).
            return 0.8
        if len(vids) != 1:
            return 0.0
        return 0.8 if c.find_step_log(path, need_time=True) else 0.3

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        return [self.load(path)]

    def load(self, path: Path) -> Trajectory:
        path = path.resolve()
        if path.is_file():
            root, video_path = path.parent, path
        else:
            root = path
            vids = _videos(root) or _named_videos(root)
            if not vids:
                raise TrajectoryFormatError(root, "video", "no video file (mp4/webm/mkv/avi) in the directory")
            if len(vids) > 1:
                raise TrajectoryFormatError(root, "video", f"{len(vids)} videos; expected one: "
                                                           f"{', '.join(v.name for v in vids)}")
            video_path = vids[0]
        warnings: list[str] = []
        traj = Trajectory(id=root.name if path.is_dir() else video_path.stem, source_format=self.name,
                          source_path=str(path), warnings=warnings)
        if c.confine(video_path, warnings, f"{root}: field 'video'") is None:  # a symlink out of the folder
            raise TrajectoryFormatError(video_path, "video", "links outside the trajectory's folder; not opened")
        try:
            traj.video = c.probe_video(video_path)
        except VideoError as exc:
            raise TrajectoryFormatError(video_path, "video", f"will not open as a video: {exc.reason}") from exc
        duration = traj.video.frames / traj.video.fps if traj.video.fps and traj.video.frames else None
        c.read_meta(root, traj)
        log = c.find_step_log(root, need_time=True, warnings=warnings)
        if log is None:
            warnings.append(f"{root}: no step log (steps.jsonl or steps.csv with a start time per step)")
            return traj
        traj.metadata["step_log"] = str(log)
        rows = c.read_step_log(log, need_time=True, warnings=warnings)
        for i, row in enumerate(rows):
            step = c.log_step(row, root, i, warnings, log)
            step.t_start = row["t_start"]
            nxt = rows[i + 1]["t_start"] if i + 1 < len(rows) else duration
            step.t_end = row["t_end"] if row["t_end"] is not None else nxt
            if step.t_end is not None and step.t_end < step.t_start:
                step.t_end = step.t_start  # a step logged past the end of the video: zero length, warned below
            step.align_method, step.align_confidence = "stored", 1.0
            if duration is not None and step.t_start > duration + 1e-6:
                warnings.append(f"{log}:{row['line']}: field 't_start': {step.t_start} s is after the end of the "
                                f"video ({duration:.3f} s)")
            traj.steps.append(step)
        return traj


IMPORTER = PlainVideoImporter()
