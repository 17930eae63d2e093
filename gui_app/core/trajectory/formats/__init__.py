"""Importers for the trajectory formats users bring, and content-based detection.

Each importer module defines a module-level ``IMPORTER`` implementing :class:`Importer`. Detection asks every
importer how sure it is (``sniff``) from the content, not only the name, and picks the surest.

A *unit* is what one importer reads: a directory (native, OSWorld, WebVoyager, BrowserGym/AgentLab, Harbor trial,
raw AgentNet recording, video + step log, screenshot folder) or a file (ATIF JSON, AgentNet JSONL, AgentNetBench JSON,
Who&When JSON/JSONL, Inspect ``.eval``). A unit may hold several trajectories (AgentNet JSONL: one per line; an
Inspect log: one per sample); one of them is addressed as ``PATH#N`` (0-based).
"""

from __future__ import annotations

import importlib
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from gui_app.core.trajectory.actions import MAX_PARSED_CHARS
from gui_app.core.errors import RollscopeError, TrajectoryFormatError, UnknownFormatError, clip
from gui_app.core.trajectory.identity import trajectory_key
from gui_app.core.media.video import VIDEO_SUFFIXES
from gui_app.core.safety import MAX_STEPS, MAX_WARNINGS, duplicate_keys, load_scope, why_missing
from gui_app.core.trajectory.model import Trajectory

T = TypeVar("T")
TasksRoots = Sequence[str | Path] | None  # OSWorld task roots given to a load; None: the user's (osworld.tasks_roots)

# Order matters only to break ties in sniff scores: more specific formats first.
_MODULES = ("native", "osworld", "osworld_trace", "webvoyager", "browsergym", "harbor", "atif", "agentnet",
            "agentnetbench", "agentnet_recording", "inspect_eval", "whowhen", "plain_video", "image_folder")

# Directories never descended into while scanning. ``evaluation_examples`` holds OSWorld task configs: not runs,
# but the instructions the runs beside it are read with (osworld.find_task_config), so they are not "unrecognised".
SKIP_DIRS = {".rollscope", ".git", "__pycache__", ".venv", "node_modules", "evaluation_examples"}


class Importer(Protocol):
    name: str

    def sniff(self, path: Path) -> float:
        """How sure (0..1) this importer is that ``path`` is a unit of its format. Must be cheap: read at
        most a few KB, never decode video. Must not raise for unrelated paths."""

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:
        """Every trajectory in the unit. Raises TrajectoryFormatError (file, line, field) on bad input.

        ``align=False`` skips aligning steps to a recording when the format stores no step times (OSWorld,
        BrowserGym): that pass decodes the whole video, which a scan that only lists runs should not pay for."""


_registry: list[Importer] | None = None


def importers() -> list[Importer]:
    global _registry
    if _registry is None:
        _registry = [importlib.import_module(f"gui_app.core.trajectory.formats.{m}").IMPORTER for m in _MODULES]
    return _registry


def by_name(name: str) -> Importer:
    """The importer called ``name``.

    Raises:
        UnknownFormatError: no importer has that name (``inspect --format`` with a typo).
    """
    for imp in importers():
        if imp.name == name:
            return imp
    raise UnknownFormatError(name, f"no importer named {name!r} (known: {', '.join(i.name for i in importers())})")


class ImporterBugError(RollscopeError):
    """An importer failed in a way it did not mean to (a bug, not a verdict on the file): still one line naming the
    file, so the user sees which file and a scan goes on. Not a :class:`TrajectoryFormatError`, so tests that accept
    only a verdict on the file, and the fuzz suite, count it as the failure it is."""

    def __init__(self, path: str | Path, reason: str):
        self.path, self.reason = str(path), clip(reason)
        super().__init__(f"{path}: {self.reason}")


