"""Format-level hostile input: counts that would never end, FIFOs that would block for ever, media paths that leave
the trajectory, and the inputs that used to load as if nothing were wrong."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_helpers import REPO

from gui_app import cli
from gui_app.core.trajectory import formats
from gui_app.core.trajectory.formats import native
from gui_app.core.library.catalog import Catalog
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.model import Step, Trajectory, VideoRef
from tests.formats import builders as b

SAMPLES = REPO / "resources" / "samples"
SAMPLE = SAMPLES / "miniwob" / "click-tab-success"
VIDEO = SAMPLE / "video.mp4"


def inspect_subprocess(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``rollscope inspect`` in a process of its own: a regression that blocks for ever fails on the timeout
    instead of hanging the test run."""
    return subprocess.run([sys.executable, "-m", "gui_app", "inspect", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


# --- 2. endless work and memory ----------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_a_browsergym_summary_claiming_10_billion_steps_is_one_line(tmp_path, capsys):
    """It looped for ever, growing about 29 MB/s, in inspect, scan and the app."""
    run = b.browsergym_dir(tmp_path)["path"]
    summary = json.loads((run / "summary_info.json").read_text())
    summary["n_steps"] = 10_000_000_000
    (run / "summary_info.json").write_text(json.dumps(summary))
    with pytest.raises(TrajectoryFormatError, match="n_steps.*more than 100,000"):
        formats.load(run)
    capsys.readouterr()
    assert cli.main(["scan", str(tmp_path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert len(info["errors"]) == 1 and "n_steps" in info["errors"][0]["error"]


def test_a_fifo_named_as_the_video_never_blocks(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    (run / "video.mp4").unlink()
    os.mkfifo(run / "video.mp4")
    res = inspect_subprocess(str(run), "--json")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["video"] is None
    assert any("video.path': not a regular file" in w for w in info["warnings"])


def test_fifos_anywhere_in_a_library_never_block_a_scan(tmp_path, capsys):
    """A FIFO as a summary, a step log, a screenshot, a sidecar, a file unit: each is passed over or named, and the
    scan ends."""
    lib = tmp_path / "lib"
    shutil.copytree(SAMPLE, lib / "native")
    (lib / "native" / "frames" / "step_000.png").unlink()
    os.mkfifo(lib / "native" / "frames" / "step_000.png")
    gym = b.browsergym_dir(lib)["path"]
    (gym / "summary_info.json").unlink()
    os.mkfifo(gym / "summary_info.json")
    os.mkfifo(gym / "experiment.log.tmp")
    shots = b.image_folder(lib / "shots")["path"]
    os.mkfifo(shots / "steps.jsonl")
    os.mkfifo(lib / "stray.json")
    os.mkfifo(lib / "trajectory.jsonl")
    code = subprocess.run([sys.executable, "-m", "gui_app", "scan", str(lib), "--json"], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert code.returncode == 0, code.stderr
    info = json.loads(code.stdout)
    assert info["trajectories"] >= 3
    traj = formats.load(lib / "native")
    assert any("steps[0].screenshot': not a regular file" in w for w in traj.warnings)
    assert any("steps.jsonl: not a regular file" in w for w in formats.load(shots).warnings)


# --- 5. paths stay inside the trajectory's folder or the library ---------------------------------------------------

OUTSIDE = ["/etc/passwd", "../../etc/passwd", "/proc/self/environ"]


@pytest.mark.parametrize("bad", OUTSIDE)
def test_native_media_outside_the_folder_are_refused(tmp_path, bad):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    doc = json.loads((run / "trajectory.json").read_text())
    doc["steps"][0]["screenshot"] = bad
    doc["video"]["path"] = bad
    (run / "trajectory.json").write_text(json.dumps(doc))
    traj = formats.load(run)
    assert traj.steps[0].screenshot is None and traj.video is None
    assert any("steps[0].screenshot'" in w and "outside the trajectory's folder" in w for w in traj.warnings)
    assert any("video.path'" in w and "outside the trajectory's folder" in w for w in traj.warnings)


def test_symlinks_are_followed_only_when_they_stay_inside(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "miniwob" / "login-user-success", run)
    (run / "frames" / "step_000.png").unlink()
    (run / "frames" / "step_000.png").symlink_to("/etc/passwd")
    (run / "frames" / "inside.png").symlink_to(run / "frames" / "step_001.png")
    doc = json.loads((run / "trajectory.json").read_text())
    doc["steps"][1]["screenshot"] = "frames/inside.png"
    (run / "trajectory.json").write_text(json.dumps(doc))
    traj = formats.load(run)
    assert traj.steps[0].screenshot is None
    assert traj.steps[1].screenshot == str((run / "frames" / "step_001.png").resolve())
    assert sum("outside the trajectory's folder" in w for w in traj.warnings) == 1


def test_atif_agentnet_osworld_and_plain_video_refuse_outside_media(tmp_path):
    atif = b.atif_file(tmp_path / "atif")
    doc = atif["doc"]
    doc["steps"][2]["observation"]["results"][0]["content"][1]["source"]["path"] = "/etc/passwd"
    atif["path"].write_text(json.dumps(doc))
    t = formats.load(atif["path"])
    assert "/etc/passwd" not in [s.screenshot for s in t.steps]
    assert any("outside the trajectory's folder" in w for w in t.warnings)

    an = b.agentnet_file(tmp_path / "an")
    tasks = [json.loads(line) for line in an["path"].read_text().splitlines()]
    tasks[0]["traj"][0]["image"] = "../../../../../../etc/passwd"
    an["path"].write_text("\n".join(json.dumps(x) for x in tasks) + "\n")
    t = formats.load(f"{an['path']}#0")
    assert t.steps[0].screenshot is None and any("outside the trajectory's folder" in w for w in t.warnings)

    ow = b.osworld_dir(tmp_path / "osw", video=None)
    root = ow["path"]
    lines = [json.loads(x) for x in (root / "traj.jsonl").read_text().splitlines()]
    lines[0]["screenshot_file"] = "/etc/shadow"
    (root / "traj.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    t = formats.load(root)  # the aligner reads only the screenshots the importer let through
    assert t.steps[0].screenshot is None and any("/etc/shadow is outside" in w for w in t.warnings)

    pv = b.plain_video_dir(tmp_path / "pv")
    video = next(p for p in pv["path"].iterdir() if p.suffix == ".mp4")
    elsewhere = tmp_path / "elsewhere.mp4"
    video.rename(elsewhere)
    video.symlink_to(elsewhere)
    with pytest.raises(TrajectoryFormatError, match="links outside the trajectory's folder"):
        formats.load(pv["path"])


def test_a_library_root_lets_a_run_reference_media_elsewhere_in_the_library(capsys):
    """The derived samples reference the recordings of miniwob/ (``../../miniwob/...``): inside the samples
    library, not inside their own folders."""
    derived = SAMPLES / "derived" / "email-inbox-truncated"
    alone = formats.load(derived)
    assert alone.video is None and any("outside the trajectory's folder" in w for w in alone.warnings)
    within = formats.load(derived, library_root=SAMPLES)
    assert within.video is not None and not within.warnings
    capsys.readouterr()
    assert cli.main(["inspect", str(derived), "--root", str(SAMPLES), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["video"] is not None


# --- 7. no silent wrong results ------------------------------------------------------------------------------------

def _native_with(tmp_path: Path, **step0) -> Path:
    traj = Trajectory(id="t", steps=[Step(0, t_start=1.0, t_end=2.0), Step(1, t_start=2.0, t_end=3.0)])
    for k, v in step0.items():
        setattr(traj.steps[0], k, v)
    native.save(traj, tmp_path / "run")
    return tmp_path / "run"


@pytest.mark.parametrize(("step0", "says"), [({"t_start": 5.0, "t_end": 1.0}, "ends (1 s) before it starts (5 s)"),
                                             ({"t_start": 1e308, "t_end": None}, "1e+308 s is past"),
                                             ({"t_start": 9.0}, "starts (2 s) before the previous step")])
def test_native_times_that_cannot_be_right_are_warned_about(tmp_path, step0, says):
    traj = formats.load(_native_with(tmp_path, **step0))
    assert any(says in w for w in traj.warnings), traj.warnings
    assert all(t is None or t <= 1e6 for s in traj.steps for t in (s.t_start, s.t_end))


@pytest.mark.parametrize("content", ["empty", "text", "truncated"])
def test_a_broken_native_video_is_not_believed(tmp_path, content):
    """fps and frames in the JSON made a 0-byte, text or truncated video.mp4 look fine."""
    data = VIDEO.read_bytes()
    video = {"empty": b"", "text": b"not a video at all\n" * 20, "truncated": data[: len(data) // 2]}[content]
    traj = Trajectory(id="v", steps=[Step(0)], video=VideoRef(str(tmp_path / "run" / "video.mp4"), 1.0, 2, 320, 420))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "video.mp4").write_bytes(video)
    native.save(traj, tmp_path / "run")
    t = formats.load(tmp_path / "run")
    assert t.video is None
    assert any("video.path'" in w and "recording not used" in w for w in t.warnings), t.warnings


def test_an_unusable_image_folder_step_log_is_named(tmp_path):
    folder = b.image_folder(tmp_path / "shots")["path"]
    (folder / "steps.jsonl").write_text('{"note": "a log of something else"}\n')
    t = formats.load(folder)
    assert any("steps.jsonl: its first record has no action, screenshot or time" in w for w in t.warnings)
    (folder / "steps.jsonl").unlink()
    (folder / "steps.jsonl").mkdir()  # what a bad copy or permissions may leave
    assert any("steps.jsonl: not a regular file" in w for w in formats.load(folder).warnings)


def test_a_broken_plain_video_is_an_error_not_its_screenshots_folder(tmp_path, capsys):
    """Its shots/ subfolder used to be indexed as a trajectory of its own, and the run itself vanished."""
    pv = b.plain_video_dir(tmp_path / "lib" / "pv")
    video = next(p for p in pv["path"].iterdir() if p.suffix == ".mp4")
    video.write_bytes(b"\x00" * 1000)
    b.image_folder(pv["path"] / "shots")
    capsys.readouterr()
    assert cli.main(["scan", str(tmp_path / "lib"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["trajectories"] == 0 and info["units"] == 1
    assert info["errors"][0]["path"] == str(pv["path"]) and "video" in info["errors"][0]["error"]


def test_atif_and_agentnet_files_with_a_bom_load(tmp_path):
    atif = b.atif_file(tmp_path / "atif")
    atif["path"].write_bytes(b"\xef\xbb\xbf" + atif["path"].read_bytes())
    an = b.agentnet_file(tmp_path / "an")
    an["path"].write_bytes(b"\xef\xbb\xbf" + an["path"].read_bytes())
    assert formats.detect(atif["path"]).name == "atif" and formats.load(atif["path"]).steps
    assert formats.detect(an["path"]).name == "agentnet" and len(formats.load_all(an["path"])) == len(an["tasks"])
    run = tmp_path / "native"
    shutil.copytree(SAMPLE, run)
    (run / "trajectory.json").write_bytes(b"\xef\xbb\xbf" + (run / "trajectory.json").read_bytes())
    assert formats.load(run).n_steps > 0


def test_a_symlink_to_itself_does_not_make_an_image_folder_vanish(tmp_path):
    folder = b.image_folder(tmp_path / "lib" / "shots")["path"]
    (folder / "sub").symlink_to(".")
    assert formats.detect(folder).name == "image_folder"
    with Catalog(tmp_path / "cat.sqlite") as cat:
        report = cat.scan(tmp_path / "lib")
    assert report.trajectories == 1 and report.by_format == {"image_folder": 1}
