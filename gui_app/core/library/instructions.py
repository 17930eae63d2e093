"""Instructions for a library's runs that have none, read from a folder of task configs a user points at.

OSWorld keeps a run's instruction in its task config (``evaluation_examples/examples/<domain>/<id>.json``), which
a results folder copied on its own does not hold. Pointing at a folder of task configs gives every run of the library
that lacks an instruction the one its config holds: each such run is read again with the folder as a tasks root
(:func:`gui_app.core.trajectory.formats.load`, ``tasks_roots=``; the importer's own search, so every format that
looks for task configs finds them as it does for ``--tasks-root``), and what it finds is stored for the run's task
(:meth:`~gui_app.core.library.catalog.Catalog.set_instruction`, source ``task_config``), so it holds for every run of
that task whenever scoring runs, with no rescan.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gui_app.core.errors import CatalogError, RollscopeError
from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.instructions import TASK_CONFIG, lookup_keys, task_key


@dataclass
class ConfigReport:
    """What a folder of task configs gave the library.

    Attributes:
        tasks: scope keys given an instruction now.
        runs: runs without an instruction of their own that have one now (found now, or given before).
        missing: runs still without one (no config for them in the folder), as ``key``.
        errors: runs that could not be read again, as ``key: error``.
        cancelled: stopped on request (what was stored so far is kept).
    """

    tasks: list[str] = field(default_factory=list)
    runs: int = 0
    missing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cancelled: bool = False


def instructions_from_task_configs(catalog: Catalog, folder: str | Path, library_root: str | Path | None = None,
                                   progress: Callable[[int, int, str], None] | None = None,
                                   cancel: Callable[[], bool] | None = None) -> ConfigReport:
    """Give the runs of ``catalog`` without an instruction the ones the task configs under ``folder`` hold.

    A run whose task already has an instruction (given before, or found earlier in this pass) is not read again; one
    whose domain has one is (its task config, when found, is more specific than what its domain was given).

    Args:
        catalog: the library's catalog (the runs, and where the instructions are stored).
        folder: OSWorld's checkout, its ``evaluation_examples``, its ``examples`` folder, or any folder holding
            ``<domain>/<id>.json`` task configs.
        library_root: where media may be read (as for any load of the library's runs).
        progress: ``progress(done, total, key)`` after each run.
        cancel: polled between runs.

    Raises:
        CatalogError: ``folder`` is not a folder, or the catalog cannot be read or written.
    """
    from gui_app.core.trajectory import formats

    folder = Path(os.path.abspath(folder))
    if not folder.is_dir():
        raise CatalogError(f"{folder}: not a folder of task configs")
    report = ConfigReport()
    runs = catalog.runs_without_instruction()
    given = set(catalog.stored_instructions().stored)
    for done, (key, default_scope) in enumerate(runs, 1):
        if cancel is not None and cancel():
            report.cancelled = True
            break
        if default_scope is not None and default_scope.startswith("task:") and default_scope in given:
            report.runs += 1
        else:
            try:
                traj = formats.load(key, library_root=library_root, align=False, tasks_roots=[str(folder)])
            except (RollscopeError, OSError, ValueError) as exc:
                report.errors.append(f"{key}: {exc}")
            else:
                scope = task_key(traj, traj.key or catalog.score_key(key))
                if traj.instruction.strip() and scope is not None:
                    origin = (traj.metadata or {}).get("task_config") if isinstance(traj.metadata, dict) else None
                    catalog.set_instruction(scope, traj.instruction, TASK_CONFIG,
                                            str(origin) if origin else str(folder))
                    given.add(scope)
                    report.tasks.append(scope)
                    report.runs += 1
                elif any(k in given for k in lookup_keys(traj)):
                    report.runs += 1
                else:
                    report.missing.append(key)
        if progress is not None:
            progress(done, len(runs), key)
    return report
