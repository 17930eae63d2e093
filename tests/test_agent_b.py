"""Agent B and the recording styles in real headless Chromium: labels equal the environment's raw reward, B's own
habits (hover before clicks, WAIT/DONE steps, recoveries) are in the recording, and styles change the frames."""

from __future__ import annotations

import json
import random
from pathlib import Path

import cv2
import numpy as np
import pytest

from gui_app.core.trajectory.formats import native
from gui_app.recorders import registry
from gui_app.recorders.miniwob import MiniWoBRecorder, collect, episode_dir, is_recorded
from gui_app.recorders.styles import POINTER_ROLE_JS, Style

pytestmark = pytest.mark.slow

_PAGE_JS = "return {done: WOB_DONE_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL};"


def _png(path: str | Path) -> np.ndarray:
    return cv2.imread(str(path), cv2.IMREAD_COLOR)[:, :, ::-1]


def _record(rec: MiniWoBRecorder, out: Path, seed: int, mistake: str | None, style: Style | None = None,
            agent: str = "B", keep_clean: bool = False):
    r = rec.record(seed, 0, out, mistake=mistake, rng=random.Random(seed), style=style, agent=agent,
                   keep_clean=keep_clean)
    page = rec.driver.execute_script(_PAGE_JS)
    return r, page


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("b")
    got = {}
    with MiniWoBRecorder("login-user") as rec:
        got["clean"] = _record(rec, out / "clean", 11, None)
        got["recover"] = _record(rec, out / "recover", 12, "wrong_then_recover")
        got["typo"] = _record(rec, out / "typo", 13, "typo")
    with MiniWoBRecorder("click-checkboxes") as rec:
        got["extra"] = _record(rec, out / "extra", 14, "extra_checkbox")
    with MiniWoBRecorder("click-option") as rec:
        got["stop"] = _record(rec, out / "stop", 15, "premature_stop")
    return got


def test_b_labels_are_the_environment_reward(runs):
    for key, (r, page) in runs.items():
        traj = native.load(r.path)
        assert traj.agent == "scripted-v2" and traj.metadata["agent_key"] == "B"
        env_success = bool(page["done"]) and float(page["raw"]) == 1.0
        assert traj.outcome.success is env_success is r.success, key
        assert traj.outcome.source == "env"
    assert runs["clean"][0].success and runs["recover"][0].success
    assert not runs["typo"][0].success and not runs["extra"][0].success and not runs["stop"][0].success
    # A stop before Submit leaves the episode open: the page never terminated.
    assert runs["stop"][1]["done"] is False


def test_b_marks_first_deviation_and_recoveries(runs):
    rec = native.load(runs["recover"][0].path)
    md = rec.metadata
    assert md["first_error_step"] is None and md["mistake_type"] == "wrong_then_recover"
    k = md["recovered_step"]
    assert k is not None and rec.steps[k].action_type in ("type", "key")  # the slip itself (or a select-all)
    # The slip is mended afterwards: erased back to the slip with Backspace, and/or the rest typed again.
    fields = rec.metadata["fields"]
    mend = [s for s in rec.steps[k + 1:] if s.action == 'press("Backspace")' or s.action_type == "type"]
    assert mend, "the slip is mended"
    assert rec.steps[k].text not in (fields["username"], fields["password"])
    typo = native.load(runs["typo"][0].path)
    fes = typo.metadata["first_error_step"]
    assert typo.steps[fes].action_type == "type"
    typed = [s.text for s in typo.steps if s.action_type == "type"]
    fields = typo.metadata["fields"]
    assert "".join(typed) != fields["username"] + fields["password"]
    extra = native.load(runs["extra"][0].path)
    fes = extra.metadata["first_error_step"]
    label = extra.steps[fes].extra["target"]
    assert extra.steps[fes].action_type == "click" and label.startswith("checkbox ")
    assert label.removeprefix("checkbox ") not in extra.metadata["fields"].values()  # a box nobody asked for
    stop = native.load(runs["stop"][0].path)
    assert stop.metadata["mistake_type"] == "premature_stop"
    assert stop.metadata["first_error_step"] == stop.n_steps - 1


