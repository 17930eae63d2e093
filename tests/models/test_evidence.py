"""The judge's evidence from a run's own log: actions, points, typed text, claims (models.evidence), and the
perception that reads the text under the log's point and carries unchanged text forward (models.perception)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_app.core.trajectory.formats import load
from models.evidence import RunEvidence, StepAction, from_trajectory
from models.features import load_keyframes, make_example, perceive_run

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def test_osworld_log_gives_points_typed_text_and_claims():
    traj = load(SAMPLES / "osworld" / "miniwob-login-user")
    kf = load_keyframes(traj, 50)
    h, w = kf.frames[0].shape[:2]
    ev = from_trajectory(traj, kf.steps, w, h)
    assert ev.actions is not None and len(ev.actions) == len(kf.steps)
    assert any(a.point is not None for a in ev.actions)
    typed = " ".join(a.typed for a in ev.actions)
    # the instruction's values are what the agent typed
    for word in traj.instruction.split('"')[1::2]:
        assert word in typed
    assert {"video", "actions", "coordinates", "typed_text"} <= set(ev.pieces)


def test_points_outside_the_screen_are_dropped_not_guessed():
    traj = load(SAMPLES / "osworld" / "miniwob-login-user")
    kf = load_keyframes(traj, 50)
    ev = from_trajectory(traj, kf.steps, 10, 10)  # a log in another coordinate space than these frames
    assert ev.actions is not None and all(a.point is None for a in ev.actions)


def test_evidence_round_trips_through_json():
    ev = RunEvidence([StepAction(["click"], (3.0, 4.0), "", ""), StepAction(["type", "key"], None, "kasie", "enter")],
                     "done", "42")
    assert RunEvidence.from_json(ev.to_json()) == ev
    assert RunEvidence.from_json(None).pieces == ["video"]


@pytest.fixture(scope="module")
def perceiver():
    from models.perception import Perceiver
    from models.pointer import PointerDetector
    from models.runtime import default_pointer_path
    from models.text import TextReader

    return Perceiver(PointerDetector(default_pointer_path(), threads=1), TextReader(threads=1))


def test_text_under_the_logged_click_is_read_and_video_only_ignores_the_log(perceiver):
    traj = load(SAMPLES / "miniwob" / "click-tab-success")
    kf = load_keyframes(traj, 50)
    with_log = perceive_run(perceiver, traj, kf)
    logged = [ln for fp in with_log.frames for ln in fp.lines if ln.by == "log"]
    assert logged, "nothing read under the log's click points"
    ex = make_example(with_log, traj.instruction, kf.steps)
    assert "actions" in ex.evidence and "coordinates" in ex.evidence
    plain = perceive_run(perceiver, traj, kf, use_log=False)
    assert not any(ln.by == "log" for fp in plain.frames for ln in fp.lines)
    assert make_example(plain, traj.instruction, kf.steps, use_log=False).evidence == ["video"]


def test_pruning_reads_each_changed_line_once_and_carries_the_rest(perceiver):
    traj = load(SAMPLES / "miniwob" / "email-inbox-success")
    kf = load_keyframes(traj, 50)
    perceiver.reader._cache.clear()
    pruned = perceive_run(perceiver, traj, kf, prune=True)
    unpruned = perceive_run(perceiver, traj, kf, prune=False)
    assert pruned.reads < 0.7 * unpruned.reads, (pruned.reads, unpruned.reads)
    last = len(kf.frames) - 1
    carried = [ln for fp in pruned.frames[:1] for ln in fp.lines if not ln.by and ln.t_end == last]
    assert carried, "no line of the first screen is known to be on the last one"
