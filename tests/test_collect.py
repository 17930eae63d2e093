"""Real MiniWoB++ episodes in headless Chromium: labels, files, cursor, no reward leak, resumable collection."""

from __future__ import annotations

import json
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from gui_app.core.trajectory.formats import native
from gui_app.training.sprite import cursor_sprite, draw_cursor
from gui_app.recorders.agents import typo
from gui_app.recorders.miniwob import TASK_CLIP, MiniWoBRecorder, collect, is_recorded

pytestmark = pytest.mark.slow

# Where the page puts the reward display and whether the end-of-episode cover shows, read from the live DOM.
_GEOMETRY_JS = """
var r = document.getElementById('reward-display').getBoundingClientRect();
var c = document.getElementById('sync-task-cover');
return {reward_left: r.left, cover: c ? window.getComputedStyle(c).display : 'none',
        done: WOB_DONE_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL};
"""


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    out = tmp_path_factory.mktemp("rec")
    res, geo = {}, {}
    with MiniWoBRecorder("login-user") as rec:
        res["clean"] = rec.record(seed=7, episode=0, out_dir=out / "clean")
        geo["clean"] = rec.driver.execute_script(_GEOMETRY_JS)
    with MiniWoBRecorder("click-button") as rec:
        res["wrong"] = rec.record(seed=8, episode=1, out_dir=out / "wrong", mistake="wrong_element")
        geo["wrong"] = rec.driver.execute_script(_GEOMETRY_JS)
    return res, geo


def _decode(path: str) -> list[np.ndarray]:
    with av.open(path) as c:
        s = c.streams.video[0]
        assert s.codec_context.name == "h264"
        frames = []
        for f in c.decode(s):
            assert f.format.name == "yuv420p"
            frames.append(f.to_ndarray(format="rgb24"))
    return frames


def _png(path: str) -> np.ndarray:
    return cv2.imread(path, cv2.IMREAD_COLOR)[:, :, ::-1]


def test_labels_agree_with_the_environment(episodes):
    res, geo = episodes
    clean, wrong = res["clean"], res["wrong"]
    assert clean.success and clean.raw_reward == 1.0 and clean.mistake_type is None
    assert not wrong.success and wrong.raw_reward == -1.0
    assert wrong.mistake_type == "wrong_element" and wrong.first_error_step == 0
    for key, r in res.items():
        # The page itself says the same: terminated, with this raw reward.
        assert geo[key]["done"] is True and float(geo[key]["raw"]) == r.raw_reward
        traj = native.load(r.path)
        assert traj.outcome.success is (r.raw_reward == 1.0)
        assert traj.outcome.source == "env" and traj.outcome.score == r.raw_reward
        md = traj.metadata
        assert md["raw_reward"] == r.raw_reward and md["agent"] == "scripted-v1"
        assert md["negative_kind"] == ("none" if r.success else "real_failure")
        assert md["utterance"] == traj.instruction and md["fields"]


def test_files_are_valid_native_trajectories(episodes):
    res, _ = episodes
    for r in res.values():
        traj = native.load(r.path)
        assert not traj.warnings
        assert traj.n_steps == r.n_steps >= 1
        frames = _decode(traj.video.path)
        assert len(frames) == traj.n_steps + 1 == traj.video.frames
        assert frames[0].shape == (420, 320, 3) and traj.video.fps == 1.0
        assert Path(traj.video.path).stat().st_size < 60_000
        for s in traj.steps:
            assert (s.t_start, s.t_end) == (float(s.index), float(s.index + 1))
            assert Path(s.screenshot).name == f"step_{s.index:03d}.png"
            assert s.action and s.action_type in ("click", "type", "key", "scroll")
            # The step's screenshot is video frame index+1 (the result of its action).
            shot = _png(s.screenshot).astype(int)
            assert np.abs(shot - frames[s.index + 1].astype(int)).mean() < 6
        assert (Path(r.path) / "frames" / "initial.png").is_file()
    clean = native.load(res["clean"].path)
    typed = [s for s in clean.steps if s.action_type == "type"]
    assert [s.text for s in typed] == [clean.metadata["fields"]["username"], clean.metadata["fields"]["password"]]
    assert typed[0].action == json.dumps(typed[0].text).join(("type(", ")"))


