"""Which trajectory a label, a score or a catalog row is about: the library key.

A format's own id is not unique: an OSWorld run is named after its task (every model's run of that task has it),
Harbor's golden ATIF files all say ``NORMALIZED_SESSION_ID``, AgentNet lines repeat task ids. So Rollscope keys
trajectories by where they are in the library: the **library key** (``ref``) is the unit's path relative to the
library root, with ``/`` separators, plus ``#N`` for the N-th trajectory of a multi-trajectory file
(``results/pyautogui/screenshot/gpt-4o/chrome/bb5e4c0d-.../``, ``logs/run.eval#3``). It is unique (two units
cannot share a path), stable (it does not change when the library folder is moved or copied: the catalog and the
labels live inside it) and readable. The format's own id stays on the trajectory (``Trajectory.id``) and in the
catalog (``id`` column) for display and search.

The key is a typed field of the trajectory (:attr:`Trajectory.key <gui_app.core.trajectory.model.Trajectory.key>`), set
by every load (:func:`gui_app.core.trajectory.formats.load`) with :func:`trajectory_key`; the catalog stores the same
computation as each row's ``ref``. Labels and scores are keyed by it, never by the format's id.

The library root is the folder whose ``.rollscope/`` holds the catalog and the labels; a single trajectory opened
on its own labels into the folder holding it, so its key is its name there, as it would be in that folder's
library. A unit outside the root (a catalog indexing several trees), or loaded with no library root at all, is keyed
by its absolute path.

Commands accept a key, a catalog key (a path) or a format's own id; an id is resolved only when exactly one
trajectory of the library has it (:func:`resolve`), otherwise the command says which ones do. Labels written
before keys existed were keyed by format ids: :func:`migrate_store` moves each to its key when the id is
unambiguous in the catalog and reports the others (``rollscope labels rekey`` moves them by hand).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gui_app.core.errors import RollscopeError

if TYPE_CHECKING:
    from gui_app.core.library.catalog import Catalog


class AmbiguousIdError(RollscopeError):
    """An id that several trajectories of the library have (or none): names them so the user can pick a key."""

    def __init__(self, ident: str, refs: list[str]):
        self.ident, self.refs = ident, refs
        if refs:
            shown = ", ".join(refs[:5]) + (f" and {len(refs) - 5} more" if len(refs) > 5 else "")
            msg = f"{ident!r} is the id of {len(refs)} trajectories in the library: give one of their keys: {shown}"
        else:
            msg = f"{ident!r} is neither a key nor the id of a trajectory in the library (scan it first?)"
        super().__init__(msg)


def _split(key: str) -> tuple[str, str, str]:
    """``PATH#N`` -> (PATH, "#", N); a key without a numeric selector -> (key, "", "")."""
    path, sep, sel = str(key).rpartition("#")
    return (path, sep, sel) if sep and sel.isdigit() else (str(key), "", "")


def library_key(key: str, root: str | Path | None) -> str:
    """The library key of a catalog key (a unit path, or ``PATH#N``).

    Args:
        key: what :func:`gui_app.core.trajectory.formats.load` accepts.
        root: the library root (None: the key stays absolute).
    """
    path, sep, sel = _split(key)
    if root is not None:
        base = os.path.abspath(root)
        full = os.path.abspath(path)
        if full == base or full.startswith(base.rstrip(os.sep) + os.sep):
            rel = os.path.relpath(full, base)
            path = "." if rel == "." else rel.replace(os.sep, "/")
    return f"{path}#{sel}" if sep else path


