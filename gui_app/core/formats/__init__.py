"""Importers for the trajectory formats users bring, and content-based detection.

Each importer module defines a module-level ``IMPORTER`` implementing :class:`Importer`. Detection asks every
importer how sure it is (``sniff``) from the content, not only the name, and picks the surest.

A *unit* is what one importer reads: a directory (native, OSWorld, BrowserGym/AgentLab, Harbor trial, raw AgentNet
recording, video + step log, screenshot folder) or a file (ATIF JSON, AgentNet JSONL, AgentNetBench JSON,
Who&When JSON/JSONL, Inspect ``.eval``). A unit may hold several trajectories (AgentNet JSONL: one per line; an
Inspect log: one per sample); one of them is addressed as ``PATH#N`` (0-based).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from gui_app.core.errors import TrajectoryFormatError, UnknownFormatError
from gui_app.core.trajectory import Trajectory

# Order matters only to break ties in sniff scores: more specific formats first.
_MODULES = ("native", "osworld", "osworld_trace", "browsergym", "harbor", "atif", "agentnet", "agentnetbench",
            "agentnet_recording", "inspect_eval", "whowhen", "plain_video", "image_folder")

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
        _registry = [importlib.import_module(f"gui_app.core.formats.{m}").IMPORTER for m in _MODULES]
    return _registry


def by_name(name: str) -> Importer:
    for imp in importers():
        if imp.name == name:
            return imp
    raise KeyError(name)


def detect(path: str | Path) -> Importer | None:
    """The importer surest about ``path`` (score > 0), or None."""
    p = Path(path)
    best, best_score = None, 0.0
    for imp in importers():
        try:
            score = imp.sniff(p)
        except (OSError, ValueError):
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


def load_all(path: str | Path, fmt: str | None = None, align: bool = True) -> list[Trajectory]:
    """Every trajectory at ``path`` (format detected unless ``fmt`` names it); see :meth:`Importer.load_all`
    for ``align``."""
    p, _ = split_selector(path)
    if not p.exists():
        raise TrajectoryFormatError(p, None, "no such file or directory")
    imp = by_name(fmt) if fmt else detect(p)
    if imp is None:
        raise UnknownFormatError(p)
    return imp.load_all(p, align=align)


def load(path: str | Path, fmt: str | None = None, align: bool = True) -> Trajectory:
    """One trajectory: the unit's only one, or ``PATH#N`` for the N-th of a multi-trajectory file (read alone
    when the importer can: an Inspect log of a thousand samples need not parse them all to show one)."""
    p, sel = split_selector(path)
    if sel is not None:
        if not p.exists():
            raise TrajectoryFormatError(p, None, "no such file or directory")
        imp = by_name(fmt) if fmt else detect(p)
        if imp is None:
            raise UnknownFormatError(p)
        if hasattr(imp, "load_one"):
            return imp.load_one(p, sel, align=align)
    trajs = load_all(p, fmt, align)
    if not trajs:
        raise TrajectoryFormatError(p, None, "holds no trajectory")
    if sel is None:
        return trajs[0]
    if sel >= len(trajs):
        raise TrajectoryFormatError(p, None, f"has {len(trajs)} trajectories, no #{sel}")
    return trajs[sel]


FILE_UNITS = {"atif", "agentnet", "whowhen", "inspect", "agentnetbench"}
# Files that look like data a user meant us to read: when none of the importers claims one, a scan says so.
CANDIDATE_EXTS = (".json", ".jsonl", ".eval", ".csv", ".zip", ".pkl", ".gz") + (
    ".mp4", ".webm", ".mkv", ".avi", ".mov", ".m4v")

UnrecognisedFn = Callable[[Path, str], None]


def find_units(root: str | Path, unrecognised: UnrecognisedFn | None = None) -> Iterator[tuple[Path, Importer]]:
    """Walk ``root`` and yield every unit with its importer. A recognised directory is not descended into;
    files are units only for the file formats (ATIF, AgentNet, Who&When, Inspect, AgentNetBench).

    Args:
        root: the folder (or one file) to walk.
        unrecognised: called as ``unrecognised(path, why)`` for what the walk passes over without a unit: a data
            file (:data:`CANDIDATE_EXTS`) no importer claims, a folder with files but no unit in or under it, and a
            hidden folder that is not searched. Nothing is dropped in silence: a scan counts these.
    """
    root = Path(root)
    if root.is_file():
        imp = detect(root)
        if imp is not None:
            yield root, imp
        elif unrecognised is not None:
            unrecognised(root, "no importer recognises this file")
        return
    # (directory, whether its parent holds file units): a screenshot folder beside an ATIF/AgentNet file holds
    # that file's images, so it is not a unit of its own.
    stack = [(root, False)]
    while stack:
        d, beside_files = stack.pop()
        imp = detect(d)
        if imp is not None:
            if not (beside_files and imp.name == "image_folder"):
                yield d, imp
            continue
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            if unrecognised is not None:
                unrecognised(d, "folder cannot be read")
            continue
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
                subdirs.append(Path(e.path))
            elif e.is_file(follow_symlinks=False):
                found = detect(Path(e.path))
                if found is not None and found.name in FILE_UNITS:
                    has_files = True
                    yield Path(e.path), found
                elif Path(e.name).suffix.lower() in CANDIDATE_EXTS:
                    loose.append(Path(e.path))
        if unrecognised is not None:
            for f in loose:
                unrecognised(f, "no importer recognises this file")
            if not subdirs and not has_files and not loose and d != root and any(e.is_file() for e in entries):
                unrecognised(d, "folder holds no trajectory")
        stack.extend((s, has_files) for s in reversed(subdirs))
