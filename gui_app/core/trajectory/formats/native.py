"""The native on-disk format: a directory holding ``trajectory.json`` plus ``video.mp4`` and/or ``frames/``.

``trajectory.json`` follows ``gui_app/resources/schema/trajectory.schema.json`` (``schema_version`` 1). Media paths are
stored relative to the directory; in memory they are absolute. Saving is atomic (write to a temp file, then
rename), so a crash never leaves a half-written trajectory behind.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable, Iterable
from typing import Any

import fastjsonschema
import jsonschema

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.media.images import image_problem
from gui_app.core.safety import (BadJSON, confine, container_problem, is_regular, open_regular, os_reason, parse_json,
                                 read_bytes, why_missing)
from gui_app.core.trajectory.model import Outcome, Step, Trajectory, VideoRef

SCHEMA_VERSION = 1
FILENAME = "trajectory.json"
# Inside the package (gui_app/resources/), so a plain `pip install .` ships it.
SCHEMA_PATH = Path(__file__).resolve().parents[3] / "resources" / "schema" / "trajectory.schema.json"

_STEP_FIELDS = ("index", "t_start", "t_end", "action", "action_type", "x", "y", "text", "thought", "screenshot",
                "reward", "align_method", "align_confidence", "extra")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The JSON Schema of ``trajectory.json``."""
    return json.loads(SCHEMA_PATH.read_text())


