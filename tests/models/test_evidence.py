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


def _acts(instruction: str, actions: list[StepAction] | None) -> list[float]:
    from models.features import _acts as acts

    return [float(x) for x in acts(instruction, [], actions)]


def test_a_run_that_edits_after_its_last_save_or_never_saves_is_told_apart():
    ask = "In scores.xlsx, enter 191 in C5, 54 in C6, then save the file in its current format."
    saved = [StepAction(["click"], (10, 10)), StepAction(["type"], None, "191\n"), StepAction(["type"], None, "54\n"),
             StepAction(["key"], None, "", "ctrl+s"), StepAction(["key"], None, "", "enter")]
    assert _acts(ask, saved)[:2] == [1.0, 1.0]  # asked to save, saved after the last edit (Enter edits nothing)
    edited_after = saved[:1] + saved[3:4] + saved[1:3]
    assert _acts(ask, edited_after)[1] == 0.5
    assert _acts(ask, saved[:3])[1] == 0.0  # never saved
    assert _acts("Delete the file walnut.png.", saved)[0] == 0.0  # not asked
    assert _acts(ask, None) == [1.0, 0.0, 0.0, 0.0]  # a plain recording says nothing of keys


def test_a_value_typed_nearly_but_never_exactly_is_a_slip_and_bursts_read_whole():
    ask = 'Add the line "Tara paid on Tuesday at 12:30" at the end of contacts.txt and save it.'
    bursts = [StepAction(["type"], None, "Tara paid on "), StepAction(["type"], None, "Tuesday at 12:30")]
    f = _acts(ask, bursts)
    assert f[2] == 0.0 and f[3] == 1.0  # both values ("tarapaid...", "12:30") typed exactly across two bursts
    slip = [StepAction(["type"], None, "Tara paid on Tuesday at 12:03")]
    f = _acts(ask, slip)
    assert f[2] == 1.0 and f[3] == 0.0
    fixed = slip + [StepAction(["key"], None, "", "ctrl+a"),
                    StepAction(["type"], None, "Tara paid on Tuesday at 12:30")]
    assert _acts(ask, fixed)[2] == 0.0  # typed right afterwards: not a slip left standing
    assert _acts(ask, [StepAction(["type"], None, "hello")])[2:] == [0.0, 0.0]  # unrelated text is no slip


def test_typing_is_replayed_per_field_with_erasures_and_select_all():
    from models.evidence import typed_fields

    acts = [StepAction(["click"], (5, 5)), StepAction(["type"], None, "Oa"), StepAction(["type"], None, "ula"),
            StepAction(["key"], None, "", "Tab"), StepAction(["type"], None, "Macoe"),
            StepAction(["key"], None, "", "Backspace Backspace"), StepAction(["type"], None, "ie"),
            StepAction(["click"], (9, 9)), StepAction(["type"], None, "draft"), StepAction(["key"], None, "", "Ctrl+a"),
            StepAction(["type"], None, "final")]
    assert typed_fields(acts) == [(1, "Oaula"), (4, "Macie"), (8, "final")]
    assert typed_fields([StepAction(["key"], None, "", "Backspace")]) == []  # erasing nothing types nothing


def test_the_first_deviation_is_where_a_near_miss_of_a_term_was_typed():
    from models.evidence import Contradiction, contradiction

    ask = "Find the email by Dierdre and forward that email to Paula."
    typo = [StepAction(["click"], (1, 1)), StepAction(["click"], (2, 2)), StepAction(["type"], None, "Oa"),
            StepAction(["type"], None, "u"), StepAction(["type"], None, "la"), StepAction(["click"], (3, 3))]
    assert contradiction(ask, typo) == Contradiction(2, "Oaula", "Paula")  # where typing began, not where it ended
    right = typo[:2] + [StepAction(["type"], None, "Pa"), StepAction(["type"], None, "ula")]
    assert contradiction(ask, right) is None
    recovered = typo[:5] + [StepAction(["key"], None, "", "ctrl+a"), StepAction(["type"], None, "Paula")]
    assert contradiction(ask, recovered) is None  # corrected before it left the field
    # a log that drops the space between bursts, a value typed after a cell address, unrelated text: no deviation
    assert contradiction('Add the line "Farah called on Friday" to tasks.txt.',
                         [StepAction(["type"], None, "Farah called on Fridayat")]) is None
    assert contradiction("In budget.xlsx, enter 329 in C5.", [StepAction(["type"], None, "C5 329")]) is None
    assert contradiction(ask, [StepAction(["type"], None, "hello world")]) is None
    assert contradiction(ask, None) is None  # a plain recording has no typing to read
    found = contradiction('Type "vanda" in upper case.', [StepAction(["type"], None, "VAND")])  # a letter dropped
    assert found is not None and found.frame == 0


