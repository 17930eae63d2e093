"""FrameSource and probe on real encoded files: exact frames by index and time, cache bound, prefetch, errors."""

from __future__ import annotations

import gc
import random
import threading
import time
from fractions import Fraction

import av
import numpy as np
import pytest

from gui_app.core.errors import VideoError
from gui_app.core.trajectory.model import Step, Trajectory, VideoRef
from gui_app.core.media.video import FrameSource, open_for, probe
from tests.media import (numbered_frames, read_number, write_h264, write_images, write_mp4v, write_vp9)

N = 300  # frames per test file: 30 s at 10 fps, a long GOP of 250 with a second keyframe at 250
W, H = 320, 240


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    """One file per container/codec, all holding numbered frames 0..N-1."""
    d = tmp_path_factory.mktemp("media")
    frames = list(numbered_frames(N, W, H))
    return {
        "h264": write_h264(d / "long_gop.mp4", frames, fps=10, gop=250),
        "h264_b": write_h264(d / "bframes.mp4", frames, fps=10, gop=250, bframes=2),
        "h264_mkv": write_h264(d / "long_gop.mkv", frames, fps=10, gop=250),
        "mp4v": write_mp4v(d / "mp4v.mp4", frames, fps=10),
        "avi": write_mp4v(d / "mp4v.avi", frames, fps=10),
        "webm": write_vp9(d / "vp9.webm", frames[:120], fps=10),
        "images": write_images(d / "frames", frames[:40], ext="png")[0].parent,
    }


def check_exact(src: FrameSource, order: list[int]) -> None:
    got = [(i, read_number(src.frame(i))) for i in order]
    wrong = [(i, n) for i, n in got if i != n]
    assert not wrong, f"wrong frames (asked, got): {wrong[:10]}"


def access_orders(n: int) -> list[int]:
    rng = random.Random(7)
    shuffled = rng.sample(range(n), min(n, 60))
    return shuffled + list(range(n - 1, n - 40, -1)) + list(range(0, n, 1))


@pytest.mark.parametrize("kind", ["h264", "h264_b", "h264_mkv", "mp4v", "avi", "webm", "images"])
def test_exact_frames_random_backwards_sequential(media, kind):
    with FrameSource.open(media[kind], cache_bytes=0) as src:  # no cache: every call decodes
        check_exact(src, access_orders(src.frame_count))


def test_probe_values(media):
    for kind, frames in [("h264", N), ("h264_b", N), ("h264_mkv", N), ("mp4v", N), ("avi", N), ("webm", 120)]:
        ref = probe(media[kind])
        assert (ref.frames, ref.width, ref.height) == (frames, W, H), kind
        assert ref.fps == pytest.approx(10.0), kind
        assert ref.path == str(media[kind])
    # MKV and WebM headers state no frame count: probe counts packets.
    with av.open(str(media["webm"])) as c:
        assert not c.streams.video[0].frames
    folder = probe(media["images"])
    assert (folder.frames, folder.width, folder.height) == (40, W, H)


def test_source_attributes_and_time(media):
    with FrameSource.open(media["h264_b"]) as src:
        assert (src.frame_count, src.width, src.height, src.fps) == (N, W, H, 10.0)
        assert src.duration == pytest.approx(N / 10)
        assert src.time_of(0) == 0.0 and src.time_of(123) == pytest.approx(12.3)
        assert src.index_at(12.3) == 123 and src.index_at(12.39) == 123 and src.index_at(12.4) == 124
        assert src.index_at(-5) == 0 and src.index_at(1e6) == N - 1
        assert read_number(src.frame_at(25.05)) == 250
        f = src.frame(5)
        assert f.dtype == np.uint8 and f.shape == (H, W, 3) and not f.flags.writeable
        with pytest.raises(IndexError):
            src.frame(N)


