"""Helpers shared by the importers: cheap sniffing, JSON/JSONL/CSV reading with errors that name file, line and
field, typed field access, media checks and step building.

Nothing here decodes video; :func:`probe_video` only reads the container header (through
:func:`gui_app.core.media.video.probe`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gui_app.core.trajectory.actions import parse_action
from gui_app.core.errors import RollscopeError, TrajectoryFormatError, VideoError
from gui_app.core.media.images import image_problem
from gui_app.core.safety import (  # noqa: F401 -- video_kind, container_problem: the importers' helpers too
    MAX_STEPS,
    BadJSON,
    confine,
    container_problem,
    is_regular,
    open_regular,
    parse_json,
    read_bytes,
    video_kind,
)
from gui_app.core.trajectory.model import ACTION_TYPES, Step, Trajectory, VideoRef
from gui_app.core.media.video import IMAGE_SUFFIXES, VIDEO_SUFFIXES  # noqa: F401 -- the importers' too

HEAD_BYTES = 8192


_NUM = re.compile(r"(\d+)")


_BOM = b"\xef\xbb\xbf"


def head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of a regular file, without a UTF-8 byte-order mark (b'' for anything unreadable or not
    a regular file: sniffing must never raise, nor wait on a FIFO). Notepad and PowerShell write JSON with a BOM;
    a sniffer looking for ``{`` must see past it."""
    try:
        with open_regular(path) as fh:
            data = fh.read(n + len(_BOM))
    except (OSError, ValueError):
        return b""
    return data[len(_BOM):len(_BOM) + n] if data.startswith(_BOM) else data[:n]


