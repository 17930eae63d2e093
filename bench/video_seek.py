"""Benchmark of frame access on a long 1080p screen recording: probe, exact random seeks, prefetch, memory.

Generates a 1080p long-GOP H.264 screen-like recording (libx264 ultrafast, one keyframe every 250 frames,
10 fps; 10 minutes, ``--quick``: 1 minute) under ``data/bench/video_seek/`` (reused when present). Every frame
carries its index in a corner strip, so each seek is checked for exactness, not only timed. Then measures:

* ``probe_ms`` and ``open_ms`` (packet index + first frame);
* random exact seeks with :class:`FrameSource` (no cache): median / p95 latency and how many were exact;
* sequential decode speed at full size and at a viewer's size (``max_side=960``);
* a viewer's source (``max_side=960``, default 256 MB cache): time to prefetch 100 step-end frames, latency
  of ``cached()`` hits on them, decode-ahead speed, and resident memory (growth over the process's baseline
  after imports) after opening, prefetching and playing;
* OpenCV's ``CAP_PROP_POS_FRAMES`` seek on the same file, for comparison (latency and exactness);
* screenshot alignment of 100 steps (``--quick``: 8) over the whole recording: time and error in frames.

Usage: ``python bench/video_seek.py [--quick] [--json]``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import av  # noqa: E402
import cv2  # noqa: E402
import numpy as np  # noqa: E402

from bench._common import DATA, Figures, log, parser, peak_rss_mb, percentile, rss_mb  # noqa: E402
from gui_app.core.trajectory.align import align_trajectory  # noqa: E402
from gui_app.core.trajectory.model import Step, Trajectory, VideoRef  # noqa: E402
from gui_app.core.media.video import FrameSource, probe  # noqa: E402
from tests.media import degrade, read_stamp, screen_like_frames, screen_state, stamp_index, write_h264  # noqa: E402

W, H, FPS, GOP, SEED = 1920, 1080, 10, 250, 11


def change_frames(n: int, seed: int = SEED) -> list[int]:
    """Frames where the screen changes: one step every 3-9 s, as an agent acting on a desktop."""
    rng = random.Random(seed)
    out, f = [], 0
    while True:
        f += rng.randint(3 * FPS, 9 * FPS)
        if f >= n:
            return out
        out.append(f)


def generate(minutes: float) -> tuple[Path, list[int]]:
    """The recording (made once, reused) and its change frames."""
    n = int(minutes * 60 * FPS)
    folder = DATA / "video_seek"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"screen_{W}x{H}_{n}f_gop{GOP}.mp4"
    done = path.with_suffix(".json")
    changes = change_frames(n)
    if path.exists() and done.exists() and json.loads(done.read_text()).get("changes") == changes:
        return path, changes
    log(f"generating {path} ({n} frames)...")
    t = time.perf_counter()

    def frames():
        for i, f in enumerate(screen_like_frames(n, W, H, changes, seed=SEED, pointer=True)):
            yield stamp_index(f, i)  # f is a fresh copy (the pointer is drawn on it)

    write_h264(path, frames(), fps=FPS, gop=GOP, preset="ultrafast")
    done.write_text(json.dumps({"changes": changes, "seconds": time.perf_counter() - t}))
    log(f"generated in {time.perf_counter() - t:.1f} s")
    return path, changes


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t) * 1000


def _generate_in_child(minutes: float) -> None:
    """Generate in a child process: the encoder's memory must not count in this process's RSS figures."""
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=generate, args=(minutes,))
    proc.start()
    proc.join()
    if proc.exitcode:
        raise SystemExit(f"generating the recording failed (exit {proc.exitcode})")


def main() -> int:
    args = parser(__doc__.splitlines()[0]).parse_args()
    fig = Figures(args.json)
    minutes = 1.0 if args.quick else 10.0
    n_seeks = 60 if args.quick else 200
    n_cv = 10 if args.quick else 30
    n_steps = 8 if args.quick else 100
    _generate_in_child(minutes)
    path, changes = generate(minutes)  # made above: returns at once
    rss0 = rss_mb()
    # The machine may be shared: the load average says how far the latencies below are inflated by it.
    fig.add("load_average_start", os.getloadavg()[0])
    fig.add("video", f"{W}x{H} {FPS}fps gop{GOP} {minutes:g}min")
    fig.add("video_size", path.stat().st_size / 2**20, "MiB")
    ref, ms = timed(probe, path)
    fig.add("probe_ms", ms, "ms")
    fig.add("frames", ref.frames)

    # First, what a viewer holds: frames decoded at 960 px wide into the default 256 MB cache, with the
    # last frame of each step (where a reviewer looks) prefetched.
    view, ms = timed(FrameSource.open, path, max_side=960)
    n = view.frame_count
    assert ref.frames == n, (ref.frames, n)
    fig.add("open_ms", ms, "ms")
    fig.add("rss_base", rss0, "MiB")
    fig.add("rss_delta_open", rss_mb() - rss0, "MiB")
    ends = [c - 1 for c in changes][:100]
    t = time.perf_counter()
    view.prefetch(ends)
    view.wait_prefetch()
    fig.add("prefetch_step_ends", len(ends), "frames")
    fig.add("prefetch_s", time.perf_counter() - t, "s")
    hits = []
    resident = 0
    for i in ends:
        t = time.perf_counter_ns()
        f = view.cached(i)
        hits.append((time.perf_counter_ns() - t) / 1000)
        resident += f is not None and read_stamp(f) == i
    fig.add("cached_hit_us_median", percentile(hits, 50), "us")
    fig.add("cached_hit_us_p95", percentile(hits, 95), "us")
    fig.add("cached_resident_exact", f"{resident}/{len(ends)}")
    fig.add("cache_mb", view.cache_bytes / 2**20, "MiB")
    fig.add("rss_delta_after_prefetch", rss_mb() - rss0, "MiB")
    # Playback: decode ahead of the playhead until the cache is full (its bound holds).
    t = time.perf_counter()
    ahead = view.prefetch_range(n // 4, 200)
    view.wait_prefetch()
    fig.add("prefetch_range_frames", ahead, "frames")
    fig.add("prefetch_range_fps_960", ahead / (time.perf_counter() - t), "frames/s")
    fig.add("cache_mb_after_playback", view.cache_bytes / 2**20, "MiB")
    fig.add("rss_delta_after_playback", rss_mb() - rss0, "MiB")
    view.close()
    fig.add("worker_stopped", not view.worker_alive)

    # Random exact seeks at full size, no cache: every call seeks (or decodes forward within a GOP) and
    # converts one 1080p frame.
    src = FrameSource.open(path, cache_bytes=0)
    rng = random.Random(5)
    lat, cpu, exact = [], [], 0
    for i in rng.sample(range(n), n_seeks):
        c = time.process_time()
        f, ms = timed(src.frame, i)
        cpu.append((time.process_time() - c) * 1000)
        lat.append(ms)
        exact += read_stamp(f) == i
    fig.add("seek_ms_median", percentile(lat, 50), "ms")
    fig.add("seek_ms_p95", percentile(lat, 95), "ms")
    # CPU time (all threads of this process) is what a seek costs whatever else runs on the machine.
    fig.add("seek_cpu_ms_median", percentile(cpu, 50), "ms")
    fig.add("seek_exact", f"{exact}/{n_seeks}")

    # The decoder alone (no conversion): a random seek costs about GOP / 2 frames of this.
    with av.open(str(path)) as c:
        t = time.perf_counter()
        decoded = sum(1 for _ in zip(range(min(n, 1000)), c.decode(video=0)))
        fig.add("decode_only_fps", decoded / (time.perf_counter() - t), "frames/s")
    # Sequential decode: decode + RGB conversion of every frame, no seek after the first.
    k = 150 if args.quick else 300
    for size, source in (("full_size", src), ("960", FrameSource.open(path, max_side=960, cache_bytes=0))):
        source.frame(n // 3)
        t = time.perf_counter()
        for i in range(n // 3 + 1, n // 3 + 1 + k):
            source.frame(i)
        fig.add(f"sequential_fps_{size}", k / (time.perf_counter() - t), "frames/s")
        source.close()

    # OpenCV's seek by frame number, for comparison.
    cap = cv2.VideoCapture(str(path))
    lat, cpu, exact = [], [], 0
    for i in rng.sample(range(n), n_cv):
        t, c = time.perf_counter(), time.process_time()
        cap.set(cv2.CAP_PROP_POS_FRAMES, i)
        ok, img = cap.read()
        lat.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        exact += ok and read_stamp(cv2.cvtColor(img, cv2.COLOR_BGR2RGB)) == i
    cap.release()
    fig.add("opencv_seek_ms_median", percentile(lat, 50), "ms")
    fig.add("opencv_seek_cpu_ms_median", percentile(cpu, 50), "ms")
    fig.add("opencv_seek_exact", f"{exact}/{n_cv}")

    # Alignment: screenshots (the screen without pointer or caret, JPEG-degraded) against the recording.
    bounds = [0, *changes, n]
    steps = []
    shot_dir = DATA / "video_seek" / f"shots_{n}"
    shot_dir.mkdir(exist_ok=True)
    for k_step in range(min(n_steps, len(bounds) - 1)):
        f = (bounds[k_step] + bounds[k_step + 1]) // 2
        p = shot_dir / f"step_{k_step}.png"
        if not p.exists():
            img = degrade(stamp_index(screen_state(k_step, W, H, SEED).copy(), f), seed=k_step)
            cv2.imwrite(str(p), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
        steps.append(Step(index=k_step, screenshot=str(p)))
    traj = Trajectory(id="bench", steps=steps, video=VideoRef(path=str(path)))
    c = time.process_time()
    _, ms = timed(align_trajectory, traj)
    align_cpu = time.process_time() - c
    err = np.array([abs(s.t_start - bounds[s.index] / FPS) * FPS for s in traj.steps])
    fig.add("align_steps", len(steps))
    fig.add("align_s", ms / 1000, "s")
    fig.add("align_cpu_s", align_cpu, "s")
    fig.add("align_max_error_frames", float(err.max()), "frames")
    fig.add("align_within_1_frame", f"{int((err <= 1.0001).sum())}/{len(steps)}")
    fig.add("align_mean_confidence", float(np.mean([s.align_confidence for s in traj.steps])))
    fig.add("peak_rss", peak_rss_mb(), "MiB")
    fig.add("load_average_end", os.getloadavg()[0])
    fig.emit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
