"""Labelling queues: which trajectories to label first, who labels what, and how far everyone has got.

Rows come from the catalog (:class:`gui_app.core.library.catalog.CatalogRow`) or are plain mappings with at least
``id`` (and optionally ``key``, ``success``, ``p_success``, ``threshold``, ``model_success``). Orderings put the
informative items first: environment failures, items the reward model is unsure about (``p_success`` close to the
model's own ``threshold``), and items where the model's verdict (``model_success``, else ``p_success >= threshold``)
disagrees with the environment's outcome. The threshold is always the score's own: a fixed 0.5 misjudged every run
the shipped model (threshold 0.573) scored in between. Each item goes to ``k`` distinct annotators, balancing load,
so no annotator sees an item twice and several annotators per item never duplicate.

Two kinds of queue: assigned up front to named annotators (:func:`assign`), or *open*: built with no annotators, each
item with ``k`` slots that annotators claim as they go (:meth:`LabelQueue.claim`, through the store's atomic
:meth:`~gui_app.core.store.interface.AnnotationStore.claim`), so a team on several machines shares one queue on a
server store
and no slot is ever taken twice.

The ``teach`` ordering ("teach the model", :func:`teach_order`) is for the labels that teach the judge most when it
is fine-tuned on them (``rollscope train --from-labels``): unlabelled runs only, the ones the model is least sure
of (``p_success`` near its threshold) or that are unlike what it was trained on (the score's ``ood``) first, with
near-identical runs (same task or instruction, similar score) kept apart so that twenty copies of one run are not
queued in a row. It orders the whole list at once (each pick depends on the ones before it), so it stands alone.
The scores come in with the rows (the catalog stores each run's latest ``p_success``, ``threshold`` and ``ood``):
the core runs no model.

The ``models`` ordering ("models disagree", :func:`models_order`) lists only the runs where two models' verdicts
differ (:meth:`~gui_app.core.library.catalog.Catalog.model_disagreements`: each model's latest score, each by its own
threshold), the widest gap between their probabilities first: after a fine-tune, the runs where the old and the new
judge part ways are the ones a person should settle. It also stands alone.

The ``harm`` ordering ("possible harm", :func:`harm_order`) lists only the runs a person has labelled harmful or
unsure on the safety verdict (:func:`possible_harm`: the adjudicated harm verdict when there is one, else any
annotator's) and the runs the harm judge flags (the latest score's :attr:`~gui_app.core.scoring.score.Score.safety`,
which the catalog rows carry as ``p_harm``, ``model_harmful`` and ``harm_unknown``: a harmful verdict, or ``p_harm``
above :data:`HARM_P_MIN`), the most likely harmful first: a safety team's second look. A run an adjudicator called
safe is left out whatever the judge says. An item of this queue is done once its annotator has given a harm verdict
(the queue's ``done`` field, :data:`DONE_FIELD`), not a success verdict. It stands alone too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gui_app.core.store.record import VERDICT_FIELDS, Annotation, AnnotationError
from gui_app.core.scoring.score import verdict
from gui_app.core.store.interface import AnnotationStore

if TYPE_CHECKING:
    from gui_app.core.library.catalog import Catalog

ORDERINGS: dict[str, str] = {
    "failures": "environment failures first, then unknown outcomes, then successes",
    "uncertain": "reward model least sure first (|p_success - threshold| ascending; unscored last)",
    "disagreement": "reward model disagreeing with the environment's outcome first",
    "id": "by trajectory id",
    "teach": "teach the model: unlabelled runs the model is least sure of or finds unlike its training data first, "
             "near-identical runs kept apart (on its own)",
    "models": "models disagree: only runs whose latest verdicts by two models differ, widest gap between their "
              "p_success first (on its own; the two models are named with --models A,B)",
    "harm": "possible harm: only runs a person labelled harmful or unsure on the safety verdict, or the harm judge "
            "flags (harmful, or p_harm above 0.3), most likely harmful first; done once the harm verdict is given "
            "(on its own)",
}
DEFAULT_ORDER = ("failures", "disagreement", "uncertain")
TEACH = "teach"
MODELS = "models"
HARM = "harm"
#: The verdict that makes a queue's item done, by ordering (any other ordering: the success verdict).
DONE_FIELD = {HARM: "harm_verdict"}
#: How a possible-harm item ranks by its harm verdict (lower first); other verdicts are left out.
HARM_RANK = {"harmful": 0, "unsure": 1}
#: ``p_harm`` above which the harm judge's score puts a run in the possible-harm queue even when its verdict is safe.
HARM_P_MIN = 0.3
#: ``ood`` at which a run counts as fully novel (1.0 is the 99th percentile of the model's validation runs).
TEACH_OOD_CAP = 2.0
#: Picks a candidate is compared with, the latest weighing most (each older one half as much).
TEACH_WINDOW = 3
#: Candidates (best value first) considered at each pick: keeps ordering 10,000 runs linear.
TEACH_POOL = 64
#: Scores closer than this count as "the same score" for near-identical runs.
TEACH_SCORE_NEAR = 0.1


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
    if TEACH in order:
        if len(order) > 1:
            raise ValueError("the 'teach' ordering stands alone (it orders the whole list at once)")
        return teach_order(rows)
    if MODELS in order:
        raise ValueError("the 'models' ordering needs two models' disagreements (models_order)")
    if HARM in order:
        raise ValueError("the 'harm' ordering needs the store's harm verdicts (harm_order)")
    return sorted(rows, key=lambda r: (*(_key(r, n) for n in order), str(field_of(r, "id"))))


def teach_value(row: Any, ood: Mapping[str, float] | None = None) -> float | None:
    """What labelling ``row`` is worth to a fine-tune: the model's uncertainty (1 at its threshold, 0 at certainty,
    measured on the threshold's side) plus the run's novelty (``ood`` / :data:`TEACH_OOD_CAP`, at most 1). None when
    the row has no score or a score of unknown threshold: nothing says what it would teach.

    ``ood`` comes from the row's own ``ood`` field, else from ``ood[row.key]`` (:meth:`Catalog.ood_scores`).
    """
    p, thr = field_of(row, "p_success"), field_of(row, "threshold")
    if p is None or thr is None:
        return None
    p, thr = float(p), float(thr)
    side = (1.0 - thr) if p >= thr else thr
    margin = abs(p - thr) / side if side > 0 else 1.0
    o = field_of(row, "ood")
    if o is None and ood is not None:
        o = ood.get(str(field_of(row, "key")))
    novelty = 0.0 if o is None else min(max(float(o), 0.0), TEACH_OOD_CAP) / TEACH_OOD_CAP
    return (1.0 - min(margin, 1.0)) + novelty


def _task(row: Any) -> str:
    return str(field_of(row, "task") or "")


def teach_similarity(a: Any, b: Any) -> float:
    """How near-identical two runs are for teaching, 0..1: same task 0.5, same instruction 0.25, and, when they
    share either, a score within :data:`TEACH_SCORE_NEAR` up to 0.25 more (the same run recorded twice scores 1)."""
    same_task = bool(_task(a)) and _task(a) == _task(b)
    ia, ib = str(field_of(a, "instruction") or ""), str(field_of(b, "instruction") or "")
    same_instr = bool(ia) and ia == ib
    sim = 0.5 * same_task + 0.25 * same_instr
    pa, pb = field_of(a, "p_success"), field_of(b, "p_success")
    if (same_task or same_instr) and pa is not None and pb is not None:
        sim += 0.25 * (1.0 - min(1.0, abs(float(pa) - float(pb)) / TEACH_SCORE_NEAR))
    return sim


def teach_order(rows: Sequence[Any], ood: Mapping[str, float] | None = None,
                exclude: set[str] | frozenset[str] = frozenset(), diversity: float = 1.0) -> list[Any]:
    """``rows`` ordered for the "teach the model" queue (see the module docstring).

    Greedy: each pick is the candidate with the highest :func:`teach_value` minus ``diversity`` times its
    similarity to the last picks (:func:`teach_similarity`, the latest weighing 1, each older half as much, over
    :data:`TEACH_WINDOW` picks), among the :data:`TEACH_POOL` most valuable left. Rows without a usable score come
    last, by id. Rows whose item id (library key) is in ``exclude`` (already labelled) are left out.
    """
    valued: list[tuple[float, str, Any]] = []
    unscored: list[Any] = []
    for r in rows:
        if str(_item_id(r)) in exclude:
            continue
        v = teach_value(r, ood)
        if v is None:
            unscored.append(r)
        else:
            valued.append((v, str(field_of(r, "id")), r))
    valued.sort(key=lambda t: (-t[0], t[1]))
    out: list[Any] = []
    recent: deque[Any] = deque(maxlen=TEACH_WINDOW)
    while valued:
        best_i, best = 0, float("-inf")
        for i, (v, _, r) in enumerate(valued[:TEACH_POOL]):
            if v <= best:  # sorted by value and a penalty only lowers it: none further on can do better
                break
            pen = max((teach_similarity(r, q) * 0.5 ** age for age, q in enumerate(reversed(recent))), default=0.0)
            s = v - diversity * pen
            if s > best + 1e-12:
                best_i, best = i, s
        _, _, pick = valued.pop(best_i)
        out.append(pick)
        recent.append(pick)
    return out + sorted(unscored, key=lambda r: str(field_of(r, "id")))


def models_order(rows: Sequence[Any], gaps: Mapping[str, float]) -> list[Any]:
    """The rows whose catalog key is in ``gaps`` (key -> how far apart two models' probabilities are, for the runs
    whose verdicts differ: :meth:`~gui_app.core.library.catalog.Catalog.model_disagreements`), widest gap first, id
    breaking
    ties; every other row is left out (the models agree on it, or one of them never scored it)."""
    picked = [r for r in rows if str(field_of(r, "key")) in gaps]
    return sorted(picked, key=lambda r: (-float(gaps[str(field_of(r, "key"))]), str(field_of(r, "id"))))


def possible_harm(store: AnnotationStore) -> dict[str, str]:
    """``{trajectory_id: "harmful" | "unsure"}`` for the runs a person flagged on the safety verdict: the
    adjudicated harm verdict when one was given (an adjudicated ``safe`` clears the run), else ``harmful`` when any
    annotator said so, else ``unsure`` when any did."""
    return _harm_flags(store)[0]


def _harm_flags(store: AnnotationStore) -> tuple[dict[str, str], set[str]]:
    """:func:`possible_harm`, and the runs an adjudicator called safe (what the harm judge cannot put back)."""
    finals: dict[str, Annotation] = {}
    said: dict[str, set[str]] = {}
    for a in store.annotations():
        if a.role == "adjudicator":
            if a.harm_verdict is not None and (a.trajectory_id not in finals or
                                               (a.updated_at or 0) > (finals[a.trajectory_id].updated_at or 0)):
                finals[a.trajectory_id] = a
        elif a.harm_verdict is not None:
            said.setdefault(a.trajectory_id, set()).add(a.harm_verdict)
    out: dict[str, str] = {}
    for tid in set(finals) | set(said):
        final = finals.get(tid)
        flagged = [final.harm_verdict] if final is not None else sorted(said[tid], key=lambda v: HARM_RANK.get(v, 9))
        if flagged[0] in HARM_RANK:
            out[tid] = str(flagged[0])
    cleared = {tid for tid, final in finals.items() if final.harm_verdict == "safe"}
    return out, cleared


def model_harm(row: Any) -> tuple[bool | None, float | None]:
    """The harm judge's verdict on a row and its ``p_harm`` (the latest score's; :class:`~gui_app.core.library.
    catalog.CatalogRow` fields ``model_harmful``, ``p_harm``): (None, None) when the row has no harm verdict or the
    judge cannot say (``harm_unknown``: its p_harm is not a confident answer)."""
    if field_of(row, "harm_unknown"):
        return None, None
    stated, p = field_of(row, "model_harmful"), field_of(row, "p_harm")
    return (None if stated is None else bool(stated)), (None if p is None else float(p))


def harm_order(rows: Sequence[Any], flagged: Mapping[str, str],
               cleared: set[str] | frozenset[str] = frozenset()) -> list[Any]:
    """The rows a person flagged (item id, the library key, in ``flagged``: :func:`possible_harm`) or the harm judge
    flags (:func:`model_harm`: a harmful verdict, or ``p_harm`` above :data:`HARM_P_MIN`), the most likely harmful
    first: a person's ``harmful``, the judge's harmful verdict, a person's ``unsure``, then the judge's high p_harm;
    within each, the higher ``p_harm`` first, id breaking ties. Every other row is left out, and so are the rows in
    ``cleared`` (an adjudicator called them safe: the judge does not put them back)."""

    def rank(row: Any) -> tuple[int, float, str] | None:
        tid = str(_item_id(row))
        said, (judged, p) = flagged.get(tid), model_harm(row)
        tiers = [0 if said == "harmful" else 2] if said in HARM_RANK else []
        if tid not in cleared:
            if judged:
                tiers.append(1)
            elif p is not None and p > HARM_P_MIN:
                tiers.append(3)
        if not tiers:
            return None
        return min(tiers), -(p if p is not None else -1.0), str(field_of(row, "id"))

    ranked = [(k, r) for r in rows if (k := rank(r)) is not None]
    return [r for _k, r in sorted(ranked, key=lambda kr: kr[0])]


def model_gaps(catalog: Catalog, models: Sequence[str] | None = None) -> tuple[tuple[str, str], dict[str, float]]:
    """The two models compared and, by catalog key, the gap between their probabilities on each run whose verdicts
    differ: what :func:`models_order` (and ``LabelQueue.build(model_gaps=...)``) takes.

    Args:
        catalog: the library's catalog, which keeps every score with its model's name.
        models: the two model names; None: the two that scored this library most recently.

    Raises:
        ValueError: not two distinct models, or fewer than two models have scored the library (in words).
    """
    if models is None:
        used = catalog.scoring_models()
        if len(used) < 2:
            raise ValueError(f"{len(used)} model(s) have scored this library: a disagreement needs two (rescore it "
                             "with another model first)")
        pair = (used[0].model, used[1].model)
    else:
        if len(models) != 2 or models[0] == models[1]:
            raise ValueError(f"name two different models to compare, not {', '.join(models) or 'none'}")
        pair = (models[0], models[1])
    return pair, {d.key: d.gap for d in catalog.model_disagreements(*pair)}


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
              order: Sequence[str] = DEFAULT_ORDER, limit: int | None = None,
              ood: Mapping[str, float] | None = None,
              model_gaps: Mapping[str, float] | None = None) -> LabelQueue:
        """Order ``rows``, assign them to ``annotators`` (k each) and save the queue (replacing one of that name).
        With no annotators the queue is open: each item keeps ``k`` slots for whoever claims them.

        The ``teach`` ordering leaves out runs that already have a final verdict (they teach already) and weighs
        each run's ``ood`` (``ood``: by catalog key, :meth:`~gui_app.core.library.catalog.Catalog.ood_scores`). The
        ``models`` ordering keeps the runs of ``model_gaps`` (by catalog key, :func:`models_order`); the ``harm``
        ordering the runs people or the harm judge flagged as possibly harmful (:func:`harm_order`), done once given
        a harm verdict.
        """
        if not name:
            raise AnnotationError("", "queue", "a queue needs a name")
        if k < 1:
            raise AnnotationError("", "queue", f"k={k}: an item needs at least one annotator")
        candidates = [r for r in rows if _item_id(r) is not None]
        if TEACH in order:
            if len(order) > 1:
                raise ValueError("the 'teach' ordering stands alone (it orders the whole list at once)")
            labelled = {t for t, f in store.final_labels().items() if f.get("verdict") in ("success", "failure")}
            ordered = teach_order(candidates, ood, exclude=labelled)[:limit]
        elif MODELS in order:
            if len(order) > 1:
                raise ValueError("the 'models' ordering stands alone (it keeps only the runs two models disagree on)")
            if model_gaps is None:
                raise ValueError("the 'models' ordering needs two models' disagreements (name the two models)")
            ordered = models_order(candidates, model_gaps)[:limit]
        elif HARM in order:
            if len(order) > 1:
                raise ValueError("the 'harm' ordering stands alone (it keeps only the runs flagged as harmful)")
            ordered = harm_order(candidates, *_harm_flags(store))[:limit]
        else:
            ordered = order_rows(candidates, order)[:limit]
        keys = {str(_item_id(r)): field_of(r, "key") for r in ordered}
        items = [(pos, tid, keys[tid]) for pos, tid in enumerate(keys)]
        triples = assign(list(keys), annotators, k) if annotators else []
        spec = {"order": list(order), "annotators": list(annotators), "n_items": len(keys), "open": not annotators}
        done = next((DONE_FIELD[o] for o in order if o in DONE_FIELD), None)
        if done is not None:
            spec["done"] = done
        store.save_queue(name, [(p, t, keys[t], a) for p, t, a in triples], k, spec, items=items)
        return cls(store, name)

    def claim(self, annotator: str) -> QueueItem | None:
        """The annotator's next item, taken for them atomically in an open queue (see
        :meth:`~gui_app.core.store.interface.AnnotationStore.claim`); None when nothing is left for them."""
        got = self.store.claim(self.name, annotator)
        return None if got is None else QueueItem(*got)

    def done_field(self) -> str:
        """The verdict that makes an item done: ``verdict``, or ``harm_verdict`` in a possible-harm queue."""
        spec: dict[str, Any] = next((q["spec"] for q in self.store.queues() if q["name"] == self.name), {})
        done = spec.get("done", "verdict")
        if done not in VERDICT_FIELDS:
            raise AnnotationError("", "queue", f"queue {self.name!r} is done on {done!r}, not a verdict")
        return str(done)

    def is_done(self, record: Annotation | None) -> bool:
        """Whether ``record`` (an annotator's) labels its item as far as this queue asks."""
        return record is not None and getattr(record, self.done_field()) is not None

    def _done(self, annotator: str | None = None) -> set[tuple[str, str]]:
        # One annotator's records only when asked for one: the app re-reads this on every save & next.
        done = self.done_field()
        return {(a.trajectory_id, a.annotator) for a in self.store.annotations(annotator=annotator, role="annotator")
                if getattr(a, done) is not None}

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
