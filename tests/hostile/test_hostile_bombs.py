"""Small files that must not take gigabytes (issue 31, item 2) and the smaller holes of item 7 that belong with them:
a wrong clock, decompression bombs in every image reader, a run of 100,000 steps, a 100 KB action, an MP4 whose
time scale is 0, and a key repeated in one JSON object.

Runs whose failure used to be an allocation of gigabytes go through the real ``rollscope`` in a process of its own,
under an address-space limit: a regression fails here with a MemoryError, it does not take the machine down.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import resource
import shutil
import struct
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from hostile_helpers import one_error_line, rollscope

from gui_app.core.trajectory import formats
from gui_app.core.media import images
from gui_app.core.trajectory.actions import MAX_PARSED_CHARS, parse_action
from gui_app.core.trajectory.align import align_trajectory
from gui_app.core.errors import VideoError
from gui_app.core.safety import MAX_STEPS, container_problem
from gui_app.core.trajectory.model import Step, Trajectory, VideoRef
from gui_app.core.media.video import FrameSource
from tests.formats import builders as b

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "miniwob" / "click-tab-success"
# Address space a child `rollscope inspect` may take: the interpreter, numpy, OpenCV and FFmpeg need about 1.5 GiB
# of it; the regressions asked for 6 to 944 GiB.
CHILD_LIMIT = 4 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_LIMIT, CHILD_LIMIT))


def inspect_json(path: Path) -> dict:
    """``rollscope inspect PATH --json`` under :data:`CHILD_LIMIT`; fails the test on a non-zero exit."""
    res = rollscope("inspect", str(path), "--json", timeout=120, preexec_fn=_limited)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _rewrite(log: Path, change) -> None:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    change(lines)
    log.write_text("".join(json.dumps(rec) + "\n" for rec in lines))


def declared_png(width: int, height: int) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` RGB pixels, with one row of data: a few hundred bytes that
    a decoder would give gigabytes (the rows it lacks are an error only once the image is allocated)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * (1 + 3 * width), 9)) + chunk(b"IEND", b""))


# --- a wrong clock --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("step, stamp", [(0, "ten years early"), (0, "19700101@000000"), (3, "99991231@235959")],
                         ids=["ten-years-early", "1970", "9999"])
def test_a_wrong_clock_is_dropped_with_a_warning_not_gigabytes(tmp_path, step, stamp):
    """One action_timestamp ten years early made inspect of a 152 KB run take 6.1 GB (the offset search sized its
    arrays by the stamps' span in seconds); 1970 to 9999 asked for 944 GiB."""
    run = b.osworld_dir(tmp_path)["path"]

    def wrong(lines: list[dict]) -> None:
        ts = lines[step]["action_timestamp"]
        lines[step]["action_timestamp"] = f"{int(ts[:4]) - 10:04d}{ts[4:]}" if stamp == "ten years early" else stamp

    _rewrite(run / "traj.jsonl", wrong)
    info = inspect_json(run)
    said = [w for w in info["warnings"] if "field 'action_timestamp' of step " in w]
    assert len(said) == 1 and f"step {step}:" in said[0] and "wrong clock" in said[0], info["warnings"]
    # The other steps are still placed by their stamps, where their results show (state s from s seconds on).
    placed = {s["index"]: s for s in info["steps"]}
    for k in {0, 1, 2, 3} - {step}:
        assert placed[k]["align_method"] == "timestamp_offset"
        assert placed[k]["t_end"] == pytest.approx(k + 1, abs=0.5)
    assert placed[step]["align_method"] == "interpolated"


# --- decompression bombs ------------------------------------------------------------------------------------------

def test_the_header_reader_reads_every_kind_and_lets_an_8k_screen_pass(tmp_path):
    screen = np.zeros((4320, 7680, 3), np.uint8)  # 8K: 33 Mpx, the largest real screen
    for ext, kind in ((".png", "png"), (".jpg", "jpeg"), (".webp", "webp"), (".bmp", "bmp")):
        ok, buf = cv2.imencode(ext, screen[:300, :500])
        assert ok
        assert images.image_header(io.BytesIO(buf.tobytes())) == (kind, 500, 300)
    assert images.image_header(io.BytesIO(b"GIF89a" + struct.pack("<HH", 640, 480) + b"\0" * 8)) == ("gif", 640, 480)
    ok, big = cv2.imencode(".jpg", screen)
    # EXIF comes before the frame header in a camera's JPEG: a 60 KB APP1 segment is skipped, not read.
    exif = b"\xff\xe1" + struct.pack(">H", 60_002) + b"Exif\0\0" + b"\0" * 59_994
    data = big.tobytes()[:2] + exif + big.tobytes()[2:]
    assert images.image_header(io.BytesIO(data)) == ("jpeg", 7680, 4320)
    assert images.data_problem(data) is None
    assert images.image_header(io.BytesIO(b"not an image at all")) is None
    assert images.data_problem(declared_png(20_000, 20_000)) == (
        "image of 20000×20000 px is too large (more than 50,000,000 px or 65,535 px a side)")
    assert "too large" in images.data_problem(declared_png(2_000_000, 1))  # OpenCV refuses sides over 2**20


@pytest.mark.parametrize("side", [20_000, 60_000])
def test_a_screenshot_that_declares_gigapixels_is_refused_from_its_header(tmp_path, side):
    """Six 1.2 MB PNGs declaring 20000x20000 px made score take 55 s and 8.2 GB; 60000x60000 px made inspect exit 70
    on an OpenCV assertion."""
    run = b.osworld_dir(tmp_path)["path"]
    bomb = next(run.glob("step_2_*.png"))
    bomb.write_bytes(declared_png(side, side))
    info = inspect_json(run)
    said = [w for w in info["warnings"] if f"image of {side}×{side} px is too large" in w]
    assert len(said) == 1 and "traj.jsonl:2: field 'screenshot_file'" in said[0] and bomb.name in said[0]
    assert info["steps"][1]["screenshot"] is None and info["steps"][0]["screenshot"] is not None


def test_a_native_run_drops_the_bomb_with_its_field(tmp_path):
    run = tmp_path / "native"
    shutil.copytree(SAMPLE, run)
    shot = sorted((run / "frames").glob("*.png"))[1]
    shot.write_bytes(declared_png(60_000, 60_000))
    traj = formats.load(run)
    said = [w for w in traj.warnings if "image of 60000×60000 px is too large" in w]
    assert len(said) == 1 and "field 'steps[" in said[0] and shot.name in said[0], traj.warnings
    assert sum(s.screenshot is None for s in traj.steps) == 1


def test_a_data_uri_in_an_inspect_log_is_measured_before_it_is_kept(tmp_path):
    log = b.inspect_computer_eval(tmp_path / "run.eval", n_samples=1)["path"]
    with zipfile.ZipFile(log) as z:
        members = {n: z.read(n) for n in z.namelist()}
    sample = json.loads(members["samples/1_epoch_1.json"])
    tool = next(m for m in sample["messages"] if m["role"] == "tool")
    ref = next(p["image"] for p in tool["content"] if p["type"] == "image")
    sample["attachments"][ref.removeprefix("attachment://")] = (
        "data:image/png;base64," + base64.b64encode(declared_png(60_000, 60_000)).decode())
    members["samples/1_epoch_1.json"] = json.dumps(sample).encode()
    with zipfile.ZipFile(log, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    traj = formats.load(log)
    said = [w for w in traj.warnings if "image of 60000×60000 px is too large" in w]
    assert len(said) == 1 and said[0].startswith(f"{log}: field 'samples/1_epoch_1.json:messages["), traj.warnings
    kept = [s.screenshot for s in traj.steps if s.screenshot]
    assert len(kept) == 2 and all(images.image_problem(f) is None for f in kept)  # 3 tool results, one refused


def test_an_image_folder_drops_the_bomb_and_keeps_the_rest(tmp_path):
    folder = b.image_folder(tmp_path / "shots")["path"]
    (folder / "shot_2.png").write_bytes(declared_png(60_000, 60_000))
    traj = formats.load(folder)
    assert [Path(s.screenshot).name for s in traj.steps] == ["shot_1.png", "shot_10.png"]
    assert any("shot_2.png: field 'screenshot': image of 60000×60000 px is too large" in w for w in traj.warnings)


def test_every_decoder_refuses_the_bomb_with_its_name(tmp_path):
    """The viewer's frame source, the model's keyframes and conversion decode screenshots that need not have been
    through an importer (a file changed since, a folder opened directly)."""
    folder = tmp_path / "frames"
    b.write_png(folder / "a_1.png", b.screen(1))
    bomb = folder / "a_2.png"
    bomb.write_bytes(declared_png(60_000, 60_000))
    with pytest.raises(VideoError, match=r"a_2\.png: image of 60000×60000 px is too large"):
        FrameSource.open(bomb)
    with FrameSource.open(folder) as src:
        src.frame(0)
        with pytest.raises(VideoError, match="too large"):
            src.frame(1)
    from models.features import load_keyframes

    traj = Trajectory(id="t", steps=[Step(index=0, screenshot=str(bomb))])
    with pytest.raises(VideoError, match="no readable screenshots"):  # not an OpenCV assertion
        load_keyframes(traj, 8)


# --- a long run ---------------------------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_a_run_of_more_than_100000_steps_loads_the_first_100000_with_a_warning(tmp_path):
    run = tmp_path / "gpt-4o" / "os" / "long-run"
    run.mkdir(parents=True)
    b.write_png(run / "shot.png", b.screen(1))
    stamp = dt.datetime(2025, 3, 5, 14, 2, 7)
    with open(run / "traj.jsonl", "w") as fh:
        for k in range(MAX_STEPS + 5):
            ts = (stamp + dt.timedelta(milliseconds=20 * k)).strftime("%Y%m%d@%H%M%S%f")
            fh.write(f'{{"step_num": {k + 1}, "action_timestamp": "{ts}", "action": "pyautogui.click(x={k % 300}, '
                     f'y=5)", "reward": 0, "done": false, "screenshot_file": "shot.png"}}\n')
    traj = formats.load(run, align=False)
    assert traj.n_steps == MAX_STEPS
    assert any(w.startswith(f"{run / 'traj.jsonl'}:{MAX_STEPS + 1}: more than 100,000 steps") and
               "loaded the first 100,000" in w for w in traj.warnings), traj.warnings[-3:]


def _long_run(tmp_path: Path, n: int, clock: str) -> Trajectory:
    """``n`` steps 2 ms apart (or all at one second: a stuck clock; or none: screenshots only), every one naming the
    same screenshot, over a 2-minute recording at 6 fps (720 frames: 14 million distances, past MAX_CELLS)."""
    video = b.write_h264(tmp_path / "rec.mp4", [b.screen(1)] * 720, fps=6)
    shot = str(b.write_png(tmp_path / "shot.png", b.screen(1)))
    start = dt.datetime(2025, 3, 5, 14, 2, 7)
    steps = []
    for k in range(n):
        t = start + dt.timedelta(seconds=1 + (0.0 if clock == "stuck" else 0.002 * k))
        extra = {} if clock == "none" else {"wall_time": t.isoformat(),
                                            "action_timestamp": t.strftime("%Y%m%d@%H%M%S%f")}
        steps.append(Step(index=k, screenshot=shot, extra={**extra, "screenshot_timing": "after_action"}))
    return Trajectory(id="long", steps=steps, video=VideoRef(path=str(video)), source_path=str(tmp_path))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("clock", ["stamped", "stuck", "none"])
def test_aligning_a_long_run_decodes_each_screenshot_once_in_bounded_memory(tmp_path, clock):
    """Every step decoded the same PNG again, the (steps x samples) distances and the (steps x 2304) features grew with
    the run (6.6 GB for 100,000 steps), and a stuck clock made finding each step's next stamp quadratic."""
    traj = _long_run(tmp_path, 20_000, clock)
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        align_trajectory(traj, use_cache=False)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(s.t_end is not None for s in traj.steps)
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MiB for 20,000 steps"
    assert seconds < 60


# --- a long action ------------------------------------------------------------------------------------------------

def test_a_100kb_action_is_read_from_its_words_with_a_warning(tmp_path):
    """ast.parse raised MemoryError on it, and the whole run failed with 'too large to read into memory', naming no
    field."""
    run = b.osworld_dir(tmp_path)["path"]

    def long(lines: list[dict]) -> None:
        lines[1]["action"] = "pyautogui.scroll(" + "-" * 100_000 + "1)"

    _rewrite(run / "traj.jsonl", long)
    traj = formats.load(run, align=False)
    assert traj.steps[1].action_type == "scroll"
    said = [w for w in traj.warnings if "field 'action' of step 1 (100,019 characters)" in w]
    assert len(said) == 1 and f"longer than {MAX_PARSED_CHARS:,} characters" in said[0]


@pytest.mark.parametrize("src", ["-" * 3000 + "1", "a." * 4000 + "b", "1+" * 4000 + "1", "click(" + "-" * 9000 + "1)"])
def test_actions_too_deep_for_pythons_parser_are_not_code(src):
    assert parse_action(src).type in ("other", "click")  # not MemoryError, not RecursionError


# --- item 7: a time scale of 0, a repeated key ----------------------------------------------------------------------

def _zero_time_scale(mp4: Path) -> None:
    data = bytearray(mp4.read_bytes())
    at = data.find(b"mdhd") + 4  # the box's payload: version, flags, two times, then the time scale
    scale = at + (20 if data[at] == 1 else 12)
    data[scale:scale + 4] = b"\0\0\0\0"
    mp4.write_bytes(bytes(data))


def test_an_mp4_with_a_time_scale_of_0_is_an_error_naming_it(tmp_path):
    """FFmpeg makes up a clock for it (one frame lasting 1,024 s): the run scored as another one would."""
    d = b.plain_video_dir(tmp_path / "run")
    _zero_time_scale(d["video"])
    assert "time scale 0" in container_problem(d["video"])
    with pytest.raises(VideoError, match="capture.mp4: .*time scale 0"):
        FrameSource.open(d["video"])
    res = rollscope("inspect", str(d["path"]))
    line = one_error_line(res.stderr)
    assert res.returncode == 1 and "capture.mp4" in line and "time scale 0" in line


def test_a_repeated_json_key_is_a_warning_naming_the_file_and_key(tmp_path):
    run = b.osworld_dir(tmp_path / "osworld")["path"]
    log = run / "traj.jsonl"
    lines = log.read_text().splitlines()
    lines[1] = lines[1].replace('"action": ', '"action": "DONE", "action": ', 1)
    log.write_text("\n".join(lines) + "\n")
    traj = formats.load(run, align=False)
    assert f"{log}:2: key 'action' appears 2 times in one object; the last value is used" in traj.warnings
    assert traj.steps[1].action == "pyautogui.typewrite('report.txt')"

    native = tmp_path / "native"
    shutil.copytree(SAMPLE, native)
    doc = (native / "trajectory.json").read_text()
    (native / "trajectory.json").write_text(doc.replace('"id": ', '"id": "first", "id": ', 1))
    traj = formats.load(native)
    assert any(w.startswith(f"{native / 'trajectory.json'}: key 'id' appears 2 times") for w in traj.warnings)


def test_reading_a_small_file_reserves_no_more_than_it_holds(tmp_path):
    # read(limit + 1) reserved the whole limit (a gigabyte) before reading each small JSON file: under a memory
    # limit that alone fails, and on a busy machine it is a gigabyte of address space per read
    import tracemalloc

    from gui_app.core.safety import read_bytes

    small = tmp_path / "small.json"
    small.write_bytes(b'{"a": 1}')
    tracemalloc.start()
    try:
        assert read_bytes(small) == b'{"a": 1}'
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak  # a read chunk at most; it was the whole 1 GiB limit


def test_a_run_of_more_steps_than_any_run_holds_in_one_json_array_is_cut_with_a_warning(tmp_path, monkeypatch):
    # OSWorld's JSON Lines are capped while read; formats holding their steps in one array (ATIF) are cut after
    import gui_app.core.trajectory.formats as formats_mod
    from tests.formats import builders as b

    path = b.atif_file(tmp_path / "atif")["path"]
    n = len(formats_mod.load(str(path)).steps)
    assert n > 2
    monkeypatch.setattr(formats_mod, "MAX_STEPS", 2)
    traj = formats_mod.load(str(path))
    assert len(traj.steps) == 2
    assert any(f"{n:,} steps" in w and "first 2 kept" in w for w in traj.warnings), traj.warnings