def guarded(path: Path, fn: Callable[[], T]) -> T:
    """Run ``fn`` (an importer reading ``path``) so that whatever it meets ends as a :class:`RollscopeError`.

    Nesting too deep for the interpreter and files too big for memory are verdicts on the file; anything else not
    raised on purpose is an :class:`ImporterBugError`.
    """
    try:
        return fn()
    except RollscopeError:
        raise
    except RecursionError:
        raise TrajectoryFormatError(path, None, "nested too deeply to read") from None
    except MemoryError:
        raise TrajectoryFormatError(path, None, "too large to read into memory") from None
    except Exception as exc:  # noqa: BLE001 -- one line naming the file instead of a traceback
        raise ImporterBugError(path, f"could not be read (importer error {type(exc).__name__}: "
                                           f"{clip(str(exc), 200)})") from exc


def detect(path: str | Path) -> Importer | None:
    """The importer surest about ``path`` (score > 0), or None. A sniff that fails counts as 0: one importer
    tripping over a hostile file must not stop the others (or a scan) from classifying it."""
    p = Path(path)
    best, best_score = None, 0.0
    for imp in importers():
        try:
            score = imp.sniff(p)
        except Exception:  # noqa: BLE001 -- sniff must never raise; if it does, it does not recognise the file
            score = 0.0
        if score > best_score:
            best, best_score = imp, score
    return best


def split_selector(path: str | Path) -> tuple[Path, int | None]:
    """``file.jsonl#3`` -> (file.jsonl, 3); a path without selector -> (path, None)."""
    s = str(path)
    if "#" in s:
        base, _, sel = s.rpartition("#")
        if sel.isdigit() and Path(base).exists():
            return Path(base), int(sel)
    return Path(s), None


def load_all(path: str | Path, fmt: str | None = None, align: bool = True,
             library_root: str | Path | None = None, tasks_roots: TasksRoots = None) -> list[Trajectory]:
    """Every trajectory at ``path`` (format detected unless ``fmt`` names it); see :meth:`Importer.load_all`
    for ``align`` and :func:`load_unit` for ``library_root`` and ``tasks_roots``."""
    p, _ = split_selector(path)
    if not p.exists():
        raise TrajectoryFormatError(p, None, why_missing(p))  # a symlink loop is named as one
    imp = by_name(fmt) if fmt else detect(p)
    if imp is None:
        raise UnknownFormatError(p)
    return load_unit(p, imp, align, library_root, tasks_roots)


def load_unit(path: Path, imp: Importer, align: bool = True, library_root: str | Path | None = None,
              tasks_roots: TasksRoots = None) -> list[Trajectory]:
    """``imp.load_all(path)``, as every user-facing load runs it (see :func:`_user_load`); ``tasks_roots``: where
    OSWorld task configs are looked for (a command's ``--tasks-root``), None for the user's default
    (:func:`gui_app.core.trajectory.formats.osworld.tasks_roots`)."""
    return _user_load(path, lambda: imp.load_all(path, align=align), library_root, tasks_roots=tasks_roots)