def _join(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _field_path(err: jsonschema.ValidationError) -> str:
    parts = list(err.absolute_path)
    # A missing or unexpected property is reported on its parent object; name the property itself.
    if err.validator == "required":
        m = re.match(r"'([^']+)' is a required property", err.message)
        parts += [m.group(1)] if m else []
    elif err.validator == "additionalProperties":
        m = re.search(r"\('([^']+)' was unexpected\)", err.message)
        parts += [m.group(1)] if m else []
    return _join(parts) or "(root)"


def _non_finite(value: Any, parts: list) -> list | None:
    """Path of the first NaN/inf in a document (JSON has no such numbers), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return parts
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = _non_finite(v, [*parts, k])
        if found is not None:
            return found
    return None


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft7Validator:
    """The reference validator: slow, but its errors name the field (used only once a document is invalid)."""
    return jsonschema.Draft7Validator(schema())


@lru_cache(maxsize=1)
def _fast_check() -> Callable[[Any], Any]:
    # fastjsonschema compiles the schema to Python: ~0.03 ms per document against ~3-6 ms for jsonschema,
    # which made schema validation 85% of a catalog scan. Valid documents take this path only.
    return fastjsonschema.compile(schema())


def _is_valid(doc: Any) -> bool:
    try:
        _fast_check()(doc)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def validate(doc: Any, path: str | Path) -> None:
    """Validate a parsed ``trajectory.json``; raise :class:`TrajectoryFormatError` naming the first bad field."""
    errors = [] if _is_valid(doc) else sorted(_validator().iter_errors(doc),
                                              key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = errors[0]
        raise TrajectoryFormatError(path, _field_path(err), err.message)
    bad = _non_finite(doc, [])
    if bad is not None:
        raise TrajectoryFormatError(path, _join(bad), "not a finite number (JSON has no NaN or infinity)")
    for k, s in enumerate(doc["steps"]):
        if s["index"] != k:
            raise TrajectoryFormatError(path, f"steps[{k}].index",
                                        f"is {s['index']}; indices must be 0..{len(doc['steps']) - 1} in order")


def is_native(path: str | Path) -> bool:
    p = Path(path)
    if p.is_dir():
        return (p / FILENAME).is_file()
    return p.name == FILENAME


def _abs(root: Path, rel: str) -> Path:
    """Absolute, normalised media path: media referenced outside the directory are saved as ``../..``."""
    return Path(os.path.normpath(root / rel))


def load(path: str | Path) -> Trajectory:
    """Load a native trajectory from its directory or its ``trajectory.json``.

    Missing media do not fail the load: they become warnings, so a partly readable trajectory still opens.

    Raises:
        TrajectoryFormatError: unreadable JSON or a schema violation (names file, line and field).
    """
    p = Path(path)
    file = p / FILENAME if p.is_dir() else p
    root = file.parent.resolve()
    try:
        text = read_bytes(file).decode("utf-8-sig")  # a regular file only; a BOM (Windows editors) is fine
    except OSError as exc:
        raise TrajectoryFormatError(file, None, f"cannot read: {os_reason(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise TrajectoryFormatError(file, None, f"not UTF-8 text: {exc}") from exc
    try:
        doc = parse_json(text, where=str(file))
    except BadJSON as exc:
        raise TrajectoryFormatError(file, None, exc.reason, line=exc.line) from None
    if not isinstance(doc, dict):
        raise TrajectoryFormatError(file, "(root)", "expected a JSON object")
    validate(doc, file)

    warnings: list[str] = []
    video = None
    if doc.get("video"):
        v = doc["video"]
        video = _video(file, _abs(root, v["path"]), v, warnings)
    steps = []
    for s in doc["steps"]:
        kw = {k: s[k] for k in _STEP_FIELDS if k in s}
        if kw.get("screenshot"):
            where = f"{file}: field 'steps[{s['index']}].screenshot'"
            shot = confine(_abs(root, kw["screenshot"]), warnings, where)  # only when loading for a user
            if shot is not None and not is_regular(shot):
                warnings.append(f"{where}: {_not_found(shot)}: {shot}" if not os.path.exists(shot) else
                                f"{where}: not a regular file: {shot}")
                shot = None if os.path.exists(shot) else shot
            problem = image_problem(shot) if shot is not None else None
            if problem is not None:  # measured from its header: never decoded
                warnings.append(f"{where}: {problem}: {shot}; not used")
                shot = None
            kw["screenshot"] = None if shot is None else str(shot)
        steps.append(Step(**kw))
    _check_times(file, steps, video, warnings)
    return Trajectory(
        id=doc["id"],
        instruction=doc.get("instruction", ""),
        source_format=doc.get("source_format", "native"),
        source_path=str(root),
        steps=steps,
        outcome=Outcome(**doc.get("outcome", {})),
        video=video,
        app=doc.get("app"),
        os=doc.get("os"),
        agent=doc.get("agent"),
        metadata=doc.get("metadata", {}),
        warnings=warnings,
    )


# Step times past this many seconds (30 days) are no recording's: a t_start of 1e308 would otherwise pass as a time.
MAX_SECONDS = 30 * 24 * 3600.0


def _not_found(path: str | Path) -> str:
    """Why a medium is missing: not found, or, for a link, a symlink loop or a broken link (and where it points)."""
    return "file not found" if not os.path.islink(path) else why_missing(path)


def _video(file: Path, path: Path, v: dict[str, Any], warnings: list[str]) -> VideoRef | None:
    """The recording named by ``video.path``, or None (with a warning) when it cannot be one.

    A missing file keeps its reference (the trajectory may be opened again once it is copied in); a path outside the
    trajectory's folder or library, something that is not a regular file, or a file that is not a video container
    (empty, text, an MP4 cut short: the JSON's ``fps``/``frames`` would otherwise be believed) is dropped.
    """
    where = f"{file}: field 'video.path'"
    real = confine(path, warnings, where)
    if real is None:
        return None
    if not os.path.exists(real):
        warnings.append(f"{where}: {_not_found(path)}: {path}")
        return VideoRef(str(path), v.get("fps"), v.get("frames"), v.get("width"), v.get("height"))
    if not is_regular(real):
        warnings.append(f"{where}: not a regular file: {path}; recording not used")
        return None
    problem = container_problem(real)
    if problem is not None:
        warnings.append(f"{where}: {problem}: {path}; recording not used")
        return None
    return VideoRef(str(path), v.get("fps"), v.get("frames"), v.get("width"), v.get("height"))


def _check_times(file: Path, steps: list[Step], video: VideoRef | None, warnings: list[str]) -> None:
    """Step times that cannot be right are warned about and dropped, never believed in silence: an end before its
    start, a time past :data:`MAX_SECONDS` or past the end of the recording, a start before the previous step's."""
    end = video.frames / video.fps if video is not None and video.fps and video.frames else None
    prev: float | None = None
    for st in steps:
        f = f"{file}: field 'steps[{st.index}]"
        for name in ("t_start", "t_end"):
            t = getattr(st, name)
            if t is None:
                continue
            if t > MAX_SECONDS or (end is not None and t > end + 1.0):
                limit = f"the end of the recording ({end:.3f} s)" if end is not None and t <= MAX_SECONDS \
                    else f"{MAX_SECONDS:,.0f} s"
                warnings.append(f"{f}.{name}': {t:g} s is past {limit}; time ignored")
                setattr(st, name, None)
        if st.t_start is not None and st.t_end is not None and st.t_end < st.t_start:
            warnings.append(f"{f}.t_end': ends ({st.t_end:g} s) before it starts ({st.t_start:g} s); end ignored")
            st.t_end = None
        if st.t_start is not None:
            if prev is not None and st.t_start < prev:
                warnings.append(f"{f}.t_start': starts ({st.t_start:g} s) before the previous step ({prev:g} s)")
            prev = st.t_start


def _rel(path: str | None, root: Path, copy_media: bool, subdir: str) -> str | None:
    if not path:
        return None
    src = Path(path)
    if not src.is_absolute():
        return src.as_posix()
    try:
        return src.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        pass
    if copy_media and src.is_file():
        dest = root / subdir / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copy2(src, dest)
        return dest.relative_to(root).as_posix()
    return os.path.relpath(src, root)


def to_document(traj: Trajectory, root: str | Path, copy_media: bool = False) -> dict[str, Any]:
    """The ``trajectory.json`` document for ``traj`` saved under ``root``."""
    root = Path(root)
    video = None
    if traj.video is not None:
        v = traj.video
        video = {"path": _rel(v.path, root, copy_media, "."), "fps": v.fps, "frames": v.frames,
                 "width": v.width, "height": v.height}
    steps = []
    for s in traj.steps:
        d = {k: getattr(s, k) for k in _STEP_FIELDS}
        d["screenshot"] = _rel(s.screenshot, root, copy_media, "frames")
        steps.append(d)
    return {
        "schema_version": SCHEMA_VERSION,
        "id": traj.id,
        "instruction": traj.instruction,
        "source_format": traj.source_format,
        "app": traj.app,
        "os": traj.os,
        "agent": traj.agent,
        "outcome": {"success": traj.outcome.success, "score": traj.outcome.score, "source": traj.outcome.source},
        "video": video,
        "steps": steps,
        "metadata": traj.metadata,
    }


def save(traj: Trajectory, directory: str | Path, copy_media: bool = False) -> Path:
    """Write ``traj`` as a native trajectory in ``directory`` (created if needed); returns the JSON path.

    Args:
        copy_media: copy screenshots/video that live outside ``directory`` into it (``frames/``), so the
            directory is self-contained; otherwise they are referenced by relative path.

    Raises:
        TrajectoryFormatError: the trajectory does not satisfy the schema (nothing is written then).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    doc = to_document(traj, directory, copy_media)
    target = directory / FILENAME
    validate(doc, target)
    fd, tmp = tempfile.mkstemp(prefix=".trajectory.", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


# -- the importer -------------------------------------------------------------------------------------------------

# The version of another format's ``trajectory.json`` (ATIF's "ATIF-v1.6"): a string that does not start with a digit.
_OTHER_VERSION = re.compile(rb'"schema_version"\s*:\s*"[^0-9"]')


class NativeImporter:
    name = "native"

    def sniff(self, path: Path) -> float:
        file = path / FILENAME if path.is_dir() else path
        if file.name != FILENAME or not os.path.lexists(file):
            return 0.0
        try:
            with open_regular(file) as fh:
                head = fh.read(4096)
        except OSError:
            # A trajectory.json that is there but cannot be read (no permission, a folder, a FIFO, a symlink loop)
            # is a damaged run of ours: claimed, so loading names the file and why, rather than the folder being
            # taken for another format's run (an empty plain video, its catalog row overwritten).
            return 0.5
        if re.search(rb'"schema_version"\s*:\s*\d', head):
            return 1.0
        # ATIF files are often named trajectory.json too; theirs is a string ("ATIF-v1.6"), ours the integer 1.
        # Anything else (cut short, even right after "schema_version":, not JSON, not an object) is ours to report.
        return 0.0 if _OTHER_VERSION.search(head) else 0.5

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        return [load(path)]


IMPORTER = NativeImporter()
