"""Guards for reading files we did not write: the one place that says how much of a hostile file we will read.

Users bring folders from anywhere; a file may be truncated, enormous, nested ten thousand levels deep, a FIFO that
never ends, or name ``/etc/shadow`` as its screenshot. Every importer reads through these helpers, so each limit is
set (and tested) once:

- :func:`parse_json`: JSON whose numbers, nesting or syntax Python cannot take becomes one :class:`BadJSON` line
  (``json.loads`` raises ``ValueError`` for a 5,000-digit integer and ``RecursionError`` for deep nesting, neither of
  them a ``JSONDecodeError``).
- :func:`open_regular` / :func:`read_bytes`: only regular files are opened (a FIFO blocks for ever, ``/dev/zero``
  never ends), and whole-file reads stop at :data:`MAX_TEXT_BYTES`.
- :func:`bounded_count`: a count read from a file (steps, frames) is checked before anything is built from it.
- :func:`confine` / :func:`media_roots`: media named by a trajectory are opened only inside its folder or the
  library's root, symlinks resolved.
- Media probes have a time limit (:data:`PROBE_TIMEOUT_S`, applied by :mod:`gui_app.core.video`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, BinaryIO

from gui_app.core.errors import clip


class BadJSON(ValueError):
    """Text that does not parse as JSON we can hold: ``reason`` in words, and the line when known."""

    def __init__(self, reason: str, line: int | None = None):
        self.reason, self.line = reason, line
        super().__init__(reason)


_DIGITS = re.compile(r"Exceeds the limit \((\d+) digits\)")


def parse_json(text: str | bytes) -> Any:
    """``json.loads(text)``, every failure a :class:`BadJSON`.

    Raises:
        BadJSON: invalid syntax (with line and column), an integer longer than Python converts (4,300 digits), or
            nesting deeper than the interpreter's recursion limit allows (about 1,000 levels).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJSON(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise BadJSON(f"JSON nested too deeply (over about {sys.getrecursionlimit()} levels)") from None
    except ValueError as exc:  # int('9' * 5000): Python's guard against quadratic-time conversions
        m = _DIGITS.search(str(exc))
        why = f"a number longer than {m.group(1)} digits" if m else clip(str(exc), 120)
        raise BadJSON(f"invalid JSON: {why}") from None


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
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes, more than a trajectory file holds", str(path))
    return data


# -- counts -----------------------------------------------------------------------------------------------------

# The most steps one trajectory may claim. Real runs have tens to a few thousand steps; a count read from a file is
# checked against this before anything is built from it (a BrowserGym summary claiming 10**10 steps made the importer
# loop for ever, growing 29 MB/s).
MAX_STEPS = 100_000
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


# -- media paths ------------------------------------------------------------------------------------------------

# The folders media may be read from while a trajectory loads: its own folder and the library's root. None (the
# default) means the caller is Rollscope itself reading files it wrote (the recorder, the dataset builder, training),
# which may reference media anywhere; gui_app.core.formats sets it for every user-facing load.
_MEDIA_ROOTS: ContextVar[tuple[Path, ...] | None] = ContextVar("rollscope_media_roots", default=None)


@contextmanager
def media_roots(*roots: str | Path | None) -> Iterator[None]:
    """Within this block, :func:`confine` accepts media only inside ``roots`` (symlinks resolved)."""
    real = tuple(Path(os.path.realpath(r)) for r in roots if r is not None)
    token = _MEDIA_ROOTS.set(real)
    try:
        yield
    finally:
        _MEDIA_ROOTS.reset(token)


def confine(path: str | Path, warnings: list[str], where: str) -> Path | None:
    """``path`` resolved (symlinks followed), if it lies inside the folders of :func:`media_roots`; else None and a
    warning naming ``where`` (the file and field that named it).

    A screenshot named ``/etc/shadow``, ``../../etc/passwd`` or ``/proc/self/environ``, or a symlink in the folder
    that points out of it, is never opened: a trajectory shared with you must not make Rollscope read (and show, or
    export) your files.
    """
    try:
        real = Path(os.path.realpath(path))
    except (ValueError, OSError) as exc:  # a NUL byte or a lone surrogate in the name, a name too long
        warnings.append(clip(f"{where}: not a usable file name ({type(exc).__name__}): {str(path)[:100]!r}"))
        return None
    roots = _MEDIA_ROOTS.get()
    if roots is None or any(real == r or real.is_relative_to(r) for r in roots):
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


def container_problem(path: str | Path) -> str | None:
    """Why the regular file ``path`` cannot be a whole recording, or None when it may be one; reads a few hundred
    bytes, decodes nothing (cheap enough for every unit of a scan).

    Empty, text or another kind of file: its first bytes are no container's. An MP4/MOV is also walked box by box
    (``size`` + ``type`` headers, a handful per file): a box that runs past the end of the file, or no ``moov``
    box (the index of the frames), means the file was cut short.
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
            while at + 8 <= size and len(boxes) < 64:
                fh.seek(at)
                head = fh.read(16)
                n, name = int.from_bytes(head[:4], "big"), head[4:8]
                if n == 1 and len(head) >= 16:
                    n = int.from_bytes(head[8:16], "big")
                elif n == 0:
                    n = size - at  # the last box runs to the end of the file
                if n < 8:
                    return f"damaged MP4 (box {name!r} of size {n} at byte {at})"
                if at + n > size:
                    return f"cut short (its {name.decode('latin-1')!r} box needs {at + n - size:,} more bytes)"
                boxes.add(name)
                at += n
            if b"moov" not in boxes:
                return "cut short or damaged (no 'moov' box: the index of its frames)"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None