def _user_load(path: Path, read: Callable[[], list[Trajectory]], library_root: str | Path | None,
               selector: int | None = None, tasks_roots: TasksRoots = None) -> list[Trajectory]:
    """Run an importer's ``read`` of the unit ``path`` (``selector``: the one trajectory ``PATH#N`` it reads) for a
    user:

    - Each trajectory gets its key (:attr:`Trajectory.key`): ``PATH``, or ``PATH#N`` in a unit of several, within
      ``library_root`` (:func:`gui_app.core.trajectory.identity.trajectory_key`).
    - Media are read only inside the unit's folder or ``library_root`` (:func:`gui_app.core.safety.confine`);
      one named anywhere else is refused with a warning naming the field. These folders and ``tasks_roots`` reach
      the importers through :func:`gui_app.core.safety.load_scope`, opened here and nowhere else.
    - Every failure is a one-line :class:`RollscopeError` naming the file (see :func:`guarded`).
    - A key repeated in one JSON object, and an action too long to parse as code, are warnings naming the file and
      the key, or the steps and the field (see :func:`gui_app.core.safety.duplicate_keys` and
      :data:`gui_app.core.trajectory.actions.MAX_PARSED_CHARS`).
    - Every warning is one line of bounded length, and at most :data:`~gui_app.core.safety.MAX_WARNINGS` are kept
      (the last one counts the rest).
    """
    unit_dir = path if path.is_dir() else path.parent
    with load_scope((unit_dir, library_root), tasks_roots), duplicate_keys() as repeated:
        trajs = guarded(path, read)
    for i, t in enumerate(trajs):
        n = selector if selector is not None else i if len(trajs) > 1 else None
        t.key = trajectory_key(str(path) if n is None else f"{path}#{n}", library_root)
        if len(t.steps) > MAX_STEPS:  # formats that hold steps in one JSON array: the importers cap JSON Lines
            t.warnings.append(f"{t.source_path}: {len(t.steps):,} steps, more than a run holds: the first "
                              f"{MAX_STEPS:,} kept")
            del t.steps[MAX_STEPS:]
        t.warnings[:0] = [w for w in repeated if w not in t.warnings]
        t.warnings.extend(_long_actions(t))
        warnings = [clip(str(w)) for w in t.warnings[:MAX_WARNINGS]]
        if len(t.warnings) > MAX_WARNINGS:
            warnings.append(f"{t.source_path}: and {len(t.warnings) - MAX_WARNINGS:,} more warnings")
        t.warnings = warnings
    return trajs


def _long_actions(traj: Trajectory) -> list[str]:
    """One warning naming the steps whose action was too long to parse as code (read from its first words only)."""
    long = [s for s in traj.steps if len(s.action or "") > MAX_PARSED_CHARS]
    if not long:
        return []
    listed = ", ".join(f"{s.index} ({len(s.action):,} characters)" for s in long[:10])
    more = f" and {len(long) - 10:,} more" if len(long) > 10 else ""
    steps = "steps" if len(long) > 1 else "step"
    return [(f"{traj.source_path}: field 'action' of {steps} {listed}{more}: longer than {MAX_PARSED_CHARS:,} "
             "characters, not parsed as code; its kind read from its first words only")]


def load(path: str | Path, fmt: str | None = None, align: bool = True,
         library_root: str | Path | None = None, tasks_roots: TasksRoots = None) -> Trajectory:
    """One trajectory: the unit's only one, or ``PATH#N`` for the N-th of a multi-trajectory file (read alone
    when the importer can: an Inspect log of a thousand samples need not parse them all to show one). Media are
    read only inside its folder or ``library_root``; OSWorld task configs in ``tasks_roots`` (see
    :func:`load_unit`)."""
    p, sel = split_selector(path)
    if sel is not None:
        if not p.exists():
            raise TrajectoryFormatError(p, None, why_missing(p))
        imp = by_name(fmt) if fmt else detect(p)
        if imp is None:
            raise UnknownFormatError(p)
        load_one = getattr(imp, "load_one", None)
        if load_one is not None:
            return _user_load(p, lambda: [load_one(p, sel, align=align)], library_root, sel, tasks_roots)[0]
    trajs = load_all(p, fmt, align, library_root, tasks_roots)
    if not trajs:
        raise TrajectoryFormatError(p, None, "holds no trajectory")
    if sel is None:
        return trajs[0]
    if sel >= len(trajs):
        raise TrajectoryFormatError(p, None, f"has {len(trajs)} trajectories, no #{sel}")
    return trajs[sel]


FILE_UNITS = {"atif", "agentnet", "whowhen", "inspect", "agentnetbench"}
# Files that look like data a user meant us to read: when none of the importers claims one, a scan says so.
CANDIDATE_EXTS = (".json", ".jsonl", ".eval", ".csv", ".zip", ".pkl", ".gz") + VIDEO_SUFFIXES

UnrecognisedFn = Callable[[Path, str], None]
Signature = tuple[int, int, int]


