"""A folder of screenshots in order, with an optional step log.

Images (png/jpg/jpeg/webp) are ordered by the numbers in their names (``shot_2`` before ``shot_10``). Without a
log, each image is one step with no action. With a log (``steps.jsonl``/``steps.csv`` or any JSONL/CSV with an
``action`` or ``screenshot`` column), each row is a step; a row naming its ``screenshot`` gets that image, other
rows get the images in order. Optional ``meta.json``/``task.json`` as for plain videos.

This is the fallback format: its sniff score is low (0.2) so that any more specific format wins, and a folder
with sub-folders that are units themselves is not one (it is a tree to scan). Nor is a folder whose images sit
beside a file another importer reads (an ATIF ``trajectory.json`` with its screenshots, an AgentNetBench task):
those images belong to that file, which the scan then finds as its own unit.
"""

from __future__ import annotations

from pathlib import Path

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.media.images import image_problem
from gui_app.core.trajectory.model import Step, Trajectory

# Files whose presence in a sub-folder means the sub-folder is a unit of its own.
_UNIT_MARKERS = ("trajectory.json", "traj.jsonl", "summary_info.json")
# Files that may be a unit of another (file) format, whose images this folder would then hold.
_DATA_EXTS = (".json", ".jsonl", ".eval")


def _images(root: Path) -> list[Path]:
    return [p for p in c.list_dir(root) if p.suffix.lower() in c.IMAGE_SUFFIXES and p.is_file()]


def _decodable(images: list[Path], warnings: list[str]) -> list[Path]:
    """The images whose header does not declare a size too large to decode; each other one is a warning."""
    out = []
    for img in images:
        problem = image_problem(img)
        if problem is None:
            out.append(img)
        else:
            warnings.append(f"{img}: field 'screenshot': {problem}; not used")
    return out


def _subdir_is_unit(d: Path) -> bool:
    for p in c.list_dir(d):
        if p.name in _UNIT_MARKERS or p.suffix.lower() in c.IMAGE_SUFFIXES + c.VIDEO_SUFFIXES:
            return True
    return False


def _other_format(file: Path) -> bool:
    """Whether ``file`` is a unit of a file format (lazy import: the registry imports this module)."""
    from gui_app.core.trajectory.formats import FILE_UNITS, detect

    imp = detect(file)
    return imp is not None and imp.name in FILE_UNITS


class ImageFolderImporter:
    name = "image_folder"

    def sniff(self, path: Path) -> float:
        if not path.is_dir():
            return 0.0
        images = _images(path)
        if not images or c.image_kind(c.head(images[0], 16)) is None:
            return 0.0
        for p in c.list_dir(path):
            # A symlinked folder is never a unit of its own (a scan does not follow it: `sub -> .` would loop), so
            # it does not stop this folder from being one either.
            if p.is_dir() and not p.is_symlink() and not p.name.startswith(".") and _subdir_is_unit(p):
                return 0.0
            if p.suffix.lower() in _DATA_EXTS and p.name not in c.LOG_NAMES and _other_format(p):
                return 0.0
        return 0.2

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        return [self.load(path)]

    def load(self, path: Path) -> Trajectory:
        root = path.resolve()
        images = _images(root)
        if not images:
            raise TrajectoryFormatError(root, None, "no screenshots (png/jpg/jpeg/webp) in the folder")
        warnings: list[str] = []
        traj = Trajectory(id=root.name, source_format=self.name, source_path=str(root), warnings=warnings)
        images = [p for p in images if c.confine(p, warnings, f"{root}: field 'screenshot'") is not None]
        if not images:
            raise TrajectoryFormatError(root, None, "no screenshots inside the folder (every image links out of it)")
        c.read_meta(root, traj)
        for img in images:
            if c.image_kind(c.head(img, 16)) is None:
                warnings.append(f"{img}: field 'screenshot': not a PNG/JPEG/WebP image")
        log = c.find_step_log(root, need_time=False, warnings=warnings)
        if log is None:
            images = _decodable(images, warnings)
            if not images:
                raise TrajectoryFormatError(root, None, "no screenshot that can be shown: every image is too large")
            traj.steps = [Step(index=i, screenshot=str(p), extra={"source_index": i}) for i, p in enumerate(images)]
            return traj
        traj.metadata["step_log"] = str(log)
        rows = c.read_step_log(log, need_time=False, warnings=warnings)
        named = {r["screenshot"] for r in rows if r["screenshot"]}
        unnamed = iter(_decodable([p for p in images if p.name not in named], warnings))
        for i, row in enumerate(rows):
            step = c.log_step(row, root, i, warnings, log)
            if row["screenshot"] is None:
                nxt = next(unnamed, None)
                step.screenshot = str(nxt) if nxt else None
                if nxt is None:
                    warnings.append(f"{log}:{row['line']}: field 'screenshot': no image left for step {i}")
            if row["t_start"] is not None:
                step.t_start, step.t_end = row["t_start"], row["t_end"]
            traj.steps.append(step)
        left = list(unnamed)
        if left:
            warnings.append(f"{root}: {len(left)} screenshots not referenced by {log.name} (first: {left[0].name})")
        return traj


IMPORTER = ImageFolderImporter()
