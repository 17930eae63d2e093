"""Labelling queues: which trajectories to label first, who labels what, and how far everyone has got.

Rows come from the catalog (:class:`gui_app.core.catalog.CatalogRow`) or are plain mappings with at least
``id`` (and optionally ``key``, ``success``, ``p_success``, ``threshold``, ``model_success``). Orderings put the
informative items first: environment failures, items the reward model is unsure about (``p_success`` close to the
model's own ``threshold``), and items where the model's verdict (``model_success``, else ``p_success >= threshold``)
disagrees with the environment's outcome. The threshold is always the score's own: a fixed 0.5 misjudged every run
the shipped model (threshold 0.573) scored in between. Each item goes to ``k`` distinct annotators, balancing load,
so no annotator sees an item twice and several annotators per item never duplicate.

Two kinds of queue: assigned up front to named annotators (:func:`assign`), or *open*: built with no annotators, each
item with ``k`` slots that annotators claim as they go (:meth:`LabelQueue.claim`, through the store's atomic
:meth:`~gui_app.core.store.AnnotationStore.claim`), so a team on several machines shares one queue on a server store
and no slot is ever taken twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gui_app.core.annotation import AnnotationError
from gui_app.core.score import verdict
from gui_app.core.store import AnnotationStore

ORDERINGS: dict[str, str] = {
    "failures": "environment failures first, then unknown outcomes, then successes",
    "uncertain": "reward model least sure first (|p_success - threshold| ascending; unscored last)",
    "disagreement": "reward model disagreeing with the environment's outcome first",
    "id": "by trajectory id",
}
DEFAULT_ORDER = ("failures", "disagreement", "uncertain")


def _item_id(row: Any) -> Any:
    """What a queue item is keyed by: the row's library key (labels are keyed by it: unique in the library,
    unlike a format's own id), else its id for rows that have none (hand-made lists)."""
    return field_of(row, "ref") or field_of(row, "id")


def field_of(row: Any, name: str, default: Any = None) -> Any:
    """A field of a catalog row, a dataclass, a mapping or a sqlite3.Row."""
    if isinstance(row, Mapping):
        return row.get(name, default)
    try:
        return row[name] if hasattr(row, "keys") else getattr(row, name, default)
    except (KeyError, IndexError):
        return default


def model_verdict(row: Any) -> bool | None:
    """The reward model's verdict on a row: its ``model_success``, else ``p_success >= threshold``; None when the
    row has no score, a score whose threshold is unknown (stored before the catalog kept thresholds), or a score
    whose model says it cannot judge the run (``model_unknown``)."""
    if field_of(row, "model_unknown"):
        return None
    stated = field_of(row, "model_success")
    if stated is not None:
        return bool(stated)
    return verdict(field_of(row, "p_success"), field_of(row, "threshold"))


def _key(row: Any, name: str) -> Any:
    success, p, threshold = field_of(row, "success"), field_of(row, "p_success"), field_of(row, "threshold")
    if name == "failures":
        return 0 if success is False else (1 if success is None else 2)
    if name == "uncertain":
        if field_of(row, "model_unknown"):
            return -1.0  # the model says it cannot judge the run: less sure than any probability
        if p is None or threshold is None:
            return 1.0  # unscored (or of unknown threshold): last
        return round(abs(float(p) - float(threshold)), 9)  # round: equal distances either side tie
    if name == "disagreement":
        model = model_verdict(row)
        return 0 if (model is not None and success is not None and model != bool(success)) else 1
    if name == "id":
        return str(field_of(row, "id"))
    raise ValueError(f"unknown ordering {name!r} (known: {', '.join(ORDERINGS)})")


def order_rows(rows: Sequence[Any], order: Sequence[str] = DEFAULT_ORDER) -> list[Any]:
    """``rows`` sorted for labelling by the orderings in ``order`` (earlier ones dominate; id breaks ties)."""
    for name in order:
        if name not in ORDERINGS:
            raise ValueError(f"unknown ordering {name!r} (known: {', '.join(ORDERINGS)})")
    return sorted(rows, key=lambda r: (*(_key(r, n) for n in order), str(field_of(r, "id"))))


def assign(trajectory_ids: Sequence[str], annotators: Sequence[str], k: int = 1) -> list[tuple[int, str, str]]:
    """Give each item (in order) to ``k`` distinct annotators, least-loaded first.

    Returns:
        (position, trajectory_id, annotator) triples; every annotator's items are distinct and loads differ
        by at most one.
    """
    annotators = list(dict.fromkeys(annotators))
    if not annotators:
        raise ValueError("a queue needs at least one annotator")
    if not 1 <= k <= len(annotators):
        raise ValueError(f"k={k} annotators per item, but there are {len(annotators)} annotators")
    load = dict.fromkeys(annotators, 0)
    out = []
    for pos, tid in enumerate(dict.fromkeys(trajectory_ids)):  # an id listed twice is one item
        # least loaded first; rotating the tie-break by position spreads co-annotator pairs
        rank = sorted(annotators, key=lambda a: (load[a], (annotators.index(a) - pos) % len(annotators)))
        for a in rank[:k]:
            load[a] += 1
            out.append((pos, tid, a))
    return out