def signature(path: str | Path, entries: list[os.DirEntry[str]] | None = None) -> Signature:
    """(size, mtime_ns, n_entries) of a file or folder, cheap enough to compute for every unit and folder on every
    rescan: what tells a scan that nothing changed.

    A folder counts its own mtime (it changes when entries are added, removed or atomically replaced) and the mtimes
    and sizes of its direct entries (``entries``, when the caller has listed them already); deeper files
    (``frames/*.png``) are covered by their folder's mtime.

    Raises:
        OSError: ``path`` cannot be read.
    """
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size, st.st_mtime_ns, 1
    if entries is None:
        with os.scandir(path) as it:
            entries = list(it)
    size, mtime, n = 0, st.st_mtime_ns, 0
    for e in entries:
        n += 1
        try:
            est = e.stat()
        except OSError:  # a dangling symlink: counted, but has no size or mtime of its own
            continue
        mtime = max(mtime, est.st_mtime_ns)
        if e.is_file():
            size += est.st_size
    return size, mtime, n


@dataclass(frozen=True)
class FolderWalk:
    """What a walk decided for one folder, with the folder's :func:`signature` when it decided.

    Attributes:
        signature: the folder's signature then.
        importer: the importer that claimed the folder as a unit; None when none did (it was walked into).
        files: for a folder walked into, the importer that claimed each direct file (None: none did).
        entries: for a unit, the names of its direct entries: a rescan checks its signature by their stats alone,
            without listing the folder (:func:`unit_signature`).
    """

    signature: Signature
    importer: str | None
    files: dict[str, str | None] = field(default_factory=dict)
    entries: tuple[str, ...] = ()


def unit_signature(path: str, entries: Sequence[str]) -> Signature | None:
    """:func:`signature` of the folder ``path`` from the stats of the folder and of ``entries``, the names its
    listing held when a walk last saw it, without listing it again: one ``stat`` per entry instead of reading the
    folder (with :func:`walk_units`, a rescan of 100,000 unchanged runs: 4.1 -> 2.8 s). The same value as
    :func:`signature` while the folder holds the same names: adding, removing or renaming one changes the folder's
    own modification time, past every time it held before, which the signature's largest time then shows. None when
    an entry cannot be looked at (gone, a dangling symlink): the folder is then listed as usual."""
    try:
        size, mtime = 0, os.stat(path).st_mtime_ns
        for name in entries:
            st = os.stat(os.path.join(path, name))
            mtime = max(mtime, st.st_mtime_ns)
            if stat.S_ISREG(st.st_mode):
                size += st.st_size
    except OSError:
        return None
    return size, mtime, len(entries)


def _named(name: str | None) -> Importer | None:
    if name is None:
        return None
    try:
        return by_name(name)
    except UnknownFormatError:
        return None


def find_units(root: str | Path, unrecognised: UnrecognisedFn | None = None,
               memo: Mapping[str, FolderWalk] | None = None,
               seen: dict[str, FolderWalk] | None = None) -> Iterator[tuple[Path, Importer]]:
    """Walk ``root`` and yield every unit with its importer: :func:`walk_units`, each unit as a Path."""
    for path, imp in walk_units(root, unrecognised, memo, seen):
        yield Path(path), imp