def test_the_judge_places_the_first_deviation_where_the_log_typed_a_near_miss(perceiver):
    import numpy as np

    from models.runtime import first_deviation

    traj = load(SAMPLES / "osworld" / "miniwob-login-user")  # types "kasie" at step 1, "tsdvP" at step 3
    kf = load_keyframes(traj, 50)
    percept = perceive_run(perceiver, traj, kf)
    asked = make_example(percept, 'Enter the username "kasie" and the password "tsdvQP" into the text fields.',
                         kf.steps)
    assert asked.contradiction is not None and asked.contradiction.frame == kf.steps.index(3)
    flat = np.zeros(asked.n_frames)
    assert first_deviation(asked, flat) == kf.steps.index(3)  # the evidence wins over the network's guess
    right = make_example(percept, traj.instruction, kf.steps)
    assert right.contradiction is None and first_deviation(right, np.eye(right.n_frames)[-1]) == right.n_frames - 1
    video_only = make_example(percept, 'Enter the username "kasie" and the password "tsdvQP".', kf.steps,
                              use_log=False)
    assert video_only.contradiction is None  # a plain recording has no log to contradict


def _stopped_run(acted_text: str):
    """A two-keyframe run: a click on a line reading ``acted_text`` that changed the screen, then a DONE claim that
    changed nothing."""
    import numpy as np

    from models.evidence import RunEvidence
    from models.perception import FramePercept, ReadLine, RunPercept
    from models.pointer import PointerHit
    from models.text import Box

    def frame(change: float, lines: list[ReadLine]) -> FramePercept:
        return FramePercept(420, 320, PointerHit(0.0, 0.0, 0.0), False, (50.0, 50.0), "none", change, len(lines),
                            lines)

    acted = ReadLine(Box(40, 40, 60, 16), acted_text, 0.9, True, True, 0.0, 1, "log", False)
    percept = RunPercept(masks=np.ones((2, 4, 4), bool), frames=[frame(0.2, [acted]), frame(0.0, [])],
                         visual=np.zeros((0, 16, 16), np.uint8), visual_pos=np.zeros((0, 3), np.int64),
                         visual_feat=np.zeros((0, 3), np.float32),
                         evidence=RunEvidence([StepAction(["click"], (50.0, 50.0)), StepAction(["done"])], "done"))
    return percept


def test_a_done_claim_right_after_the_asked_act_is_where_a_failed_run_stopped_too_early():
    import numpy as np

    from models.runtime import first_deviation

    ask = 'Select "Cocos Islands" from the list and click Submit.'
    right = make_example(_stopped_run("Cocos Islands"), ask, [0, 1])
    assert right.early_stop == 1
    at_end = np.array([0.9, 0.1])  # the network points at the run's last act
    assert first_deviation(right, at_end) == 1  # ... which did what was asked: the stop is the deviation
    assert first_deviation(right, np.array([0.1, 0.9])) == 1
    wrong = make_example(_stopped_run("Heard Island"), ask, [0, 1])
    assert wrong.early_stop == -1 and first_deviation(wrong, at_end) == 0  # the act itself was wrong
    assert make_example(_stopped_run("Cocos Islands"), ask, [0, 1], use_log=False).early_stop == -1  # no claim seen


