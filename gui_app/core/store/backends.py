"""Opening a store (:func:`open_store`: a SQLite path or a ``postgresql://`` URL) and copying one into another
(:func:`copy_store`, ``rollscope labels migrate``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gui_app.core.store.interface import SqlAnnotationStore, StoreError, default_path, is_url
from gui_app.core.store.sqlite import SqliteAnnotationStore

COUNT_NAMES = {"annotations": "records", "annotation_labels": "labels", "annotation_cascading": "cascading steps",
               "annotation_step_comments": "step comments", "annotation_harm_types": "harm types",
               "audit": "audit entries", "score_overrides": "overrides",
               "adjudications": "adjudications", "queues": "queues", "queue_items": "queue items",
               "queue_assignments": "queue assignments"}


def copy_store(source: SqlAnnotationStore, target: SqlAnnotationStore,
               progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Copy every row of ``source`` into the empty ``target`` (either backend, either direction), in one
    transaction, then count both again.

    Returns:
        ``{"from", "to", "counts": {name: {"source": n, "target": n}}}``, names as in :data:`COUNT_NAMES`.

    Raises:
        StoreError: ``target`` is not empty, the copy failed (nothing was copied), or a count differs afterwards
            (someone wrote to the source during the copy: copy again into a new, empty target).
    """
    copied = target.load(source, progress)
    after, now = target.counts(), source.counts()
    counts = {COUNT_NAMES[name]: {"source": now[name], "target": after[name]} for name in COUNT_NAMES}
    wrong = [f"{name} {n['source']} -> {n['target']}" for name, n in counts.items() if n["source"] != n["target"]]
    if wrong or any(after[t] != copied[t] for t in copied):
        raise StoreError(target.location, "the copy does not match its source (was someone labelling during the "
                                          f"copy?): {', '.join(wrong) or 'rows read differ from rows stored'}")
    return {"from": source.location, "to": target.location, "counts": counts}


def open_store(path: str | Path | None = None, root: str | Path | None = None, *,
               connect_timeout: float | None = None, read_only: bool = False) -> SqlAnnotationStore:
    """Open the store at ``path``: a team's PostgreSQL server when it is a ``postgresql://USER@HOST:PORT/DB`` URL,
    else a SQLite file; without one, the library's default (``<root>/.rollscope/labels.sqlite``, root = current
    folder).

    Args:
        connect_timeout: seconds to wait for a server store's server (its default when None).
        read_only: a SQLite store is opened without creating, migrating or writing anything (see
            :class:`SqliteAnnotationStore`); a server store is opened as usual (its server, not the file system,
            says who may write).

    Raises:
        StoreError: the store cannot be opened (:class:`StoreUnavailable`: its server cannot be reached).
    """
    if is_url(path):
        from gui_app.core.store.postgresql import PostgresAnnotationStore

        assert isinstance(path, str)
        return PostgresAnnotationStore(path) if connect_timeout is None else \
            PostgresAnnotationStore(path, connect_timeout=connect_timeout)
    return SqliteAnnotationStore(path if path is not None else default_path(root or "."), read_only=read_only)