def walk_units(root: str | Path, unrecognised: UnrecognisedFn | None = None,
               memo: Mapping[str, FolderWalk] | None = None,
               seen: dict[str, FolderWalk] | None = None) -> Iterator[tuple[str, Importer]]:
    """Walk ``root`` and yield every unit (its path as text: a scan of 100,000 units stores text, and building a
    Path for each cost it 0.6 s) with its importer. A recognised directory is not descended into; files are units
    only for the file formats (ATIF, AgentNet, Who&When, Inspect, AgentNetBench).

    Args:
        root: the folder (or one file) to walk.
        unrecognised: called as ``unrecognised(path, why)`` for what the walk passes over without a unit: a data
            file (:data:`CANDIDATE_EXTS`) no importer claims, a folder with files but no unit in or under it, and a
            hidden folder that is not searched. Nothing is dropped in silence: a scan counts these.
        memo: what an earlier walk decided per folder (by path): a folder whose :func:`signature` did not change
            keeps its decisions (whether it is a unit, which of its files are) without asking every importer
            again, which is most of a rescan's time. A unit is then not even listed (:func:`unit_signature`); a
            folder walked into is listed, and its subfolders walked.
        seen: filled with this walk's decision for every folder it lists, for the next walk's ``memo``.
    """
    root = Path(root)
    if root.is_file():
        imp = detect(root)
        if imp is not None:
            yield str(root), imp
        elif unrecognised is not None:
            unrecognised(root, "no importer recognises this file")
        return
    # (directory, whether its parent holds file units): a screenshot folder beside an ATIF/AgentNet file holds
    # that file's images, so it is not a unit of its own.
    # Paths are kept as text until a Path is needed (an importer's sniff, a unit, a report): most folders of a rescan
    # need none, and building 50,000 Paths was a third of its time.
    stack = [(str(root), False)]
    keep = memo is not None or seen is not None
    while stack:
        d, beside_files = stack.pop()
        known = memo.get(d) if memo is not None else None
        if known is not None and known.importer is not None and known.entries \
                and unit_signature(d, known.entries) == known.signature:
            imp = _named(known.importer)
            if imp is not None:  # an unchanged unit, found without listing its folder
                if seen is not None:
                    seen[d] = known
                if not (beside_files and imp.name == "image_folder"):
                    yield d, imp
                continue
        entries: list[os.DirEntry[str]] | None
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            entries = None
        sig: Signature | None = None
        if keep and entries is not None:
            try:
                sig = signature(d, entries)
            except OSError:
                sig = None
        old = memo.get(d) if memo is not None and sig is not None else None
        if old is not None and old.signature != sig:
            old = None
        imp = _named(old.importer) if old is not None and old.importer is not None else None
        if imp is None and (old is None or old.importer is not None):
            imp = detect(Path(d))
        if imp is not None:
            if seen is not None and sig is not None:
                seen[d] = FolderWalk(sig, imp.name, entries=tuple(e.name for e in entries or ()))
            if not (beside_files and imp.name == "image_folder"):
                yield d, imp
            continue
        if entries is None:
            if unrecognised is not None:
                unrecognised(Path(d), "folder cannot be read")
            continue
        decided: dict[str, str | None] = {}
        subdirs = []
        has_files = False
        loose = []
        for e in entries:
            if e.name in SKIP_DIRS:
                continue
            if e.name.startswith("."):
                if unrecognised is not None and e.is_dir(follow_symlinks=False):
                    unrecognised(Path(e.path), "hidden folder, not searched")
                continue
            if e.is_dir(follow_symlinks=False):
                subdirs.append(e.path)
            elif e.is_symlink() and unrecognised is not None and not os.path.exists(e.path):
                why = why_missing(e.path)
                if why.startswith("symlink loop"):  # links are not followed; a loop is still worth saying
                    unrecognised(Path(e.path), why)
            elif e.is_file(follow_symlinks=False):
                if old is not None and old.importer is None and e.name in old.files:
                    found = _named(old.files[e.name])
                else:
                    found = detect(Path(e.path))
                decided[e.name] = None if found is None else found.name
                if found is not None and found.name in FILE_UNITS:
                    has_files = True
                    yield e.path, found
                elif os.path.splitext(e.name)[1].lower() in CANDIDATE_EXTS:
                    loose.append(Path(e.path))
        if unrecognised is not None:
            for f in loose:
                unrecognised(f, "no importer recognises this file")
            if not subdirs and not has_files and not loose and d != str(root) and any(e.is_file() for e in entries):
                unrecognised(Path(d), "folder holds no trajectory")
        if seen is not None and sig is not None:
            seen[d] = FolderWalk(sig, None, decided)
        stack.extend((s, has_files) for s in reversed(subdirs))