def tail(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The last ``n`` bytes of a file (b'' for anything unreadable). A JSON object's keys can come in any order,
    so a format whose telling keys may follow a long array (Who&When's ``history``) is sniffed at both ends."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - n))
            return fh.read(n)
    except OSError:
        return b""


def natural_key(name: str) -> tuple:
    """Sort key that orders ``step_2`` before ``step_10``."""
    return tuple(int(p) if p.isdigit() else p.lower() for p in _NUM.split(name))


def image_kind(data: bytes) -> str | None:
    """The image type from its magic bytes (png/jpeg/webp), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def is_video_file(path: Path) -> bool:
    """A regular file whose first bytes are a video container (extension alone is not trusted)."""
    return is_regular(path) and video_kind(head(path, 16)) is not None


def list_dir(path: Path) -> list[Path]:
    """Entries of a directory sorted naturally; [] when unreadable."""
    try:
        return sorted(path.iterdir(), key=lambda p: natural_key(p.name))
    except OSError:
        return []


# -- reading ---------------------------------------------------------------------------------------------------


def read_text(path: Path) -> str:
    """A whole text file (a regular one, of at most :data:`gui_app.core.safety.MAX_TEXT_BYTES`), or
    TrajectoryFormatError naming it."""
    try:
        return read_bytes(path).decode("utf-8-sig")
    except OSError as exc:
        raise TrajectoryFormatError(path, None, f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TrajectoryFormatError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def read_json(path: Path) -> Any:
    """Parse a JSON file; a syntax error names the line and column."""
    text = read_text(path)
    try:
        return parse_json(text, where=str(path))
    except BadJSON as exc:
        raise TrajectoryFormatError(path, None, exc.reason, line=exc.line) from None


class TruncatedRecord(TrajectoryFormatError):
    """The last line of a JSONL file is not valid JSON: the file was cut while it was written (a run killed
    mid-step). The lines before it are good; a reader loads them and warns with :func:`truncation_warning`."""


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any | TrajectoryFormatError]]:
    """``(line number, parsed value or the error for that line)`` for every non-blank line of a JSONL file.

    Errors are yielded, not raised, so a caller can decide whether one bad line spoils the whole file. A bad last
    line is a :class:`TruncatedRecord`.
    """
    text = read_text(path)
    lines = text.splitlines()
    last = max((i for i, line in enumerate(lines, start=1) if line.strip()), default=0)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield lineno, parse_json(line, where=f"{path}:{lineno}")
        except BadJSON as exc:
            # A syntax error (BadJSON with a line) in the last record is a file cut while written; a number or
            # nesting we refuse is bad wherever it is.
            cut = lineno == last and exc.line is not None
            yield lineno, (TruncatedRecord if cut else TrajectoryFormatError)(path, None, exc.reason, line=lineno)


def step_limit_warning(path: Path, line: int, kept: int) -> str:
    """The warning for a step log that goes on past :data:`gui_app.core.safety.MAX_STEPS` steps, of which the first
    ``kept`` were loaded and the rest, from ``line`` on, were not read."""
    return (f"{path}:{line}: more than {kept:,} steps, the most a run may have; loaded the first {kept:,}, the rest "
            f"not read")


def truncation_warning(error: TruncatedRecord, kept: int) -> str:
    """The warning for a JSONL file cut in its last record, of which ``kept`` records before it were loaded."""
    return f"{error}: the file ends in a cut record (truncated?); loaded the {kept} record(s) before it"


def read_jsonl_strict(path: Path, warnings: list[str] | None = None) -> list[tuple[int, Any]]:
    """Every record of a JSONL file; the first bad line raises, except a cut last line when ``warnings`` is given:
    the records before it are returned and the cut is added to ``warnings``."""
    out: list[tuple[int, Any]] = []
    for lineno, value in iter_jsonl(path):
        if isinstance(value, TruncatedRecord) and warnings is not None and out:
            warnings.append(truncation_warning(value, len(out)))
            break
        if isinstance(value, TrajectoryFormatError):
            raise value
        out.append((lineno, value))
    return out


def read_csv(path: Path) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV file with a header, as ``(line number, row)``; empty cells become ''."""
    text = read_text(path)
    try:
        reader = csv.DictReader(io.StringIO(text))
        rows = []
        for row in reader:
            if None in row:
                raise TrajectoryFormatError(path, None, "row has more cells than the header", line=reader.line_num)
            rows.append((reader.line_num, {k.strip(): (v or "").strip() for k, v in row.items() if k}))
        return rows
    except csv.Error as exc:
        raise TrajectoryFormatError(path, None, f"invalid CSV: {exc}") from exc


# -- typed access ----------------------------------------------------------------------------------------------


def typed(obj: dict, key: str, types: type | tuple[type, ...], path: Path, field: str, *, line: int | None = None,
          required: bool = False, default: Any = None) -> Any:
    """``obj[key]`` checked against ``types`` (``None`` allowed unless required); bool is never a number.

    Raises:
        TrajectoryFormatError: missing while required, or of the wrong type (names file, line and field).
    """
    if key not in obj or obj[key] is None:
        if required:
            raise TrajectoryFormatError(path, field, "missing", line=line)
        return default
    value = obj[key]
    types_t = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in types_t:
        ok = False
    else:
        ok = isinstance(value, types_t)
    if not ok:
        names = " or ".join(_type_name(t) for t in types_t)
        raise TrajectoryFormatError(path, field, f"expected {names}, got {_type_name(type(value))} {_short(value)}",
                                    line=line)
    return value


def number(value: Any, path: Path, field: str, line: int | None = None) -> float | None:
    """A finite float from a number or a numeric string ('' and None give None)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise TrajectoryFormatError(path, field, f"expected a number, got boolean {value}", line=line)
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TrajectoryFormatError(path, field, f"expected a number, got {_short(value)}", line=line) from None
    except OverflowError:  # an integer past a float's range (10**400)
        raise TrajectoryFormatError(path, field, f"expected a finite number, got {_short(value)}",
                                    line=line) from None
    if not math.isfinite(out):
        raise TrajectoryFormatError(path, field, f"expected a finite number, got {value}", line=line)
    return out


def _type_name(t: type) -> str:
    return {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array",
            type(None): "null"}.get(t, t.__name__)


def _short(value: Any, n: int = 40) -> str:
    s = repr(value)
    return s if len(s) <= n else s[: n - 3] + "..."


def text_of(value: Any) -> str:
    """Text from a string, a list of text parts (``{"type": "text", "text": ...}``) or None."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        # Malformed parts (a text part whose text is not a string) carry no readable text: skipped.
        return "\n".join(p["text"] for p in value if isinstance(p, dict) and p.get("type") == "text"
                         and isinstance(p.get("text"), str)).strip()
    return json.dumps(value, ensure_ascii=False)


# -- media -----------------------------------------------------------------------------------------------------


def resolve_media(root: Path, rel: str | None, warnings: list[str], where: str) -> str | None:
    """Absolute path of a screenshot named relative to ``root``; a missing file, or an image too large to decode
    (by its header: :func:`gui_app.core.media.images.image_problem`), becomes a warning and None.

    Args:
        where: ``"file: field 'x'"`` prefix for the warning, so it names file and field like an error does.
    """
    if not rel:
        return None
    if re.match(r"^[a-z][a-z0-9+.-]*://", rel, re.I):
        warnings.append(f"{where}: remote image not fetched: {rel}")
        return None
    try:
        p = Path(rel)
        p = p if p.is_absolute() else root / p
        real = confine(p, warnings, where)  # inside the trajectory's folder or the library, symlinks resolved
    except (ValueError, OSError) as exc:  # a NUL byte in the name, a name too long for the system
        warnings.append(f"{where}: not a usable file name ({exc})")
        return None
    if real is None:
        return None
    if not is_regular(real):
        warnings.append(f"{where}: file not found: {p}" if not os.path.exists(real) else
                        f"{where}: not a regular file: {p}")
        return None
    problem = image_problem(real)
    if problem is not None:
        warnings.append(f"{where}: {problem}: {p}; not used")
        return None
    return str(real)


def probe_video(path: Path) -> VideoRef:
    """Probe a video's fps, frame count and size from its header (no decoding).

    Raises:
        VideoError: the file will not open as a video.
    """
    from gui_app.core.media.video import probe  # lazy: keeps importer modules light to import

    problem = container_problem(path)  # an MP4 cut short can still open, with a frame count it cannot keep
    if problem is not None:
        raise VideoError(path, problem)
    ref = probe(str(path))
    ref.path = str(Path(path).resolve())
    return ref


def align(traj: Trajectory) -> None:
    """Fill step times from screenshots vs the recording (:func:`gui_app.core.trajectory.align.align_trajectory`).

    A failure to align is not a failure to load: it becomes a warning and the steps keep no times.
    """
    from gui_app.core.trajectory.align import align_trajectory  # lazy: alignment pulls in the decoder

    try:
        align_trajectory(traj)
    except RollscopeError as exc:
        traj.warnings.append(f"{traj.source_path}: steps not aligned to the video: {exc}")


def attach_recording(traj: Trajectory, file: Path, align_steps: bool) -> None:
    """Give ``traj`` the recording ``file`` (if present) and align its steps to it when ``align_steps``.

    A recording that will not open is a warning naming the file; the trajectory still loads without video.
    """
    if not file.exists() and not file.is_symlink():
        return
    real = confine(file, traj.warnings, f"{file}: field 'video'")
    if real is None:
        return
    if not is_regular(real):
        traj.warnings.append(f"{file}: field 'video': not a regular file; recording not used")
        return
    try:
        traj.video = probe_video(file)
    except VideoError as exc:
        traj.warnings.append(f"{file}: field 'video': recording not usable: {exc.reason}")
        return
    if traj.steps and align_steps:
        align(traj)


# -- steps -----------------------------------------------------------------------------------------------------


def make_step(index: int, action: str, **kw: Any) -> Step:
    """A Step with ``action_type``/``x``/``y``/``text`` parsed from the action text (explicit values win)."""
    parsed = parse_action(action)
    step = Step(index=index, action=action, action_type=parsed.type, x=parsed.x, y=parsed.y, text=parsed.text)
    for k, v in kw.items():
        if v is not None or k not in ("action_type", "x", "y", "text"):
            setattr(step, k, v)
    return step


def render_call(name: str, args: Any) -> str:
    """``name(k=v, ...)``: the form :func:`gui_app.core.trajectory.actions.parse_action` reads."""
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={v!r}" for k, v in args.items())
        return f"{name}({inner})"
    return f"{name}({args!r})" if args not in (None, "") else f"{name}()"


def call_fields(name: str, args: Any) -> dict[str, Any]:
    """A tool call as action text (``action``), plus ``parse_as`` when the arguments say outright what was done.

    Computer-use tools (Anthropic's, Inspect's ``computer``) pass ``action="left_click", coordinate=[x, y]``:
    ``parse_as`` is ``left_click(x=..., y=...)``, which :func:`gui_app.core.trajectory.actions.parse_action` reads.
    """
    out: dict[str, Any] = {}
    if isinstance(args, dict) and isinstance(args.get("action"), str):
        # Anthropic-style computer tool: computer(action="left_click", coordinate=[x, y], text=...)
        rest = {k: v for k, v in args.items() if k != "action"}
        coord = rest.pop("coordinate", None)
        if isinstance(coord, list) and len(coord) == 2 and all(isinstance(v, (int, float)) for v in coord):
            rest = {"x": coord[0], "y": coord[1], **rest}
        out["parse_as"] = render_call(args["action"], rest)
    out["action"] = render_call(name, args)
    return out


def message_step(index: int, text: str, **kw: Any) -> Step:
    """A turn that called no tool: its words are the step (``message`` unless they read as an action)."""
    st = make_step(index, text, **kw)
    st.action_type = "message" if st.action_type == "other" else st.action_type
    return st


def tool_call(call: Any, path: Path, field: str, name_key: str, id_key: str,
              json_args: bool = False) -> tuple[str, str | None, Any]:
    """``(function name, call id, arguments)`` of one tool call object. With ``json_args`` a string of arguments
    is decoded when it is a JSON object (some producers store the string the model emitted) and kept otherwise."""
    if not isinstance(call, dict):
        raise TrajectoryFormatError(path, field, "expected an object")
    fn = typed(call, name_key, str, path, f"{field}.{name_key}", required=True)
    call_id = typed(call, id_key, str, path, f"{field}.{id_key}")
    args = call.get("arguments")
    if json_args and isinstance(args, str):
        try:
            decoded = parse_json(args, where=f"{path}: field '{field}.arguments'")
            args = decoded if isinstance(decoded, dict) else args
        except BadJSON:
            pass
    elif args is not None and not isinstance(args, dict):
        wanted = "an object or a string" if json_args else "an object"
        raise TrajectoryFormatError(path, f"{field}.arguments", f"expected {wanted}, got {args!r}")
    return fn, call_id, args


def call_step(index: int, name: str, args: Any, **kw: Any) -> Step:
    """A step for one tool call: its action is ``name(args)``, parsed as what the arguments say was done."""
    fields = call_fields(name, args)
    st = make_step(index, fields.get("parse_as", fields["action"]), **kw)
    st.action = fields["action"]
    return st


def normalized_coords(step: Step) -> None:
    """Mark coordinates in [0, 1] as normalised (AgentNet-style ``pyautogui.click(x=0.16, y=0.27)``)."""
    if step.x is not None and step.y is not None and 0.0 <= step.x <= 1.0 and 0.0 <= step.y <= 1.0:
        step.extra["coords"] = "normalized"


def summarize_errors(path: Path, errors: list[TrajectoryFormatError], total: int) -> str:
    """One warning line for the records of a multi-record file that could not be read."""
    first = errors[0]
    more = f" (first: {first})" if len(errors) > 1 else f": {first}"
    return f"{path}: {len(errors)} of {total} records could not be read and were skipped{more}"


def records_to_all(path: Path, records: list[Trajectory | TrajectoryFormatError]) -> list[Trajectory]:
    """``load_all`` for a multi-record file: the readable trajectories, each warned about the unreadable ones.

    Raises:
        TrajectoryFormatError: no record is readable (the first record's error, naming its line).
    """
    good = [r for r in records if isinstance(r, Trajectory)]
    bad = [r for r in records if isinstance(r, TrajectoryFormatError)]
    if not good:
        if bad:
            raise bad[0]
        raise TrajectoryFormatError(path, None, "holds no record")
    if bad:
        note = summarize_errors(path, bad, len(records))
        for t in good:
            t.warnings.append(note)
    return good


def guard(fn: Callable[[], Trajectory]) -> Trajectory | TrajectoryFormatError:
    """Run one record's loader, turning its domain error into a value (see :func:`records_to_all`)."""
    try:
        return fn()
    except TrajectoryFormatError as exc:
        return exc


# -- plain step logs (video + steps.jsonl/csv, screenshot folders) -----------------------------------------------

START_KEYS = ("t_start", "start", "time", "timestamp", "t")
END_KEYS = ("t_end", "end")
INDEX_KEYS = ("index", "step", "step_index", "i")
SHOT_KEYS = ("screenshot", "image", "frame", "file")
LOG_NAMES = ("steps.jsonl", "steps.csv")


def _first_key(row: dict, keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in row and row[k] not in (None, "")), None)


def looks_like_step_log(path: Path, need_time: bool) -> bool:
    """Cheap check that a .jsonl/.csv file is a plain step log: its first record has a start time (when
    ``need_time``) or an action/screenshot column."""
    data = head(path, 4096).decode("utf-8", errors="replace").lstrip("\ufeff")
    first = data.split("\n", 1)[0].strip()
    if not first:
        return False
    if first.startswith("{"):
        try:
            keys = set(parse_json(first, where=f"{path}:1"))
        except (BadJSON, TypeError):
            keys = set(re.findall(r'"([A-Za-z_]+)"\s*:', first))
    elif path.suffix.lower() == ".csv":
        keys = {k.strip().strip('"') for k in first.split(",")}
    else:
        return False
    has_time = bool(keys & set(START_KEYS))
    if need_time:
        return has_time
    return has_time or bool(keys & (set(SHOT_KEYS) | {"action"}))


def find_step_log(root: Path, need_time: bool, warnings: list[str] | None = None) -> Path | None:
    """The step log in ``root``: ``steps.jsonl``/``steps.csv`` first, else any .jsonl/.csv that looks like one.

    A ``steps.jsonl``/``steps.csv`` that is there but cannot be used (unreadable, not a regular file, no step record
    on its first line) is named in ``warnings``: the trajectory then loads without it, which must not go unsaid.
    """
    for name in LOG_NAMES:
        file = root / name
        if is_regular(file) and looks_like_step_log(file, need_time):
            return file
        if warnings is not None and (file.exists() or file.is_symlink()):
            warnings.append(f"{file}: {_why_not_a_log(file, need_time)}; steps not read from it")
    for p in list_dir(root):
        if p.suffix.lower() in (".jsonl", ".csv") and is_regular(p) and looks_like_step_log(p, need_time):
            return p
    return None


def _why_not_a_log(file: Path, need_time: bool) -> str:
    if not is_regular(file):
        return "not a regular file"
    try:
        with open_regular(file) as fh:
            fh.read(1)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    what = "start time" if need_time else "action, screenshot or time"
    return f"its first record has no {what} (not a step log)"


def read_step_log(path: Path, need_time: bool, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows of a plain step log, checked and normalised, sorted by index. A JSONL log cut in its last record loads
    the rows before it, with a warning added to ``warnings`` (when given).

    Each row: ``index``, ``t_start``, ``t_end`` (floats or None), ``action``, ``thought``, ``screenshot``, ``x``,
    ``y``, ``text``, ``line``. Times are seconds; ``HH:MM:SS(.fff)`` strings are accepted.

    Raises:
        TrajectoryFormatError: a row misses its start time (when ``need_time``), a number does not parse, times
            are negative, an end precedes its start or starts go backwards (names file, line and field).
    """
    if path.suffix.lower() == ".csv":
        raw = read_csv(path)
    else:
        raw = read_jsonl_strict(path, warnings)
    rows: list[dict[str, Any]] = []
    for pos, (line, rec) in enumerate(raw):
        if pos == MAX_STEPS:
            if warnings is not None:
                warnings.append(step_limit_warning(path, line, MAX_STEPS))
            break
        if not isinstance(rec, dict):
            raise TrajectoryFormatError(path, None, "expected a JSON object", line=line)
        k_start = _first_key(rec, START_KEYS)
        if need_time and k_start is None:
            raise TrajectoryFormatError(path, "t_start", f"missing (one of {', '.join(START_KEYS)})", line=line)
        k_index = _first_key(rec, INDEX_KEYS)
        index = number(rec[k_index], path, k_index, line) if k_index else float(pos)
        if index is None or index != int(index) or index < 0:
            got = rec.get(k_index or "")
            raise TrajectoryFormatError(path, k_index, f"expected an integer >= 0, got {got!r}", line)
        t_start = _seconds(rec[k_start], path, k_start, line) if k_start else None
        k_end = _first_key(rec, END_KEYS)
        t_end = _seconds(rec[k_end], path, k_end, line) if k_end else None
        for key, t in ((k_start, t_start), (k_end, t_end)):
            if t is not None and t < 0:
                raise TrajectoryFormatError(path, key, f"must be >= 0, got {t}", line=line)
        if t_start is not None and t_end is not None and t_end < t_start:
            raise TrajectoryFormatError(path, k_end, f"ends ({t_end}) before it starts ({t_start})", line=line)
        row: dict[str, Any] = {"index": int(index), "t_start": t_start, "t_end": t_end, "line": line}
        for key in ("action", "thought", "text", "action_type"):
            v = rec.get(key)
            if v not in (None, "") and not isinstance(v, str):
                raise TrajectoryFormatError(path, key, f"expected a string, got {v!r}", line=line)
            row[key] = v or None
        k_shot = _first_key(rec, SHOT_KEYS)
        row["screenshot"] = str(rec[k_shot]) if k_shot else None
        row["x"] = number(rec.get("x"), path, "x", line)
        row["y"] = number(rec.get("y"), path, "y", line)
        row["reward"] = number(rec.get("reward"), path, "reward", line)
        rows.append(row)
    rows.sort(key=lambda r: r["index"])
    seen = set()
    prev = None
    for r in rows:
        if r["index"] in seen:
            raise TrajectoryFormatError(path, "index", f"step {r['index']} appears twice", line=r["line"])
        seen.add(r["index"])
        if prev is not None and r["t_start"] is not None and prev["t_start"] is not None \
                and r["t_start"] < prev["t_start"]:
            raise TrajectoryFormatError(path, "t_start", f"step {r['index']} starts ({r['t_start']}) before step "
                                                         f"{prev['index']} ({prev['t_start']})", line=r["line"])
        prev = r
    return rows


_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def _seconds(value: Any, path: Path, field: str, line: int) -> float | None:
    if isinstance(value, str):
        m = _CLOCK.match(value.strip())
        if m:
            return int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    return number(value, path, field, line)


def log_step(row: dict[str, Any], root: Path, index: int, warnings: list[str], log: Path) -> Step:
    """A Step from one normalised log row (see :func:`read_step_log`)."""
    shot = resolve_media(root, row["screenshot"], warnings, f"{log}:{row['line']}: field 'screenshot'")
    step = make_step(index, row["action"] or "", thought=row["thought"], screenshot=shot, reward=row["reward"],
                     x=row["x"], y=row["y"], text=row["text"], extra={"source_index": row["index"]})
    if row["action_type"]:
        if row["action_type"] in ACTION_TYPES:
            step.action_type = row["action_type"]
        else:
            warnings.append(f"{log}:{row['line']}: field 'action_type': unknown type {row['action_type']!r}")
    return step


def read_meta(root: Path, traj: Trajectory, names: tuple[str, ...] = ("meta.json", "task.json")) -> None:
    """Instruction, outcome and descriptors from an optional ``meta.json``/``task.json`` sidecar."""
    for name in names:
        file = root / name
        if not file.is_file():
            continue
        doc = read_json(file)
        if not isinstance(doc, dict):
            raise TrajectoryFormatError(file, "(root)", "expected a JSON object")
        instr = next((doc[k] for k in ("instruction", "goal", "intent") if isinstance(doc.get(k), str)), None)
        if instr:
            traj.instruction = instr
        if typed(doc, "task", str, file, "task"):
            traj.metadata["task"] = doc["task"]  # the task's name (groups runs of one task in the catalog)
        if isinstance(doc.get("id"), str) and doc["id"]:
            traj.id = doc["id"]
        for key in ("app", "os", "agent"):
            setattr(traj, key, typed(doc, key, str, file, key) or getattr(traj, key))
        success = typed(doc, "success", bool, file, "success")
        score = number(doc.get("score", doc.get("reward")), file, "score")
        if success is not None or score is not None:
            src = typed(doc, "outcome_source", str, file, "outcome_source") or "env"
            if src not in ("env", "human", "model"):
                raise TrajectoryFormatError(file, "outcome_source", f"expected env, human or model, got {src!r}")
            traj.outcome.success, traj.outcome.score, traj.outcome.source = success, score, src
        traj.metadata["meta_file"] = str(file)
        return