def test_variable_frame_rate_times_come_from_pts(tmp_path):
    # Frames 0.05 s apart with a 0.4 s gap every third frame: time / nominal fps would drift by seconds.
    gaps = [0.4 if k % 3 == 0 else 0.05 for k in range(59)]
    times = np.concatenate([[0.0], np.cumsum(gaps)])
    path = write_h264(tmp_path / "vfr.mkv", numbered_frames(60, W, H), fps=10, times=times)
    with FrameSource.open(path) as src:
        assert src.times == pytest.approx(times, abs=1e-3)
        assert [read_number(src.frame_at(t)) for t in times] == list(range(60))
        assert [read_number(src.frame_at(t + 0.04)) for t in times] == list(range(60))


def test_sequential_reads_do_not_seek(media):
    with FrameSource.open(media["h264"], cache_bytes=0) as src:
        seeks = []
        real = src._dec._seek_ts
        src._dec._seek_ts = lambda ts: (seeks.append(ts), real(ts))[1]
        # Open decoded frame 0; 100 is in the same GOP: decoding forward beats seeking back to frame 0.
        check_exact(src, list(range(100, 160)))
        assert seeks == []
        check_exact(src, [170, 200, 249, 250, 251])  # forward jumps within the GOP, and into the next one
        assert seeks == []
        check_exact(src, [30])  # backwards: must seek
        assert len(seeks) == 1
        check_exact(src, [260])  # past the next keyframe (250): seek there rather than decode 230 frames
        assert len(seeks) == 2
        check_exact(src, list(range(261, 280)))
        assert len(seeks) == 2


def test_opencv_fallback_reader(media):
    with FrameSource.open(media["mp4v"], backend="opencv", cache_bytes=0) as src:
        assert src.backend == "opencv" and src.frame_count == N
        check_exact(src, [0, 1, 2, 150, 151, 299, 10])


def test_scaled_decode_and_thumbnail(media):
    with FrameSource.open(media["h264"], max_side=160) as src:
        assert (src.width, src.height) == (W, H)  # the recording's own size: the coordinate space of actions
        f = src.frame(77)
        assert f.shape == (120, 160, 3) == (src.out_height, src.out_width, 3)
        assert read_number(f) == 77
        th = src.thumbnail(77, max_side=64)
        assert th.shape == (48, 64, 3) and read_number(th) == 77


@pytest.mark.parametrize("content, name, reason", [
    (b"", "empty.mp4", "empty"),
    (b"this is not a video, just some text\n" * 50, "notes.mp4", "cannot open"),
    (bytes(random.Random(3).getrandbits(8) for _ in range(20000)), "noise.webm", "cannot open"),
])
def test_errors_name_the_file(tmp_path, content, name, reason):
    path = tmp_path / name
    path.write_bytes(content)
    for call in (probe, FrameSource.open):
        with pytest.raises(VideoError) as e:
            call(path)
        assert str(path) in str(e.value) and reason in str(e.value)


def test_errors_truncated_missing_audio_only(tmp_path, media):
    truncated = tmp_path / "cut.mp4"
    truncated.write_bytes(media["h264"].read_bytes()[: 3000])  # moov atom (at the end) is lost
    missing = tmp_path / "nope.mp4"
    audio = tmp_path / "sound.wav"
    with av.open(str(audio), "w") as out:
        s = out.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = 8000, 0, Fraction(1, 8000)
        for p in s.encode(frame):
            out.mux(p)
    empty_dir = tmp_path / "no_images"
    empty_dir.mkdir()
    for path, reason in [(truncated, ""), (missing, "not found"), (audio, "no video stream"),
                         (empty_dir, "no images")]:
        with pytest.raises(VideoError) as e:
            FrameSource.open(path)
        assert str(path) in str(e.value) and reason in str(e.value)


def test_lru_cache_stays_within_its_budget(media):
    frame_bytes = W * H * 3
    with FrameSource.open(media["h264"], cache_bytes=5 * frame_bytes) as src:
        for i in range(20, 40):
            src.frame(i)
            assert src.cache_bytes <= 5 * frame_bytes
        assert sorted(src.cached_indices()) == [35, 36, 37, 38, 39]
        assert src.cached(39) is not None and src.cached(20) is None
        src.frame(36)  # touching 36 makes 35 the oldest entry
        src.frame(40)
        assert src.cached(35) is None and src.cached(36) is not None