def test_a_hover_or_a_wait_is_never_where_a_logged_run_deviates():
    import numpy as np

    from models.evidence import RunEvidence
    from models.perception import FramePercept, ReadLine, RunPercept
    from models.pointer import PointerHit
    from models.runtime import first_deviation
    from models.text import Box

    def frame(change: float, lines: list[ReadLine]) -> FramePercept:
        return FramePercept(420, 320, PointerHit(0.0, 0.0, 0.0), False, (50.0, 50.0), "none", change, len(lines),
                            lines)

    acted = ReadLine(Box(40, 40, 60, 16), "Heard Island", 0.9, True, True, 0.0, 1, "log", False)
    log = [StepAction(["move"]), StepAction(["click"], (50.0, 50.0)), StepAction(["wait"]), StepAction(["done"])]
    percept = RunPercept(masks=np.ones((4, 4, 4), bool),
                         frames=[frame(0.1, []), frame(0.2, [acted]), frame(0.0, []), frame(0.0, [])],
                         visual=np.zeros((0, 16, 16), np.uint8), visual_pos=np.zeros((0, 3), np.int64),
                         visual_feat=np.zeros((0, 3), np.float32), evidence=RunEvidence(log, "done"))
    ask = 'Select "Cocos Islands" from the list and click Submit.'
    ex = make_example(percept, ask, [0, 1, 2, 3])
    assert ex.acts == [1] and ex.claim_frame == 3  # the click acted; the DONE after it is the run's claim
    assert first_deviation(ex, np.array([0.5, 0.2, 0.25, 0.05])) == 1  # the hover is the network's peak: the act
    assert first_deviation(ex, np.array([0.1, 0.2, 0.4, 0.3])) == 3  # the wait is: the claim, likelier than the act
    plain = make_example(percept, ask, [0, 1, 2, 3], use_log=False)
    assert plain.acts == [] and plain.claim_frame == -1
    assert first_deviation(plain, np.array([0.5, 0.2, 0.25, 0.05])) == 0  # no log: the network's keyframe as it is


def test_keys_pressed_as_a_list_and_newlines_in_typed_text_are_replayed_like_an_editor():
    from gui_app.core.trajectory.actions import parse_action
    from models.evidence import typed_fields

    erase = parse_action("pyautogui.press(['backspace', 'backspace'])").text  # the core joins a list like a chord
    acts = [StepAction(["type"], None, "Macoe"), StepAction(["key"], None, "", erase), StepAction(["type"], None, "ie"),
            StepAction(["click", "type"], (4, 4), "16\n701\n"), StepAction(["key"], None, "", "shift+tab"),
            StepAction(["type"], None, "x")]
    assert typed_fields(acts) == [(0, "Macie"), (3, "16"), (3, "701"), (5, "x")]


def test_the_reason_names_what_was_typed_but_never_repeats_a_secret(perceiver):
    import numpy as np

    from models.runtime import _deviation

    traj = load(SAMPLES / "osworld" / "miniwob-login-user")  # types "kasie" at step 1, "tsdvP" at step 3
    kf = load_keyframes(traj, 50)
    percept = perceive_run(perceiver, traj, kf)
    ask = 'Enter the username "kassie" and the password "tsdvP" into the text fields.'
    ex = make_example(percept, ask, kf.steps)
    frame, why = _deviation(ex, np.zeros(ex.n_frames), ask)
    assert frame == kf.steps.index(1) and why == 'typed "kasie" where the instruction names "kassie"'
    secret = 'Enter the username "kasie" and the password "tsdvQP" into the text fields.'
    ex = make_example(percept, secret, kf.steps)
    frame, why = _deviation(ex, np.zeros(ex.n_frames), secret)
    assert frame == kf.steps.index(3) and "tsdv" not in why and "secret" in why
    ex = make_example(percept, traj.instruction, kf.steps)
    assert _deviation(ex, np.eye(ex.n_frames)[0], traj.instruction) == (0, "")  # the network's: no words