def test_cursor_sprite_is_drawn_at_the_pointer(episodes):
    res, _ = episodes
    outline, fill = cursor_sprite(2)
    checked = 0
    for r in res.values():
        for s in native.load(r.path).steps:
            if s.action_type != "click":
                continue
            img = _png(s.screenshot)
            x0, y0 = int(round(s.x)), int(round(s.y))
            assert s.action == f"click(x={round(s.x)}, y={round(s.y)})"
            h, w = outline.shape
            region = img[y0:y0 + h, x0:x0 + w]
            o, f = outline[:region.shape[0], :region.shape[1]], fill[:region.shape[0], :region.shape[1]]
            assert (region[o] == 0).all(), "cursor outline missing at the click point"
            assert (region[f] == 255).all(), "cursor fill missing at the click point"
            checked += 1
    assert checked >= 3
    # draw_cursor clips at the frame edge instead of failing.
    edge = draw_cursor(np.full((20, 20, 3), 128, np.uint8), 15, 15, 2)
    assert (edge[15:, 15:] == 0).any()


def test_no_frame_gives_the_reward_away(episodes):
    res, geo = episodes
    for key, r in res.items():
        # The reward display lies right of the captured task area, and the end cover stayed hidden.
        assert geo[key]["reward_left"] >= TASK_CLIP[0] + TASK_CLIP[2]
        assert geo[key]["cover"] == "none"
        traj = native.load(r.path)
        last = _png(traj.steps[-1].screenshot)
        cover = np.all(np.abs(last.astype(int) - 17) <= 2, axis=-1).mean()  # MiniWoB's cover is #111
        assert cover < 0.3, f"{key}: the last frame looks like the end-of-episode cover"
        assert (last[:80] == (255, 255, 0)).all(axis=-1).mean() > 0.2  # the yellow instruction bar is visible


def test_collect_is_resumable(tmp_path):
    out = tmp_path / "c"
    rep = collect(["click-test"], 2, out, seed=5, fail_rate=0.0, workers=1)
    assert rep.recorded == 2 and rep.skipped == 0 and not rep.errors
    dirs = sorted((out / "click-test").iterdir())
    assert len(dirs) == 2 and all(is_recorded(d) for d in dirs)
    assert all(native.load(d).outcome.success for d in dirs)
    summary = json.loads((out / "collect_summary.json").read_text())
    assert summary["by_task"]["click-test"]["success"] == 2


def test_collect_command_skips_finished_episodes(tmp_path, capsys):
    import argparse

    from gui_app.commands import collect as cmd
    from gui_app.recorders.miniwob import CollectError

    def run(*argv: str) -> int:
        p = argparse.ArgumentParser()
        cmd.add_arguments(p)
        return cmd.run(p.parse_args(list(argv)))

    out = tmp_path / "c"
    assert collect(["click-test"], 1, out, seed=6, fail_rate=0.0).recorded == 1
    assert run("miniwob", "--tasks", "click-test", "--episodes", "1", "--out", str(out), "--seed", "6", "--json") == 0
    info = json.loads(capsys.readouterr().out)
    assert info["skipped"] == 1 and info["recorded"] == 0
    with pytest.raises(CollectError, match="no scripted agent"):
        run("miniwob", "--tasks", "no-such-task", "--out", str(out))


def test_typo_is_never_a_noop():
    import random

    rng = random.Random(0)
    for word in ("a", "ab", "hello", "Sfz", "zz"):
        for _ in range(50):
            assert typo(word, rng) != word