def test_prefetch_fills_cache_in_background_and_close_stops_worker(media):
    src = FrameSource.open(media["h264_b"])
    wanted = [3, 260, 120, 121, 122, 299, 0, 200]
    assert all(src.cached(i) is None for i in wanted if i)
    src.prefetch(wanted)
    assert src.wait_prefetch(timeout=20)
    assert [read_number(src.cached(i)) for i in wanted] == wanted
    assert src.worker_alive
    # A newer request replaces an older one; both kinds of call run against the foreground reader.
    src.prefetch(range(10, 250, 3))
    src.prefetch_range(150, 20)
    check_exact(src, [140, 5, 280])
    assert src.wait_prefetch(timeout=20)
    assert [read_number(src.cached(i)) for i in range(150, 170)] == list(range(150, 170))
    src.close()
    assert not src.worker_alive
    assert src.cached(150) is None
    with pytest.raises(VideoError):
        src.frame(151)
    src.close()  # twice is fine


def test_decode_ahead_fits_in_half_the_cache(media):
    with FrameSource.open(media["h264"], cache_bytes=10 * W * H * 3) as src:
        assert src.prefetch_range(100, 50) == 5
        assert src.wait_prefetch(timeout=20)
        assert [read_number(src.cached(i)) for i in range(100, 105)] == list(range(100, 105))
        assert src.prefetch_range(N - 2, 50) == 2


def test_source_dropped_without_close_ends_its_worker(media):
    src = FrameSource.open(media["h264"])
    src.prefetch([5, 6])
    assert src.wait_prefetch(timeout=20)
    worker = src._worker
    assert worker.is_alive()
    del src
    gc.collect()
    worker.join(timeout=10)  # the worker checks its weak reference at least once a second
    assert not worker.is_alive()


def test_cached_never_blocks_while_decoding(media):
    with FrameSource.open(media["h264"]) as src:
        src.frame(10)
        with src._dec_lock:  # as if a long decode were under way
            t = time.perf_counter()
            assert src.cached(10) is not None and src.cached(11) is None
            assert time.perf_counter() - t < 0.05


@pytest.mark.parametrize("kind", ["h264_b", "images"])
def test_iter_frames_one_pass(media, kind):
    with FrameSource.open(media[kind]) as src:
        got = list(src.iter_frames(start=5, stop=40, step=7))
        assert [i for i, _ in got] == list(range(5, 40, 7))
        assert [read_number(f) for _, f in got] == list(range(5, 40, 7))
        small = list(src.iter_frames(step=10, size=(64, 48), gray=True))
        assert [i for i, _ in small] == list(range(0, src.frame_count, 10)) and small[0][1].shape == (48, 64)


def test_concurrent_readers_and_prefetch_get_exact_frames(media):
    with FrameSource.open(media["h264_b"], cache_bytes=20 * W * H * 3) as src:
        errors: list[str] = []

        def reader(seed: int) -> None:
            rng = random.Random(seed)
            for i in rng.sample(range(N), 25):
                got = read_number(src.frame(i))
                if got != i:
                    errors.append(f"asked {i}, got {got}")

        threads = [threading.Thread(target=reader, args=(s,)) for s in (1, 2)]
        src.prefetch(range(0, N, 4))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors and not any(t.is_alive() for t in threads)


def test_open_for_video_or_screenshots(media, tmp_path):
    traj = Trajectory(id="t", video=VideoRef(path=str(media["h264"])), steps=[Step(index=0)])
    with open_for(traj) as src:
        assert src.backend == "pyav" and src.frame_count == N
    shots = write_images(tmp_path / "shots", numbered_frames(3, W, H))
    steps = [Step(index=0, screenshot=str(shots[0])), Step(index=1), Step(index=2, screenshot=str(shots[2]))]
    traj = Trajectory(id="s", source_path=str(tmp_path), steps=steps)
    with open_for(traj) as src:
        assert src.frame_count == 3 and src.fps == 1.0
        assert [read_number(src.frame(i)) for i in range(3)] == [0, 0, 2]  # step 1 shows the last screenshot
    with pytest.raises(VideoError):
        open_for(Trajectory(id="e", source_path=str(tmp_path), steps=[Step(index=0)]))
