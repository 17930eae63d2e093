"""Scoring in a process of its own (issue 26): the scores, their masks and harm verdicts come back whole and in
order and are stored by the caller; a judge that does not load is an error and the process goes on; a cancel stops
it, a hung one is killed; a process that dies is an outcome per run it took with it, and the next call starts anew."""

from __future__ import annotations

import os
import signal
from functools import partial

import numpy as np
import pytest

from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.batch import NO_INSTRUCTION, PROCESS_ENDED, ScoreOutcome
from gui_app.core.scoring.process import ScoringProcess, ScoringProcessError
from gui_app.core.trajectory.model import Trajectory
from tests.scoring_fakes import fixed, never_loads, no_weights


def runs(n: int, instruction: str = "Log in") -> list[Trajectory]:
    return [Trajectory(id=f"r{i}", instruction=instruction, source_path=f"/runs/r{i}") for i in range(n)]


@pytest.fixture
def process():
    sp = ScoringProcess(cancel_grace_s=0.5)
    yield sp
    sp.close()
    assert sp.pid is None


def test_scores_come_back_whole_in_order_and_are_stored_here(process, tmp_path):
    catalog = Catalog(tmp_path / "c.sqlite")
    heard: list[ScoreOutcome] = []
    ticks: list[tuple[int, int]] = []
    items = [*runs(3), Trajectory(id="bare", source_path="/runs/bare")]
    out = process.score(items, partial(fixed), "the fake judge", catalog=catalog, on_outcome=heard.append,
                        progress=lambda d, t: ticks.append((d, t)), batch_size=2)
    assert [o.key for o in out] == ["/runs/r0", "/runs/r1", "/runs/r2", "/runs/bare"] and heard == out
    assert ticks[-1] == (4, 4)
    assert out[3].result is None and out[3].reason == NO_INSTRUCTION
    score = out[0].result
    assert score is not None and score.p_success == 0.75 and score.safety is not None
    assert score.safety.evidence[0].text == "nothing in r0"
    assert np.array_equal(score.masks[0], np.eye(3, 4, dtype=bool)) and score.masks[0].dtype == bool
    stored = catalog.latest_score("/runs/r1")  # written by this process, as each outcome arrived
    assert stored is not None and stored.p_success == 0.75 and np.array_equal(stored.masks[0], score.masks[0])
    pid = process.pid
    assert pid is not None and pid != os.getpid()
    assert process.load(partial(fixed), "the fake judge") == "fixed" and process.pid == pid  # kept loaded
    catalog.close()


def test_a_judge_that_does_not_load_is_an_error_and_the_process_goes_on(process):
    with pytest.raises(ScoringProcessError, match="^cannot load the fake judge: no weights here$"):
        process.score(runs(1), partial(no_weights), "the fake judge")
    pid = process.pid
    (oc,) = process.score(runs(1), partial(fixed), "the fake judge")
    assert oc.result is not None and process.pid == pid


def test_a_process_killed_mid_way_loses_only_the_runs_left_and_the_next_call_starts_anew(process):
    def kill_after_the_first(oc: ScoreOutcome) -> None:
        if oc.key == "/runs/r0":
            os.kill(process.pid, signal.SIGKILL)

    out = process.score(runs(3), partial(fixed, hang_on="r1"), "the fake judge", on_outcome=kill_after_the_first,
                        batch_size=1)
    assert [o.key for o in out] == ["/runs/r0", "/runs/r1", "/runs/r2"] and out[0].result is not None
    for oc in out[1:]:
        assert oc.result is None and oc.reason == PROCESS_ENDED
        assert oc.error.startswith("the scoring process ended unexpectedly (killed by SIGKILL)")
    out = process.score(runs(2), partial(fixed), "the fake judge")
    assert [o.result is not None for o in out] == [True, True]


def test_cancel_stops_between_runs_and_a_hung_process_is_killed(process):
    asked = []
    out = process.score(runs(2000), partial(fixed), "the fake judge", cancel=lambda: bool(asked),
                        on_outcome=asked.append, batch_size=1)
    assert 1 <= len(out) < 2000  # stopped between runs, not at the end
    pid = process.pid
    assert pid is not None  # and still there for the next request

    # A process that cannot stop (its judge never finishes loading) is killed once the grace is over: nothing is
    # said lost, the job was cancelled.
    assert process.score(runs(3), partial(never_loads), "the fake judge", cancel=lambda: True) == []
    assert process.pid is None


def test_a_process_that_left_for_want_of_work_is_started_again():
    sp = ScoringProcess(idle_exit_s=0.2)
    try:
        assert sp.score(runs(1), partial(fixed), "the fake judge")[0].result is not None
        proc = sp._proc
        assert proc is not None and proc.pid == sp.pid
        first = proc.pid
        proc.join(30)  # it exits by itself once idle
        assert proc.exitcode == 0
        assert sp.score(runs(1), partial(fixed), "the fake judge")[0].result is not None
        assert sp.pid not in (None, first)
    finally:
        sp.close()