@dataclass
class QueueItem:
    """One assignment: the item's position in the queue, its ids, and who labels it."""

    position: int
    trajectory_id: str
    key: str | None
    annotator: str
    done: bool = False


class LabelQueue:
    """A named queue persisted in the annotation store."""

    def __init__(self, store: AnnotationStore, name: str):
        self.store, self.name = store, name

    @classmethod
    def build(cls, store: AnnotationStore, name: str, rows: Sequence[Any], annotators: Sequence[str], k: int = 1,
              order: Sequence[str] = DEFAULT_ORDER, limit: int | None = None) -> LabelQueue:
        """Order ``rows``, assign them to ``annotators`` (k each) and save the queue (replacing one of that name).
        With no annotators the queue is open: each item keeps ``k`` slots for whoever claims them."""
        if not name:
            raise AnnotationError("", "queue", "a queue needs a name")
        if k < 1:
            raise AnnotationError("", "queue", f"k={k}: an item needs at least one annotator")
        ordered = order_rows([r for r in rows if _item_id(r) is not None], order)[:limit]
        keys = {str(_item_id(r)): field_of(r, "key") for r in ordered}
        items = [(pos, tid, keys[tid]) for pos, tid in enumerate(keys)]
        triples = assign(list(keys), annotators, k) if annotators else []
        store.save_queue(name, [(p, t, keys[t], a) for p, t, a in triples], k,
                         {"order": list(order), "annotators": list(annotators), "n_items": len(keys),
                          "open": not annotators}, items=items)
        return cls(store, name)

    def claim(self, annotator: str) -> QueueItem | None:
        """The annotator's next item, taken for them atomically in an open queue (see
        :meth:`~gui_app.core.store.AnnotationStore.claim`); None when nothing is left for them."""
        got = self.store.claim(self.name, annotator)
        return None if got is None else QueueItem(*got)

    def _done(self, annotator: str | None = None) -> set[tuple[str, str]]:
        # One annotator's records only when asked for one: the app re-reads this on every save & next.
        return {(a.trajectory_id, a.annotator) for a in self.store.annotations(annotator=annotator, role="annotator")
                if a.verdict is not None}

    def items(self, annotator: str | None = None) -> list[QueueItem]:
        """Assignments in queue order (one annotator's when given), with whether each is labelled."""
        done = self._done(annotator)
        return [QueueItem(p, t, k, a, (t, a) in done) for p, t, k, a in self.store.queue_assignments(self.name,
                                                                                                     annotator)]

    def next_for(self, annotator: str, after: str | None = None) -> QueueItem | None:
        """The annotator's next unlabelled item (after ``after``'s position when given), or None when done."""
        items = self.items(annotator)
        start = next((i + 1 for i, it in enumerate(items) if it.trajectory_id == after), 0) if after else 0
        return next((it for it in items[start:] + items[:start] if not it.done), None)

    def neighbour(self, annotator: str, current: str | None, delta: int) -> QueueItem | None:
        """The item ``delta`` places from ``current`` in the annotator's list (j/k navigation), clamped."""
        items = self.items(annotator)
        if not items:
            return None
        i = next((n for n, it in enumerate(items) if it.trajectory_id == current), -1 if delta > 0 else len(items))
        return items[min(max(i + delta, 0), len(items) - 1)]

    def progress(self, on_item: Callable[[QueueItem], None] | None = None) -> dict[str, Any]:
        """Counts: items, assignments, done, and per annotator assigned/done. An item is done once its ``k``
        annotators have labelled it (an open queue's items nobody has claimed yet are not)."""
        items = self.items()
        k = next((int(q["k"]) for q in self.store.queues() if q["name"] == self.name), 1)
        by: dict[str, dict[str, int]] = {}
        for it in items:
            d = by.setdefault(it.annotator, {"assigned": 0, "done": 0})
            d["assigned"] += 1
            d["done"] += it.done
            if on_item is not None:
                on_item(it)
        done_by: dict[str, int] = {tid: 0 for _p, tid, _k in self.store.queue_items(self.name)}
        for it in items:
            done_by[it.trajectory_id] = done_by.get(it.trajectory_id, 0) + it.done
        return {"queue": self.name, "items": len(done_by), "items_done": sum(n >= k for n in done_by.values()),
                "assignments": len(items), "done": sum(it.done for it in items), "by_annotator": by}
