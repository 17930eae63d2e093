"""Guards for reading files we did not write: the one place that says how much of a hostile file we will read.

Users bring folders from anywhere; a file may be truncated, enormous, nested ten thousand levels deep, a FIFO that
never ends, or name ``/etc/shadow`` as its screenshot. Every importer reads through these helpers, so each limit is
set (and tested) once:

- :func:`parse_json`: JSON whose numbers, nesting or syntax Python cannot take becomes one :class:`BadJSON` line
  (``json.loads`` raises ``ValueError`` for a 5,000-digit integer and ``RecursionError`` for deep nesting, neither of
  them a ``JSONDecodeError``); a key repeated in one object is noted during a load (:func:`duplicate_keys`).
- :func:`open_regular` / :func:`read_bytes`: only regular files are opened (a FIFO blocks for ever, ``/dev/zero``
  never ends), and whole-file reads stop at :data:`MAX_TEXT_BYTES`.
- :func:`bounded_count`: a count read from a file (steps, frames) is checked before anything is built from it.
- :data:`MAX_IMAGE_PIXELS`: the largest image decoded, checked from its header (:mod:`gui_app.core.media.images`).
- :func:`confine` / :func:`load_scope`: media named by a trajectory are opened only inside its folder or the
  library's root, symlinks resolved.

What a load may read beyond the unit it was given (its media roots, OSWorld's task roots) reaches the importers
through one door, :func:`load_scope`, opened by :func:`gui_app.core.trajectory.formats.load_unit` from its own
arguments: the
importers' interface (``load_all(path, align)``) carries neither, and only :func:`confine` and the OSWorld importer
read them (:func:`scope`). It is the only configuration a context variable carries; everything else travels as
arguments or in the settings object, and nothing writes the process environment (``tests/test_configuration.py``).
The other context variables here are per-load notes and caches, not configuration.
- Media probes have a time limit (:data:`PROBE_TIMEOUT_S`, applied by :mod:`gui_app.core.media.video`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from gui_app.core.errors import clip


class BadJSON(ValueError):
    """Text that does not parse as JSON we can hold: ``reason`` in words, and the line when known."""

    def __init__(self, reason: str, line: int | None = None):
        self.reason, self.line = reason, line
        super().__init__(reason)


_DIGITS = re.compile(r"Exceeds the limit \((\d+) digits\)")


# Where the keys that JSON objects repeat are noted while a trajectory loads (None: not noted).
_DUPLICATES: ContextVar[list[str] | None] = ContextVar("rollscope_duplicate_keys", default=None)
# The most repeated keys noted in one load (a JSONL file repeating a key on every line says so once per line).
_MAX_DUPLICATE_NOTES = 20


@contextmanager
def duplicate_keys() -> Iterator[list[str]]:
    """Within this block, :func:`parse_json` notes each key repeated in one JSON object in the list it yields, as
    ``"WHERE: key 'K' appears N times in one object; the last value is used"``.

    A repeated key is legal JSON that readers take differently (Python keeps the last value, others the first), so a
    file written with one in mind can mean something else here; the user is told, the load goes on.
    """
    notes: list[str] = []
    token = _DUPLICATES.set(notes)
    try:
        yield notes
    finally:
        _DUPLICATES.reset(token)


def parse_json(text: str | bytes, where: str | None = None) -> Any:
    """``json.loads(text)``, every failure a :class:`BadJSON`.

    Args:
        text: the JSON text.
        where: the file (and line) it came from, for the notes of :func:`duplicate_keys`.

    Raises:
        BadJSON: invalid syntax (with line and column), an integer longer than Python converts (4,300 digits), or
            nesting deeper than the interpreter's recursion limit allows (about 1,000 levels).
    """
    sink = _DUPLICATES.get()
    repeated: dict[str, int] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items):
            for key, n in Counter(k for k, _ in items).items():
                if n > 1:
                    repeated[key] = max(n, repeated.get(key, 0))
        return obj

    try:
        value = json.loads(text) if sink is None else json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise BadJSON(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise BadJSON(f"JSON nested too deeply (over about {sys.getrecursionlimit()} levels)") from None
    except ValueError as exc:  # int('9' * 5000): Python's guard against quadratic-time conversions
        m = _DIGITS.search(str(exc))
        why = f"a number longer than {m.group(1)} digits" if m else clip(str(exc), 120)
        raise BadJSON(f"invalid JSON: {why}") from None
    if sink is not None:
        for key, n in repeated.items():
            note = clip(f"{where or 'JSON'}: key {clip(key, 80)!r} appears {n} times in one object; the last value "
                        f"is used")
            if len(sink) < _MAX_DUPLICATE_NOTES and note not in sink:  # a sniffer may have parsed it already
                sink.append(note)
    return value


# Seconds a media probe (opening a container and reading its stream headers) may take. Probing reads a few megabytes;
# a file that keeps FFmpeg busy longer is not a recording we can show.
PROBE_TIMEOUT_S = 10.0


# -- files ------------------------------------------------------------------------------------------------------

# The largest text file (JSON, JSONL, CSV, a log) read whole into memory. Real trajectory files are kilobytes to a
# few hundred megabytes (a whole AgentNet shard); past this, reading it is a bigger risk than refusing it.
MAX_TEXT_BYTES = 1 << 30


class NotRegularFile(OSError):
    """A path that names a FIFO, a device, a socket or a folder where a file was expected. Reading a FIFO blocks
    until someone writes to it (forever, for a file someone left behind), a device such as ``/dev/zero`` never
    ends: neither is opened."""

    def __init__(self, path: str | Path, what: str):
        super().__init__(errno.EINVAL, f"not a regular file ({what})", str(path))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"


def open_regular(path: str | Path) -> BinaryIO:
    """Open ``path`` for reading in binary mode, only if it is a regular file (symlinks followed).

    The check is made on the opened descriptor (``fstat``), so nothing can swap the file in between; the open itself
    is non-blocking, which is what lets a FIFO be recognised instead of waited on.

    Raises:
        NotRegularFile: a FIFO, device, socket or folder (an ``OSError``: callers' ``except OSError`` apply).
        OSError: the file cannot be opened.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, _kind(st.st_mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def is_regular(path: str | Path) -> bool:
    """Whether ``path`` is a regular file (symlinks followed); False for anything that cannot be stat'ed."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_bytes(path: str | Path, limit: int = MAX_TEXT_BYTES) -> bytes:
    """A whole regular file, at most ``limit`` bytes.

    Raises:
        OSError: not a regular file (:class:`NotRegularFile`), unreadable, or larger than ``limit`` (``EFBIG``).
    """
    with open_regular(path) as fh:
        # read what the file holds, never ``limit`` bytes up front: read(n) reserves n bytes before reading, a
        # gigabyte of address space for every small JSON file (refused under a memory limit)
        # (a file that grows while read, or says size 0 as /proc does, is read on in bounded chunks)
        want = min(os.fstat(fh.fileno()).st_size, limit) + 1
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = fh.read(min(want, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            want = 1 << 20
        data = b"".join(chunks)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes, more than a trajectory file holds", str(path))
    return data


# -- counts -----------------------------------------------------------------------------------------------------

# The most steps one trajectory may claim. Real runs have tens to a few thousand steps; a count read from a file is
# checked against this before anything is built from it (a BrowserGym summary claiming 10**10 steps made the importer
# loop for ever, growing 29 MB/s).
MAX_STEPS = 100_000
# The largest image decoded, in pixels and on a side, checked from its header before decoding: a 1.2 MB PNG may
# declare 20000x20000 px (1.2 GB decoded). A screen of 8K (7680x4320) is 33 Mpx; OpenCV refuses sides over 2**20.
MAX_IMAGE_PIXELS = 50_000_000
MAX_IMAGE_SIDE = 65_535
# The most warnings kept on one trajectory (the rest are counted in a last one): a run with a hundred thousand
# missing screenshots says so in a hundred lines, not a hundred thousand.
MAX_WARNINGS = 100


def bounded_count(value: int, limit: int, what: str) -> int:
    """``value`` if it is a count in ``0..limit``.

    Raises:
        ValueError: a negative count or one above ``limit`` (callers turn it into a format error naming the field).
    """
    if value < 0:
        raise ValueError(f"expected a count >= 0, got {value}")
    if value > limit:
        raise ValueError(f"{clip(str(value), 40)} {what} is more than {limit:,}, the most this reads")
    return value


# -- what a load may read: the one door ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadScope:
    """What one load may read beyond the unit it was given (see :func:`load_scope`).

    Attributes:
        media: the folders media may be read from: the unit's own folder and the library's root. None (outside
            any :func:`load_scope` block) means the caller is Rollscope itself reading files it wrote (the recorder,
            the dataset builder, training), which may reference media anywhere.
        tasks_roots: the folders OSWorld task configs are looked for in (``--tasks-root``), exactly these; None:
            the user's default, ``$ROLLSCOPE_OSWORLD_TASKS_ROOT``
            (:func:`gui_app.core.trajectory.formats.osworld.tasks_roots`).
    """

    media: tuple[Path, ...] | None = None
    tasks_roots: tuple[Path, ...] | None = None


_SCOPE: ContextVar[LoadScope] = ContextVar("rollscope_load_scope", default=LoadScope())


# The folders :func:`confine` resolved in the current load_scope block, by name: a run of 100,000 steps names its
# screenshots in one or two folders, and resolving each one's path from the root (an lstat per component) took a
# fifth of its load. Kept for one block (one load) only, so a folder changed later is resolved again.
_REAL_DIRS: ContextVar[dict[str, str] | None] = ContextVar("rollscope_real_dirs", default=None)


@contextmanager
def load_scope(media: Sequence[str | Path | None],
               tasks_roots: Sequence[str | Path] | None = None) -> Iterator[None]:
    """Within this block, :func:`confine` accepts media only inside the folders ``media`` (symlinks resolved; None
    entries are skipped), and OSWorld task configs are looked for in ``tasks_roots`` (None: the user's default).

    The one door through which configuration reaches the importers (see the module's docstring): opened by
    :func:`gui_app.core.trajectory.formats.load_unit` only, from its arguments.
    """
    real = tuple(Path(os.path.realpath(r)) for r in media if r is not None)
    tasks = None if tasks_roots is None else tuple(Path(r).expanduser() for r in tasks_roots)
    token = _SCOPE.set(LoadScope(real, tasks))
    dirs = _REAL_DIRS.set({})
    try:
        yield
    finally:
        _REAL_DIRS.reset(dirs)
        _SCOPE.reset(token)


def scope() -> LoadScope:
    """The scope of the load running now (:func:`load_scope`); the default one outside any."""
    return _SCOPE.get()


def _realpath(path: str | Path) -> str:
    """``os.path.realpath(path)``, its folder's resolution remembered within a :func:`load_scope` block: the folder
    resolved once, then the name itself followed only when it is a symlink."""
    text = os.fspath(path)
    known = _REAL_DIRS.get()
    head, tail = os.path.split(text)
    if known is None or not head or tail in ("", ".", "..") or "\0" in text:
        return os.path.realpath(text)  # (a NUL raises here, as the caller expects)
    folder = known.get(head)
    if folder is None:
        folder = known[head] = os.path.realpath(head)
    full = os.path.join(folder, tail)
    return os.path.realpath(full) if os.path.islink(full) else full


def confine(path: str | Path, warnings: list[str], where: str) -> Path | None:
    """``path`` resolved (symlinks followed), if it lies inside the media folders of :func:`load_scope`; else None
    and a warning naming ``where`` (the file and field that named it).

    A screenshot named ``/etc/shadow``, ``../../etc/passwd`` or ``/proc/self/environ``, or a symlink in the folder
    that points out of it, is never opened: a trajectory shared with you must not make Rollscope read (and show, or
    export) your files.
    """
    try:
        real_text = _realpath(path)
    except (ValueError, OSError) as exc:  # a NUL byte or a lone surrogate in the name, a name too long
        warnings.append(clip(f"{where}: not a usable file name ({type(exc).__name__}): {str(path)[:100]!r}"))
        return None
    real = Path(real_text)
    roots = _SCOPE.get().media
    # Compared as text (pathlib's is_relative_to parses both paths each time): equal, or below it.
    if roots is None or any(real_text == str(r) or real_text.startswith(os.path.join(str(r), "")) for r in roots):
        return real
    shown = clip(str(path), 200)
    warnings.append(clip(f"{where}: {shown} is outside the trajectory's folder"
                         f"{' and the library' if len(roots) > 1 else ''}; not opened"))
    return None


# -- recordings -------------------------------------------------------------------------------------------------


def video_kind(data: bytes) -> str | None:
    """The container type from its first bytes (mp4/mov, matroska/webm, avi), or None."""
    if data[4:8] == b"ftyp":
        return "mp4"
    if data.startswith(b"\x1a\x45\xdf\xa3"):
        return "matroska"
    if data[:4] == b"RIFF" and data[8:11] == b"AVI":
        return "avi"
    return None


ZERO_TIME_SCALE = "damaged MP4 (a track's 'mdhd' box gives a time scale 0: its frames have no times)"


def time_scale_problem(path: str | Path) -> str | None:
    """:data:`ZERO_TIME_SCALE` when the MP4/MOV ``path`` has a track of time scale 0, else None (other files, and
    damage FFmpeg can see for itself: the check a decoder opening a recording makes, where a file cut short may still
    give its first frames)."""
    try:
        with open_regular(path) as fh:
            if video_kind(fh.read(16)) != "mp4":
                return None
            size = os.fstat(fh.fileno()).st_size
            for name, start, end in _boxes(fh, 0, size):
                if name == b"moov":
                    return ZERO_TIME_SCALE if _zero_time_scale(fh, start, end) else None
    except OSError:
        return None
    return None


def _boxes(fh: BinaryIO, start: int, end: int) -> Iterator[tuple[bytes, int, int]]:
    """``(type, payload start, end)`` of the MP4 boxes between ``start`` and ``end`` (at most 256; a box that does not
    fit ends the walk: :func:`container_problem` judges the top level)."""
    at = start
    for _ in range(256):
        if at + 8 > end:
            return
        name, n, header = _box_header(fh, at, end)
        if n < header or at + n > end:
            return
        yield name, at + header, at + n
        at += n


def _box_header(fh: BinaryIO, at: int, end: int) -> tuple[bytes, int, int]:
    """``(type, size, header size)`` of the MP4 box at byte ``at``; a size of 0 runs to ``end``."""
    fh.seek(at)
    head = fh.read(16)
    n, name, header = int.from_bytes(head[:4], "big"), head[4:8], 8
    if n == 1 and len(head) >= 16:
        n, header = int.from_bytes(head[8:16], "big"), 16
    elif n == 0:
        n = end - at  # the last box runs to the end
    return name, n, header


def _zero_time_scale(fh: BinaryIO, start: int, end: int) -> bool:
    """Whether a track in the ``moov`` payload ``[start, end)`` has an ``mdhd`` (moov/trak/mdia/mdhd) whose time scale
    is 0."""
    for trak, a, b in _boxes(fh, start, end):
        if trak != b"trak":
            continue
        for mdia, a2, b2 in _boxes(fh, a, b):
            if mdia != b"mdia":
                continue
            for mdhd, a3, _ in _boxes(fh, a2, b2):
                if mdhd != b"mdhd":
                    continue
                fh.seek(a3)
                body = fh.read(24)
                # version and flags (4 bytes), creation and modification times (4 bytes each, 8 in version 1), then
                # the time scale
                at = 20 if body[:1] == b"\x01" else 12
                if len(body) >= at + 4 and int.from_bytes(body[at:at + 4], "big") == 0:
                    return True
    return False


def container_problem(path: str | Path) -> str | None:
    """Why the regular file ``path`` cannot be a whole recording, or None when it may be one; reads a few hundred
    bytes, decodes nothing (cheap enough for every unit of a scan).

    Empty, text or another kind of file: its first bytes are no container's. An MP4/MOV is also walked box by box
    (``size`` + ``type`` headers, a handful per file): a box that runs past the end of the file, or no ``moov``
    box (the index of the frames), means the file was cut short. A track whose ``mdhd`` box gives a time scale of 0
    has frames without times (FFmpeg then makes up a clock: one frame lasting 1,024 s), so the file is damaged.
    """
    try:
        with open_regular(path) as fh:
            kind = video_kind(fh.read(16))
            if kind is None:
                return "not a video file (no MP4, Matroska/WebM or AVI header)"
            if kind != "mp4":
                return None
            size = os.fstat(fh.fileno()).st_size
            at, boxes = 0, set[bytes]()
            moov = (0, 0)
            while at + 8 <= size and len(boxes) < 64:
                name, n, header = _box_header(fh, at, size)
                if n < 8:
                    return f"damaged MP4 (box {name!r} of size {n} at byte {at})"
                if at + n > size:
                    return f"cut short (its {name.decode('latin-1')!r} box needs {at + n - size:,} more bytes)"
                boxes.add(name)
                if name == b"moov":
                    moov = (at + header, at + n)
                at += n
            if b"moov" not in boxes:
                return "cut short or damaged (no 'moov' box: the index of its frames)"
            if _zero_time_scale(fh, *moov):
                return ZERO_TIME_SCALE
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None


# C0 and C1 controls, ESC and DEL included; the bidirectional marks, embeddings, overrides and isolates; the line
# and paragraph separators. Each can move the cursor, retitle or clear a terminal, hide text, reorder what is shown
# or start a new line that a reader takes for the program's own.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group()
    return _SHORT_ESCAPES.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def printable(text: object) -> str:
    """``str(text)`` safe to print on a terminal: the characters above shown as visible escapes (``\\x1b``,
    ``\\n``, ``\\u202e``), everything else unchanged. Every human-readable line made of text from a file goes through
    it (JSON output is escaped by ``json.dumps`` already)."""
    return _UNPRINTABLE.sub(_escape_char, str(text))


def os_reason(exc: OSError) -> str:
    """Why a path could not be opened, in words: a symlink loop is named as one (Python's "Too many levels of
    symbolic links" reads like a limit, and a loop otherwise shows as "no such file")."""
    if exc.errno == errno.ELOOP:
        return "symlink loop: a link that leads back to itself"
    return str(exc.strerror or exc)


def why_missing(path: str | Path) -> str:
    """Why ``path``, which ``os.path.exists`` calls missing, cannot be reached: "no such file or directory", a
    symlink loop, a broken symlink (and where it points), or what ``stat`` says."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.islink(path):
            try:
                return f"broken symlink (to {clip(os.readlink(path), 200)})"
            except OSError:
                return "broken symlink"
        if exc.errno == errno.ENOENT:
            return "no such file or directory"
        return os_reason(exc)
    except ValueError:  # a NUL byte in the name
        return "not a usable file name"
    return "no such file or directory"
