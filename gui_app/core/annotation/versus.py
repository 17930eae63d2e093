"""Judges against people: how far each judge's verdicts agree with the library's final human labels.

:func:`versus` scores the labelled runs with each judge (through :func:`gui_app.core.scoring.batch.score_many`, the
one scoring path of the app and ``rollscope score``) and compares every verdict with the reference: the final human
label (:func:`gui_app.core.annotation.teaching.labelled_runs`: the adjudicated record, else the annotators' majority;
what ``rollscope train --from-labels`` learns from), or the environment's outcome
(:func:`~gui_app.core.annotation.teaching.known_outcomes`). Per judge (:class:`JudgeAgreement`):

- ``n``, ``accuracy``, ``recall`` (success the positive class: the human successes the judge calls successes),
  ``failure_recall`` (the human failures it calls failures), and Cohen's ``kappa`` between its verdict and the human
  one (:func:`gui_app.core.annotation.agreement.cohen_kappa`; None when undefined, e.g. every verdict the same);
- the first deviating step, on the runs both call failures where the human gave a root-cause step: ``step_exact``
  and ``step_within_one`` (a failure verdict without a step counts as a miss);
- ``unknown_share``: verdicts the judge itself marks unknown (they are counted in the figures above as the verdict
  it would give, and this says how many there are);
- ``seconds_per_run`` (the judge's wall-clock time over the runs it was given, its loading left out: an endpoint
  judge's concurrent requests count once) and, when the judge reports them, ``tokens_in`` / ``tokens_out`` per run.

Nothing is dropped in silence: a run a judge cannot score (it does not load, has no instruction, the judge's answer
cannot be read, the judge gives no verdict) is one of that judge's :attr:`JudgeAgreement.errors` with a one-line
reason; a judge that cannot load is one ``load_error``; a label that is not a usable verdict is in
:attr:`VersusReport.skipped`.

Plain Python: the judges come as factories of the core's :class:`~gui_app.core.scoring.batch.Scorer` (the registry
that builds them lives above the core), so ``rollscope eval --judge`` and the app's "Judges vs humans" table share it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gui_app.core.annotation.agreement import cohen_kappa
from gui_app.core.annotation.teaching import LabelledRun, known_outcomes, labelled_runs
from gui_app.core.errors import RollscopeError
from gui_app.core.safety import printable
from gui_app.core.scoring.batch import ScorerFactory, score_many
from gui_app.core.scoring.instructions import Instructions

if TYPE_CHECKING:
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.scoring.process import ScoringProcess
    from gui_app.core.store.interface import AnnotationStore

AGAINST = ("labels", "outcome")
ProgressFn = Callable[[int, int, str], None]
CancelFn = Callable[[], bool]


@dataclass(frozen=True)
class Judged:
    """One run as a judge saw it, beside its reference verdict.

    Attributes:
        key: what the run is opened by.
        human: the reference verdict (a person's, or the environment's with ``against="outcome"``).
        human_step: the reference's first deviating step (0-based; failures only, when known).
        judge: the judge's verdict.
        judge_step: the judge's first deviating step (0-based; its failures only, when it gives one).
        unknown: the judge marks its verdict unknown (it cannot judge this run with confidence).
        usage: the tokens the judge reports for this verdict (empty when it reports none).
    """

    key: str
    human: bool
    human_step: int | None
    judge: bool
    judge_step: int | None = None
    unknown: bool = False
    usage: dict[str, int] = field(default_factory=dict)


@dataclass
class JudgeAgreement:
    """One judge's figures against the reference (see the module docstring); a figure that cannot be computed is
    None.

    Attributes:
        judge: the judge as asked for (``rollscope``, ``openai-compatible``).
        model: the loaded judge's name, what its scores carry (``Score.model``: the judge and its settings); '' when
            it did not load.
        errors: ``(run, reason)`` for every run it could not score, the reason on one line.
        load_error: why the judge could not load (then nothing else is filled in).
        runs: every run it scored.
        load_seconds: the time it took to load.
        seconds: its wall-clock time over the runs it was given.
    """

    judge: str
    model: str = ""
    runs: list[Judged] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    load_error: str | None = None
    load_seconds: float = 0.0
    seconds: float = 0.0
    attempted: int = 0

    def metrics(self) -> dict[str, Any]:
        """The figures over :attr:`runs` (:func:`agreement_metrics`), with the time and the error count."""
        m = agreement_metrics(self.runs)
        m["errors"] = len(self.errors)
        m["seconds_per_run"] = self.seconds / self.attempted if self.attempted else None
        return m

    def to_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "model": self.model, **self.metrics(), "load_error": self.load_error,
                "load_seconds": self.load_seconds,
                "error_runs": [{"run": k, "error": e} for k, e in self.errors]}


@dataclass
class VersusReport:
    """Every judge against one reference.

    Attributes:
        against: ``labels`` (the final human labels) or ``outcome`` (the environment's).
        n_reference: the runs with a reference verdict, each given to every judge.
        skipped: ``(run, reason)`` for the references left out (a label with no success/failure verdict, a run that
            cannot be found).
        judges: one :class:`JudgeAgreement` per judge, in the order asked.
        cancelled: the comparison was stopped; the figures cover the runs scored before.
    """

    against: str
    n_reference: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    judges: list[JudgeAgreement] = field(default_factory=list)
    cancelled: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"against": self.against, "n_reference": self.n_reference, "cancelled": self.cancelled,
                "skipped": [{"run": k, "reason": r} for k, r in self.skipped],
                "judges": [j.to_json() for j in self.judges]}


def _share(hits: Sequence[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def agreement_metrics(runs: Sequence[Judged]) -> dict[str, Any]:
    """Accuracy, recall (success positive), failure recall, Cohen's kappa, the first deviating step (exact and
    within one, over the runs both call failures where the reference gives a step), the unknown share and the
    tokens per run of ``runs`` (None for a figure with nothing to count)."""
    succ = [r for r in runs if r.human]
    fail = [r for r in runs if not r.human]
    both_fail = [r for r in fail if not r.judge and r.human_step is not None]
    # (reference step, judge step) where both call it a failure; a failure verdict without a step is a miss.
    gaps = [None if r.judge_step is None or r.human_step is None else abs(r.judge_step - r.human_step)
            for r in both_fail]
    used = [r.usage for r in runs if r.usage]

    def tokens(name: str) -> float | None:
        counts = [u[name] for u in used if name in u]
        return sum(counts) / len(counts) if counts else None

    return {"n": len(runs), "n_success": len(succ), "n_failure": len(fail),
            "accuracy": _share([r.judge == r.human for r in runs]),
            "recall": _share([r.judge for r in succ]),
            "failure_recall": _share([not r.judge for r in fail]),
            "kappa": cohen_kappa([r.judge for r in runs], [r.human for r in runs]),
            "n_step": len(both_fail), "step_exact": _share([g == 0 for g in gaps]),
            "step_within_one": _share([g is not None and g <= 1 for g in gaps]),
            "step_missing": sum(g is None for g in gaps),
            "unknown_share": _share([r.unknown for r in runs]),
            "tokens_in": tokens("prompt_tokens"), "tokens_out": tokens("completion_tokens"),
            "cached": sum(bool(u.get("cached")) for u in used)}


def reference_runs(against: str, roots: Sequence[str | Path], store: AnnotationStore | None = None,
                   catalog: Catalog | None = None) -> tuple[list[LabelledRun], list[tuple[str, str]]]:
    """The runs with a reference verdict, and ``(run, reason)`` for those left out: with ``against="labels"`` the
    final human labels in ``store`` of the library at ``roots[0]`` (keys mapped to runs by its ``catalog`` when
    given), with ``"outcome"`` every run under ``roots`` whose outcome is recorded (units that do not load are left
    out, with why).

    Raises:
        RollscopeError: no store to read labels from, or no run with a reference verdict at all.
        StoreError: the store cannot be read.
    """
    if against == "labels":
        if store is None:
            raise RollscopeError(f"{roots[0]}: no label store: nothing to compare the judges with")
        found = labelled_runs(store, roots[0], catalog)
        runs, skipped = found.runs, list(found.skipped)
    elif against == "outcome":
        runs = []
        errors: list[str] = []  # "PATH: why" for each unit that does not load
        for root in roots:
            runs += known_outcomes(root, errors)
        skipped = [(e.partition(": ")[0], e.partition(": ")[2]) for e in errors]
    else:
        raise ValueError(f"against must be one of {', '.join(AGAINST)}, not {against!r}")
    if not runs:
        where = "final human labels of success or failure" if against == "labels" else "runs with a known outcome"
        first = f" ({len(skipped)} left out; first: {skipped[0][0]}: {skipped[0][1]})" if skipped else ""
        raise RollscopeError(f"{roots[0]}: no {where} to compare the judges with{first}")
    return runs, skipped


def one_line(text: str | None) -> str:
    """An error message as one printable line."""
    return printable(" ".join(str(text or "").split())) or "unknown error"


def judge_runs(references: Sequence[LabelledRun], name: str, factory: ScorerFactory, *,
               progress: Callable[[int, int], None] | None = None, cancel: CancelFn | None = None,
               library_root: str | Path | None = None, tasks_roots: Sequence[str | Path] | None = None,
               instructions: Instructions | None = None, batch_size: int = 8,
               process: ScoringProcess | None = None) -> JudgeAgreement:
    """One judge (built by ``factory``) over ``references``, each run's verdict set beside its reference; loaded and
    run in ``process`` when given (the app: the judge never loads in its memory), else here."""
    out = JudgeAgreement(name)
    t0 = time.perf_counter()
    try:
        if process is None:
            scorer = factory()
            out.model = str(getattr(scorer, "name", name))
        else:
            out.model = process.load(factory, f"the judge {name}", cancel) or name
    except (RollscopeError, ImportError, OSError, ValueError) as exc:  # ImportError: a plug-in's missing library
        out.load_error = one_line(str(exc))
        return out
    out.load_seconds = time.perf_counter() - t0
    by_key = {r.key: r for r in references}
    keys = [r.key for r in references]
    t0 = time.perf_counter()
    if process is None:
        outcomes = score_many(keys, scorer, progress=progress, cancel=cancel, batch_size=batch_size,
                              library_root=library_root, tasks_roots=tasks_roots, instructions=instructions)
    else:  # the judge just loaded there is kept for this
        outcomes = process.score(keys, factory, f"the judge {name}", progress=progress, cancel=cancel,
                                 batch_size=batch_size, library_root=library_root, tasks_roots=tasks_roots,
                                 instructions=instructions)
    out.seconds, out.attempted = time.perf_counter() - t0, len(outcomes)
    for oc in outcomes:
        ref, score = by_key[oc.key], oc.result
        if score is None:
            out.errors.append((oc.key, one_line(f"{oc.reason}: {oc.error}" if oc.reason else oc.error)))
        elif score.success is None:
            out.errors.append((oc.key, "the judge gave no verdict"))
        else:
            out.runs.append(Judged(oc.key, ref.success, ref.root_cause_step, bool(score.success),
                                   score.first_error_step if not score.success else None, bool(score.unknown),
                                   {str(k): int(v) for k, v in score.usage.items()}))
    return out


def versus(references: Sequence[LabelledRun], judges: Sequence[tuple[str, ScorerFactory]], against: str = "labels",
           *, skipped: Sequence[tuple[str, str]] = (), progress: ProgressFn | None = None,
           cancel: CancelFn | None = None, library_root: str | Path | None = None,
           tasks_roots: Sequence[str | Path] | None = None, instructions: Instructions | None = None,
           batch_size: int = 8, process: ScoringProcess | None = None) -> VersusReport:
    """Every judge of ``judges`` (``(name, factory)``, loaded one after the other) over ``references``.

    Args:
        references: the runs with their reference verdicts (``labelled_runs(...).runs`` or ``known_outcomes``).
        judges: the judges, each loaded when its turn comes (one that cannot load is a row with its error).
        against: what the references are (``labels`` or ``outcome``), for the report.
        skipped: the references left out before, with why (``labelled_runs(...).skipped``).
        progress: ``progress(done, total, text)`` over every judge's runs.
        cancel: polled between runs; the report then covers what was scored and says it was cancelled.
        library_root, tasks_roots, instructions: as :func:`~gui_app.core.scoring.batch.score_many` takes them.
        process: where the judges load and score (the app's scoring process); None: here.
    """
    if against not in AGAINST:
        raise ValueError(f"against must be one of {', '.join(AGAINST)}, not {against!r}")
    report = VersusReport(against, len(references), list(skipped))
    total = len(references) * len(judges)
    for i, (name, factory) in enumerate(judges):
        if cancel is not None and cancel():
            report.cancelled = True
            break
        base = i * len(references)
        if progress is not None:
            progress(base, total, f"loading {name}")

        def step(done: int, _n: int, base: int = base, name: str = name) -> None:
            if progress is not None:
                progress(base + done, total, f"{name}: {done} of {len(references)}")

        report.judges.append(judge_runs(references, name, factory, progress=step, cancel=cancel,
                                        library_root=library_root, tasks_roots=tasks_roots,
                                        instructions=instructions, batch_size=batch_size, process=process))
    if cancel is not None and cancel():
        report.cancelled = True
    return report


# The table's columns: (key of JudgeAgreement.metrics(), header, format); the app's table shows the same.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("n", "n", "{}"), ("accuracy", "accuracy", "{:.1%}"), ("recall", "recall", "{:.1%}"),
    ("failure_recall", "fail recall", "{:.1%}"), ("kappa", "kappa", "{:.3f}"),
    ("step_exact", "step exact", "{:.1%}"), ("step_within_one", "step ±1", "{:.1%}"),
    ("unknown_share", "unknown", "{:.1%}"), ("seconds_per_run", "s/run", "{:.2f}"),
    ("tokens_in", "tokens in", "{:.0f}"), ("tokens_out", "tokens out", "{:.0f}"), ("errors", "errors", "{}"),
)


def plural(n: int, word: str) -> str:
    """``1 run``, ``2 runs``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def cell(value: Any, fmt: str) -> str:
    """One figure as the table shows it (``-`` for one that cannot be computed)."""
    return "-" if value is None else fmt.format(value)


def format_table(report: VersusReport, max_errors: int = 5) -> str:
    """The report as plain text: a row per judge, then the judges' names in full, what was skipped and the first
    errors of each judge."""
    against = "the final human labels" if report.against == "labels" else "the environment's outcome"
    head = ["judge", *(h for _, h, _ in COLUMNS)]
    rows = []
    for j in report.judges:
        m = j.metrics()
        rows.append([j.judge, *("load failed" if j.load_error and k == "n" else cell(m[k], f) for k, h, f in COLUMNS)])
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]

    def line(r: list[str]) -> str:
        return "  ".join(r[0].ljust(widths[0]) if c == 0 else r[c].rjust(widths[c]) for c in range(len(r)))

    lines = [f"Judges against {against}: {report.n_reference} runs"
             + (" (cancelled: the figures cover the runs scored before)" if report.cancelled else ""),
             "", line(head), *(line(r) for r in rows), ""]
    for j in report.judges:
        m = j.metrics()
        if j.load_error:
            lines.append(f"{j.judge}: cannot load: {j.load_error}")
            continue
        counts = (f"{m['n']} of {j.attempted} runs scored ({m['n_success']} success / {m['n_failure']} failure by "
                  "the reference)")
        steps = f"; steps compared on the {plural(m['n_step'], 'run')} both call failures" if m["n_step"] else ""
        cached = f"; {m['cached']} answers from the judge's cache" if m["cached"] else ""
        lines.append(f"{j.judge}: {j.model}; {counts}{steps}; loaded in {j.load_seconds:.1f} s{cached}")
        for key, reason in j.errors[:max_errors]:
            lines.append(f"  error: {printable(key)}: {reason}")
        if len(j.errors) > max_errors:
            lines.append(f"  ... and {len(j.errors) - max_errors} more errors (--json lists every one)")
    if report.skipped:
        lines.append(f"{plural(len(report.skipped), 'run')} without a usable reference verdict left out; first: "
                     f"{printable(report.skipped[0][0])}: {report.skipped[0][1]}")
    return "\n".join(lines).rstrip()