def trajectory_key(key: str, library_root: str | Path | None) -> str:
    """The library key a load gives the trajectory at ``key`` (a unit path, or ``PATH#N``): :func:`library_key`
    within ``library_root``, with two rules of its own.

    - The unit *is* the library root (one trajectory opened on its own, as the app and ``rollscope score RUN`` do):
      it is keyed in the folder holding it, where its labels go (:func:`gui_app.core.library.folder.open_library`), so
      opening that folder later finds them.
    - No library root (a trajectory loaded outside any library): its absolute path, unique on this machine; never
      the format's id.
    """
    path, sep, sel = _split(key)
    full = os.path.abspath(path)
    if library_root is not None and full == os.path.abspath(library_root):
        library_root = os.path.dirname(full)
    return library_key(f"{full}{sep}{sel}", library_root)


def resolve(ident: str, catalog: Catalog | None) -> str:
    """The library key ``ident`` names: itself when it is a key, the key of the catalog row it is the path of,
    or the key of the one trajectory whose own id it is.

    Raises:
        AmbiguousIdError: several trajectories have that id, or none does and it is not a key either (only with
            a catalog; without one the identifier is taken as it is).
    """
    if catalog is None:
        return ident
    rows = catalog.find(ident)
    if len(rows) == 1:
        return rows[0].ref
    raise AmbiguousIdError(ident, sorted(r.ref for r in rows))


def lookup(catalog: Catalog | None) -> Callable[[str], tuple[str | None, list[str]]]:
    """:func:`resolve` for many identifiers at once (an import of a million rows): the catalog is read once into
    memory, then each identifier costs a dictionary look-up instead of up to three queries, and an identifier that
    resolves to no single trajectory costs no exception.

    Returns:
        ``ident -> (key, [])`` with the answer :func:`resolve` gives, or ``(None, keys)`` where it raises
        :class:`AmbiguousIdError` (``keys``: the trajectories sharing the id; empty when none has it).
    """
    if catalog is None:
        return lambda ident: (ident, [])
    by_key: dict[str, str] = {}
    by_ref: dict[str, str] = {}
    by_id: dict[str, list[str]] = {}
    for row in catalog.query(limit=None):  # the rows find() searches: key, then library key, then own id
        by_key[row.key] = row.ref
        if row.ref is not None:
            by_ref.setdefault(row.ref, row.ref)
        by_id.setdefault(str(row.id), []).append(row.ref)
    none: list[str] = []

    def find(ident: str) -> tuple[str | None, list[str]]:
        ident = str(ident)
        key = by_key.get(ident) or by_ref.get(ident)
        if key is not None:
            return key, none
        refs = by_id.get(ident, none)
        return (refs[0], none) if len(refs) == 1 else (None, sorted(refs))

    return find


@dataclass
class MigrationReport:
    """What :func:`migrate_store` did: ids moved to keys, and those it could not move."""

    moved: dict[str, str] = field(default_factory=dict)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per label the user must look at."""
        out = [f"labels of {old!r} stay under that id: {len(refs)} trajectories have it ({', '.join(refs[:3])}"
               f"{'...' if len(refs) > 3 else ''}); move them with: rollscope labels rekey {old!r} KEY"
               for old, refs in self.ambiguous.items()]
        out += [f"labels of {old!r} stay under that id: its trajectory already has labels of the same annotator "
                f"under its key" for old in self.conflicts]
        return out


def migrate_store(store: Any, catalog: Catalog) -> MigrationReport:
    """Move labels keyed by a format's own id to the trajectory's library key, where the id is unambiguous in the
    catalog. Labels whose id is already a key, or names no trajectory yet (not scanned), are left as they are;
    nothing is deleted. Idempotent: run it whenever a library opens or a scan ends."""
    report = MigrationReport()
    refs = catalog.refs()
    mapping: dict[str, str] = {}
    for tid in store.referenced_ids():
        if tid in refs:
            continue
        rows = [r for r in catalog.find(tid) if r.ref != tid]
        if len(rows) == 1:
            mapping[tid] = rows[0].ref
        elif len(rows) > 1:
            report.ambiguous[tid] = sorted(r.ref for r in rows)
    if mapping:
        moved, conflicts = store.rekey(mapping, actor="rollscope (identity migration)")
        report.moved, report.conflicts = moved, conflicts
    return report