def test_b_habits_are_in_the_recording(runs):
    moves = waits = dones = 0
    for key, (r, _) in runs.items():
        traj = native.load(r.path)
        harmless = set(traj.metadata["harmless_steps"])
        for s in traj.steps:
            if s.action_type == "move":
                moves += 1
            if s.action_type in ("wait", "done"):
                waits += s.action_type == "wait"
                dones += s.action_type == "done"
                assert s.index in harmless
                # The keyframe of a WAIT or DONE shows the unchanged screen (a text caret may blink).
                before = _png(traj.steps[s.index - 1].screenshot) if s.index else _png(
                    Path(r.path) / "frames" / "initial.png")
                diff = np.abs(_png(s.screenshot).astype(int) - before.astype(int)).max(axis=-1)
                assert (diff > 40).mean() < 0.01, (key, s.action)
    assert moves >= 3, "agent B hovers before clicking"
    assert waits + dones >= 1


def test_styles_change_the_frames(tmp_path):
    plain = Style()
    styled = Style(family="B", pointer="DMZ-Black", pointer_size=24, dsf=1.5, font="DejaVu Serif", font_size=11.5,
                   scheme="mint", margin=20, pad=0, resize=1.0)
    with MiniWoBRecorder("login-user") as rec:
        a, _ = _record(rec, tmp_path / "plain", 21, None, style=plain, agent="A")
        b, _ = _record(rec, tmp_path / "styled", 21, None, style=styled, agent="A", keep_clean=True)
        font = rec.driver.execute_script("return getComputedStyle(document.getElementById('query')).fontFamily;")
        role = rec.driver.execute_script(POINTER_ROLE_JS, *_centre(rec, "#username"))
    assert "DejaVu Serif" in font
    assert role == "text"  # the I-beam over a text field
    ta, tb = native.load(a.path), native.load(b.path)
    assert ta.metadata["style"]["family"] == "plain" and tb.metadata["style"]["family"] == "B"
    assert (ta.video.width, ta.video.height) == (320, 420)
    assert (tb.video.width, tb.video.height) == (270, 346)  # (160 + 20) * 1.5, (210 + 20) * 1.5 (even)
    assert ta.instruction == tb.instruction  # same seed, same task: only the look differs
    # The pointer of the theme is drawn at the click: the frame differs from the clean screen right there.
    click = next(s for s in tb.steps if s.action_type == "click")
    shot, clean = _png(click.screenshot), _png(Path(b.path) / click.extra["screenshot_clean"])
    diff = np.abs(shot.astype(int) - clean.astype(int)).max(axis=-1) > 30
    ys, xs = np.nonzero(diff)
    assert diff.sum() > 40
    assert abs(np.median(xs) - click.x) < 30 and abs(np.median(ys) - click.y) < 30
    # The mint scheme's instruction bar colour, not MiniWoB's yellow.
    bar = _png(tb.steps[0].screenshot)[5:20, 5:150].reshape(-1, 3)
    assert np.abs(bar.astype(int) - (0xC8, 0xF7, 0xDC)).sum(axis=1).min() < 30
    assert not (np.abs(bar.astype(int) - (255, 255, 0)).sum(axis=1) < 30).any()


def _centre(rec: MiniWoBRecorder, sel: str) -> tuple[float, float]:
    el = rec.query(sel)[0]
    return el.cx, el.cy


def test_collect_mix_in_both_layouts(tmp_path):
    rep = collect(["click-test"], 3, tmp_path / "c", seed=4, fail_rate=0.0, agent="mix", styles="all",
                  layout="both")
    assert rep.recorded == 3 and not rep.errors
    from gui_app.recorders.miniwob import plan_episode

    agents = set()
    for ep in range(3):
        seed = 4 * 1_000_000 + ep
        plan = plan_episode("click-test", seed, 0.0, "mix", "all")
        agents.add(plan.agent)
        d = episode_dir(tmp_path / "c", "click-test", seed, plan.agent)
        assert is_recorded(d)
        md = native.load(d).metadata
        assert md["style"]["family"] in ("A", "B") and md["agent"] == registry.AGENT_NAMES[plan.agent]
    runs = sorted((tmp_path / "c" / "osworld" / "results").glob("*/*/*/miniwob/*/traj.jsonl"))
    assert len(runs) == 3
    summary = json.loads((tmp_path / "c" / "collect_summary.json").read_text())
    assert summary["agent"] == "mix" and summary["layout"] == "both"
    # A second run resumes: nothing recorded again.
    assert collect(["click-test"], 3, tmp_path / "c", seed=4, fail_rate=0.0, agent="mix", styles="all",
                   layout="both").recorded == 0
