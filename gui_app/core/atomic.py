"""Writing files and folders so that a reader, or a process killed half-way, never sees half of one.

A file is written under a temporary name beside its target and renamed over it (:func:`publish_file`); a folder
(a Hugging Face dataset, a train/test split) is built whole beside its target and swapped with it
(:func:`publish_folder`): with Linux's ``renameat2(RENAME_EXCHANGE)`` the swap is one atomic step; elsewhere the old
folder is renamed aside first, and a later call puts it back if the process died between the two renames.

Temporary names carry the writer's process id (``.NAME.PID.tmp``), so a later call can tell the leftovers of a
killed writer (its process is gone: removed) from the work of one still running (kept).
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, but belongs to someone else
    return True


def _temp(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.{kind}")


def _owner(leftover: Path, target: Path, kind: str) -> int | None:
    """The process id in a leftover's name ``.NAME.PID.KIND``, or None when it is not one of ours."""
    middle = leftover.name[len(target.name) + 2:-(len(kind) + 1)]
    return int(middle) if middle.isdigit() else None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clean_leftovers(target: Path) -> list[Path]:
    """Tidy what writers of ``target`` that were killed left beside it; returns what was removed or restored.

    An old folder set aside by a swap that never finished (``.NAME.PID.old``) is put back when ``target`` is
    missing; other leftovers of dead processes are deleted. Leftovers of live processes are not touched.
    """
    done: list[Path] = []
    parent = target.parent
    if not parent.is_dir():
        return done
    for kind in ("old", "tmp"):
        for leftover in sorted(parent.glob(f".{_glob_escape(target.name)}.*.{kind}")):
            pid = _owner(leftover, target, kind)
            if pid is None or pid_alive(pid):
                continue
            if kind == "old" and not os.path.lexists(target):
                os.rename(leftover, target)  # the swap died between its two renames: the old folder comes back
            else:
                _remove(leftover)
            done.append(leftover)
    legacy = target.with_name(target.name + ".tmp")  # what writers before this module left
    if legacy.is_file():
        legacy.unlink(missing_ok=True)
        done.append(legacy)
    return done


def _glob_escape(name: str) -> str:
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in name)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_file(target: Path, write: Callable[[Path], T]) -> T:
    """Call ``write(tmp)`` to write the whole file under a temporary name, then rename it over ``target``.

    Raises:
        OSError: the file could not be written (nothing at ``target`` changed; the temporary file is gone).
    """
    clean_leftovers(target)
    tmp = _temp(target, "tmp")
    try:
        result = write(tmp)
        _fsync(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            _remove(tmp)
    return result


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step (Linux ``renameat2``); False where the system cannot."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False  # this filesystem or kernel cannot exchange: the caller renames in two steps
    raise OSError(err, os.strerror(err), str(b))


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def publish_folder(target: Path, write: Callable[[Path], T], ours: Callable[[Path], bool]) -> T:
    """Build the folder ``target`` whole, then swap it in for the old one.

    Args:
        target: the folder to (re)write.
        write: called with the new folder (empty but for what is carried over) to write every file of ours.
        ours: whether an existing file of ``target`` (its path relative to it) is one ``write`` writes: those are
            left behind with the old folder; everything else in it (a ``.git``, a licence) is carried over into the
            new one (hard links where the filesystem allows, else copies).

    Raises:
        OSError: the folder could not be written, or ``target`` is a symbolic link (``target`` is unchanged; the
            half-built folder is gone).
    """
    if target.is_symlink():
        # Never through a link: the folder it names may be anyone's (a library, a home folder), and swapping the link
        # itself would leave that folder's files behind. The caller names the folder it means.
        raise OSError(errno.ELOOP, "is a symbolic link; a folder is never written through one", str(target))
    clean_leftovers(target)
    tmp = _temp(target, "tmp")
    _remove(tmp)
    try:
        if target.is_dir():
            def ignore(folder: str, names: list[str]) -> set[str]:
                rel = Path(folder).relative_to(target)
                return {n for n in names if not (Path(folder) / n).is_dir() and ours(rel / n)}

            shutil.copytree(target, tmp, symlinks=True, ignore=ignore, copy_function=_link_or_copy)
        else:
            tmp.mkdir()
        result = write(tmp)
        for folder, _dirs, files in os.walk(tmp):
            for name in files:
                _fsync(Path(folder) / name)
        _swap_in(tmp, target)
    finally:
        if os.path.lexists(tmp):
            _remove(tmp)
    return result


def _swap_in(new: Path, target: Path) -> None:
    """Put the folder ``new`` at ``target``; the old one ends up at ``new`` (then removed by the caller)."""
    if not os.path.lexists(target):
        os.rename(new, target)
        return
    if exchange(new, target):
        return
    aside = _temp(target, "old")
    os.rename(target, aside)
    os.rename(new, target)  # killed before this line: clean_leftovers() puts the old folder back
    os.rename(aside, new)
