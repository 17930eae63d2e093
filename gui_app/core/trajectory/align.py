"""Step <-> video alignment for formats that store no offsets into the recording (OSWorld and kin).

Formats save one screenshot per step, taken before the step's action (BrowserGym, AgentNet: the observation
the agent acted on) or after it (OSWorld writes the observation ``env.step`` returns; importers mark this in
``step.extra['screenshot_timing']``), and a recording of the whole run, but not where each step lies in that
recording (OSWorld issue #223). We recover it from the pixels:

1. Every screenshot and every sampled frame of the recording is shrunk to a small grayscale grid (64 px wide,
   the recording's aspect) and normalised to zero mean and unit norm, so that a dot product is a correlation
   and brightness, contrast, colour conversion and compression noise largely cancel out.
2. The recording is decoded once, sequentially (every frame, or every k-th for very long recordings: a long GOP
   must be decoded in full anyway, only the conversion is skipped).
3. Distances ``1 - correlation`` form a (steps x samples) matrix; dynamic programming picks, for every step,
   a sample such that the samples never go back in time, minimising the summed distance. Steps follow one
   another, so a screen that recurs later (a dialog opened twice) does not pull a step out of order.
4. The best frame of a step lies somewhere in a plateau: the screen stays as the screenshot shows it from the
   moment the previous action's effect appears until the step's own action. The observation began when that
   state appeared, so a step starts at the *first* frame of its plateau (walking back while frames match as
   well as the best one, within a tolerance set by how different the other states look). A before-action
   screenshot's plateau start is the step's start (it ends where the next starts, the last with the
   recording); an after-action screenshot's is the step's end (it starts where the previous ended, the first
   at the start of the recording).

Confidence per step comes from the margin between the matched distance and the best distance outside the
matched plateau (how distinct the match is), discounted when the match itself is poor. Steps whose screenshot
is missing or unreadable are placed by interpolating between their neighbours (``interpolated``); with no
recording or no screenshot at all, steps are spread evenly (``even_spacing``, confidence 0).

**Wall-clock timestamps first.** OSWorld's ``traj.jsonl`` stamps every action (``action_timestamp``, taken just
before the action runs; upstream at one-second resolution, forks to the microsecond), and the recording runs on
the same clock from an unknown start. So the whole run is placed by ONE number, the video time of the first
action: for each candidate offset every screenshot must appear in the recording between its own action and the
next one (plus the timestamp resolution), and the offset with the smallest summed distance wins
(:func:`fit_offset`). Screenshot matching then only refines each step inside its timestamp's resolution (the
moment its effect shows). Steps cannot drift apart, a screen that recurs cannot pull a step out of place, and
the fit's own margin (how much better the best offset is than any other) says how much to trust it. Steps are
``timestamp_offset``; confidence is the fit's times how well each screenshot matches at its place.

**Flagged, not silent.** Steps whose confidence is under :data:`LOW_CONFIDENCE` are named in a warning on the
trajectory (shown by ``inspect`` and the app) and in ``metadata['alignment']['low_confidence_steps']``.

**Fast and cached.** The pass over the recording samples at most :data:`SAMPLE_FPS` frames per second and lets
the decoder skip B-frames and the deblocking filter (``fast``; the 64-pixel matching grid cannot see the
difference); the answer is cached (:mod:`gui_app.core.cache`) under the recording's and the steps' identity,
so opening the run again costs nothing. ``bench/osworld_align.py`` measures both.

**Bounded by the run, not by its clock.** Nothing is sized by the stamps' span: the offset search runs over the
recording's samples only, and a stamp far from the run's others (an unsynced VM stamping an action ten years early)
is dropped with a warning naming the step and the field (:func:`drop_stray_stamps`). The (steps x samples) distances
are kept under :data:`MAX_CELLS` by sampling the recording more sparsely for very long runs, each screenshot file is
decoded once however many steps name it, and every pass over the steps is linear, so a run of 100,000 steps aligns
in seconds (``bench/hostile_scale.py``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from gui_app.core import cache
from gui_app.core.errors import VideoError
from gui_app.core.media.images import read_image
from gui_app.core.trajectory.timeline import spread
from gui_app.core.trajectory.model import LOW_ALIGN_CONFIDENCE, Trajectory, VideoRef
from gui_app.core.media.video import FrameSource

GRID_WIDTH = 64  # matching grid width; its height follows the recording's aspect (36 for 16:9)
# Frames compared at most (every k-th frame beyond): 20 minutes at 30 fps frame by frame. Only the (steps x
# samples) distances are kept, 14 MB for 100 steps, not the frames' features.
MAX_SAMPLES = 36_000
# (steps x samples) distances kept at most (40 MB of float32): past it the recording is sampled more sparsely, so a
# run of 100,000 steps compares 100 frames, not 36,000 (14 GB).
MAX_CELLS = 10_000_000
# The margin (in correlation) at which a match counts as unambiguous; confidence = 1 - exp(-margin / scale).
_MARGIN_SCALE = 0.03
# Distance (1 - correlation) at which a match is considered no match at all.
_POOR_MATCH = 0.5

STORED_METHODS = ("stored", "timestamp")
# The fast pass compares at most this many frames per second of recording (actions are seconds apart).
SAMPLE_FPS = 6.0
# Steps whose alignment confidence is below this are flagged (warning, metadata, the app's step table).
LOW_CONFIDENCE = LOW_ALIGN_CONFIDENCE
# Bumped whenever the algorithm changes, so cached answers of an older one are not served.
ALIGN_VERSION = 3
# A screenshot may still show its state this long after the next action began (that action's effect lags).
_GRACE = 1.0
# An offset this far (seconds) from the best is a different placement when measuring the fit's margin.
_RIVAL_SECONDS = 2.0
# A before-action screenshot of the first step shows the screen from at most this long before its action.
_BEFORE_FIRST = 60.0
# Distance (1 - correlation) below which two screens are the same (a moving pointer, a caret, compression).
_NOISE = 0.0005
# Samples in a row that must look more like a screenshot than the previous one for its screen to have begun.
_RUN = 3
_RUN_KERNEL = np.ones(_RUN, np.int32)
# The fit's margin (summed distance of the best placement against the best other one) at which it is sure.
_FIT_SCALE = 0.1
# Stamps that fit in a window of twice the recording's length plus this many seconds are the run; any other stamp is
# a wrong clock (the recording may start well before the first action and end well after the last).
_STRAY_SLACK = 60.0
# Steps listed by name in one warning; the rest are counted.
_LISTED = 10


def features(gray: np.ndarray) -> np.ndarray:
    """Flatten a small grayscale image into a zero-mean, unit-norm float32 vector (dot product = correlation)."""
    v = gray.astype(np.float32).ravel()
    v -= v.mean()
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-6 else v  # a flat image correlates with nothing


def _grid(width: int, height: int) -> tuple[int, int]:
    return GRID_WIDTH, max(4, round(GRID_WIDTH * height / width))



def _screenshot_features(path: str | Path, grid: tuple[int, int]) -> np.ndarray:
    """Features of one screenshot file (decoded through :func:`gui_app.core.media.images.read_image`: measured from its
    header first).

    Raises:
        VideoError: the file cannot be read, or declares a size too large to decode.
    """
    return features(cv2.resize(read_image(path, gray=True), grid, interpolation=cv2.INTER_AREA))


def _step_features(traj: Trajectory, grid: tuple[int, int]) -> tuple[list[np.ndarray | None], list[str]]:
    """Features of each step's screenshot (None without one), each file decoded once however many steps name it (by
    path, size and mtime), and a warning per unreadable one (the first :data:`_LISTED`, then a count)."""
    seen: dict[tuple[str, int, int], np.ndarray | VideoError] = {}
    out: list[np.ndarray | None] = []
    warnings: list[str] = []
    unreadable = 0
    for s in traj.steps:
        got: np.ndarray | VideoError | None = None
        if s.screenshot:
            try:
                st = os.stat(s.screenshot)
                key = (s.screenshot, st.st_size, st.st_mtime_ns)
                if key not in seen:
                    seen[key] = _screenshot_features(s.screenshot, grid)
                got = seen[key]
            except VideoError as exc:
                got = seen[key] = exc
            except OSError as exc:
                got = VideoError(s.screenshot, exc.strerror or str(exc))
        if isinstance(got, VideoError):
            unreadable += 1
            if unreadable <= _LISTED:
                warnings.append(f"step {s.index}: screenshot unreadable ({got}); time interpolated")
            got = None
        out.append(got)
    if unreadable > _LISTED:
        warnings.append(f"and {unreadable - _LISTED:,} more steps whose screenshot is unreadable; times interpolated")
    return out, warnings


def monotone_assignment(dist: np.ndarray) -> np.ndarray:
    """Columns ``s_0 <= s_1 <= ... `` (one per row) minimising ``sum_k dist[k, s_k]``.

    Args:
        dist: (K, M) distances of K steps to M samples.

    Returns:
        (K,) int sample index per step, non-decreasing.
    """
    k_steps, m = dist.shape
    cols = np.arange(m)
    back = np.empty((k_steps, m), dtype=np.int32)  # back[k, s]: best s_{k-1} <= s (K x M: under MAX_CELLS)
    cost = dist[0].astype(np.float64)
    for k in range(1, k_steps):
        run_min = np.minimum.accumulate(cost)  # (M,) best cost of rows < k ending at or before s
        # The position of that running minimum: the last column so far whose cost equals it.
        back[k] = np.maximum.accumulate(np.where(cost == run_min, cols, 0))
        cost = dist[k] + run_min
    s = np.empty(k_steps, dtype=np.int64)
    s[-1] = int(np.argmin(cost))
    for k in range(k_steps - 1, 0, -1):
        s[k - 1] = back[k, s[k]]
    return s


def _run_around(d: np.ndarray, s: int, thr: float, lo: int = 0) -> tuple[int, int]:
    """Maximal run [a, b] containing s with d <= thr, not starting before ``lo`` (in numpy: a plateau may span the
    whole recording, for each of thousands of steps)."""
    a = s
    if s > lo:
        above = np.flatnonzero(d[lo:s] > thr)
        a = lo + int(above[-1]) + 1 if above.size else lo
    above = np.flatnonzero(d[s + 1:] > thr)
    b = s + int(above[0]) if above.size else len(d) - 1
    return a, b


def _confidence(best: float, other: float) -> float:
    margin = max(0.0, other - best)
    quality = min(1.0, max(0.0, 1.0 - best / _POOR_MATCH))
    return float((1.0 - math.exp(-margin / _MARGIN_SCALE)) * quality)


def even_spacing(traj: Trajectory, duration: float | None = None) -> None:
    """Spread the steps evenly over ``duration`` seconds (default: the recording's, else 1 s per step)."""
    n = len(traj.steps)
    if duration is None or duration <= 0:
        duration = traj.duration if traj.video is not None and traj.duration else float(n)
    for k, step in enumerate(traj.steps):
        step.t_start = spread(k, n, duration)
        step.t_end = spread(k + 1, n, duration)
        step.align_method = "even_spacing"
        step.align_confidence = 0.0


def _already_aligned(traj: Trajectory) -> bool:
    return all(s.t_start is not None and s.align_method in STORED_METHODS for s in traj.steps)


def _changed(shot_mat: np.ndarray, row_of: np.ndarray) -> np.ndarray:
    """(K,) whether each screenshot differs from the previous one (the first: True), from the distinct screenshots'
    (U, G) features and the row of each step's: only the pairs of different files are compared."""
    out = np.zeros(len(row_of), dtype=bool)
    out[:1] = True
    pairs = np.flatnonzero(row_of[1:] != row_of[:-1]) + 1  # steps whose file differs from the previous step's
    for part in np.array_split(pairs, max(1, len(pairs) // 4096)):
        a, b = shot_mat[row_of[part]], shot_mat[row_of[part - 1]]  # (P, G) each, a few MB at a time
        out[part] = 1.0 - np.einsum("ij,ij->i", a, b) > _NOISE
    return out


def _stray_warning(traj: Trajectory, stray: list[int], duration: float) -> str:
    listed = ", ".join(str(traj.steps[k].index) for k in stray[:_LISTED])
    more = f" and {len(stray) - _LISTED:,} more" if len(stray) > _LISTED else ""
    steps = "steps" if len(stray) > 1 else "step"
    return (f"{traj.source_path}: field 'action_timestamp' of {steps} {listed}{more}: far from the run's other "
            f"stamps (more than {2.0 * duration + _STRAY_SLACK:,.0f} s, for a recording of {duration:,.0f} s): a wrong "
            f"clock; ignored, its time interpolated")


def wall_clock(traj: Trajectory) -> tuple[list[float | None], float]:
    """Seconds of each step's wall-clock stamp since the first stamped step, and the stamps' resolution.

    Reads ``extra['wall_time']`` (ISO, as the OSWorld importer writes it); the resolution is 1 s when every raw
    ``action_timestamp`` stops at the second (``%Y%m%d@%H%M%S``), else 1 ms.
    """
    walls: list[float | None] = []
    t0: datetime | None = None
    coarse = True
    for s in traj.steps:
        raw = s.extra.get("wall_time")
        try:
            t = datetime.fromisoformat(raw) if isinstance(raw, str) and raw else None
            wall = None if t is None else (t - (t0 if t0 is not None else t)).total_seconds()
        except (ValueError, TypeError):  # not ISO, or a zone on some stamps and not on others: no stamp
            t, wall = None, None
        walls.append(wall)
        if t is None:
            continue
        t0 = t if t0 is None else t0
        stamp = str(s.extra.get("action_timestamp", ""))
        coarse = coarse and len(stamp.partition("@")[2]) <= 6
    return walls, (1.0 if coarse else 0.001)


def drop_stray_stamps(walls: list[float | None], duration: float) -> tuple[list[float | None], list[int]]:
    """The stamps with the wrong clocks removed (None), re-based on the first stamp left; and the steps removed.

    The run's actions all happen around its recording, so its stamps fit in a window of about the recording's length
    (:data:`_STRAY_SLACK`); the largest group of stamps that fits in one such window is the run. A stamp outside it
    (an unsynced VM, a clock reset to 1970, a year 9999) would make the run span years: it is dropped, and its step
    placed by interpolation.

    Args:
        walls: seconds of each step's stamp from the first one (None: no stamp).
        duration: the recording's length in seconds.
    """
    stamped = sorted((w, k) for k, w in enumerate(walls) if w is not None)
    if len(stamped) < 2:
        return walls, []
    span = 2.0 * max(duration, 0.0) + _STRAY_SLACK
    best_i, best_n, j = 0, 0, 0
    for i, (w, _) in enumerate(stamped):  # two pointers over the sorted stamps: the fullest window
        j = max(j, i)
        while j < len(stamped) and stamped[j][0] - w <= span:
            j += 1
        if j - i > best_n:
            best_i, best_n = i, j - i
    if best_n == len(stamped):
        return walls, []
    keep = {k for _, k in stamped[best_i:best_i + best_n]}
    dropped = sorted(k for _, k in stamped if k not in keep)
    first = walls[min(keep)]
    assert first is not None
    return [w - first if w is not None and k in keep else None for k, w in enumerate(walls)], dropped


def _cache_file(traj: Trajectory, params: dict[str, Any]) -> Path | None:
    """Where the answer for this recording, these screenshots and these stamps is kept (None: not cacheable)."""
    video = traj.video
    try:
        parts: list[Any] = [ALIGN_VERSION, sorted(params.items())]
        for s in traj.steps:
            st = os.stat(s.screenshot) if s.screenshot else None
            parts.append((s.screenshot, st.st_size if st else None, st.st_mtime_ns if st else None,
                          s.extra.get("wall_time"), s.extra.get("action_timestamp"),
                          s.extra.get("screenshot_timing")))
        key = cache.source_key(video.path, parts) if video is not None else None
    except OSError:
        return None
    if key is None or video is None:
        return None
    return cache.cache_dir(traj.source_path or video.path, "alignment") / f"{key}.json"


def _from_cache(traj: Trajectory, file: Path | None) -> bool:
    doc = cache.read_json(file) if file is not None else None
    if not isinstance(doc, dict) or len(doc.get("steps", [])) != len(traj.steps) or \
            any(len(row) != 5 for row in doc["steps"]):
        return False
    video = traj.video
    for k, v in (doc.get("video") or {}).items():
        if getattr(video, k, None) is None:
            setattr(video, k, v)
    for step, (t0, t1, method, conf, act) in zip(traj.steps, doc["steps"]):
        step.t_start, step.t_end, step.align_method, step.align_confidence = t0, t1, method, conf
        if act is not None:
            step.extra["t_action_video"] = act
    if doc.get("alignment"):
        traj.metadata["alignment"] = doc["alignment"]
    traj.warnings.extend(w for w in doc.get("warnings", []) if w not in traj.warnings)
    return True


def _to_cache(traj: Trajectory, file: Path | None, warnings: list[str]) -> None:
    if file is None:
        return
    v = traj.video
    cache.write_json(file, {
        "video": {"fps": v.fps, "frames": v.frames, "width": v.width, "height": v.height} if v else {},
        "steps": [[s.t_start, s.t_end, s.align_method, s.align_confidence, s.extra.get("t_action_video")]
                  for s in traj.steps],
        "alignment": traj.metadata.get("alignment"), "warnings": warnings})


def align_trajectory(traj: Trajectory, *, force: bool = False, max_samples: int = MAX_SAMPLES,
                     progress: Callable[[int, int], None] | None = None,
                     cancel: Callable[[], bool] | None = None, fast: bool = True, use_timestamps: bool = True,
                     use_cache: bool = True) -> None:
    """Fill every step's ``t_start``, ``t_end``, ``align_method`` and ``align_confidence``.

    Steps whose times the source format stored (``align_method`` ``stored`` or ``timestamp`` on every step)
    are left alone unless ``force``. The recording's ``VideoRef`` gets its fps/frames/size filled when unknown.
    Steps placed with low confidence are named in a warning on ``traj`` and in ``metadata['alignment']``.

    Args:
        traj: the trajectory, changed in place.
        force: re-align even when the format stored times.
        max_samples: at most this many frames are compared (every k-th frame beyond it).
        progress: called with (frames decoded, frames total) during the pass over the recording.
        cancel: polled during the pass; when it returns True the steps are left as they were.
        fast: sample at most :data:`SAMPLE_FPS` frames a second and let the decoder skip what the matching grid
            cannot see (False: every frame, decoded in full: the reference the benchmark compares against).
        use_timestamps: fit one offset to the steps' wall-clock stamps when they have them (False: screenshots
            only, as for formats without stamps).
        use_cache: read and write the answer in the cache.

    Raises:
        VideoError: the recording exists but cannot be decoded.
    """
    steps = traj.steps
    if not steps or (not force and _already_aligned(traj)):
        return
    video = traj.video
    has_video = video is not None and bool(video.path) and Path(video.path).is_file()
    if not has_video:
        even_spacing(traj, duration=float(len(steps)))  # screenshots only: frame k is step k, 1 s each
        return
    assert video is not None
    walls, res = wall_clock(traj)
    stamped = use_timestamps and sum(w is not None for w in walls) >= max(1, len(steps) // 2)
    params = {"fast": fast, "max_samples": max_samples, "timestamps": stamped}
    file = _cache_file(traj, params) if use_cache else None
    if file is not None and _from_cache(traj, file):
        return
    warnings_before = len(traj.warnings)
    with FrameSource.open(video.path, cache_bytes=0) as src:
        _fill_video_ref(video, src)
        if stamped:
            walls, stray = drop_stray_stamps(walls, src.duration)
            if stray:
                traj.warnings.append(_stray_warning(traj, stray, src.duration))
                stamped = sum(w is not None for w in walls) >= max(1, len(steps) // 2)
        grid = _grid(src.width, src.height)
        shots, unreadable = _step_features(traj, grid)
        traj.warnings.extend(unreadable)
        have = [k for k, f in enumerate(shots) if f is not None]
        if not have and not stamped:
            even_spacing(traj, duration=src.duration)
            return
        stride = max(1, math.ceil(src.frame_count / max_samples),
                     math.ceil(src.frame_count * len(have) / MAX_CELLS))  # (K, M) stays under MAX_CELLS
        if fast:
            stride = max(stride, int(src.fps // SAMPLE_FPS) if src.fps else 1)
        total = src.frame_count
        idx: list[int] = []
        cols: list[np.ndarray] = []  # (U, m) blocks of distances; frames' features are dropped once compared
        # One row per distinct screenshot (U <= K): a run whose steps all name one file compares one row.
        distinct: dict[int, tuple[int, np.ndarray]] = {}  # one file's features are one object: id -> (row, features)
        for k in have:
            f = shots[k]
            assert f is not None  # have: the steps whose screenshot was read
            distinct.setdefault(id(f), (len(distinct), f))
        row_of = np.array([distinct[id(shots[k])][0] for k in have], dtype=np.int64)  # (K,)
        shot_mat = np.stack([f for _, f in distinct.values()]) if distinct else None  # (U, G)
        if shot_mat is not None:
            chunk: list[np.ndarray] = []
            for i, gray in src.iter_frames(step=stride, size=grid, gray=True, fast=fast):
                idx.append(i)
                chunk.append(features(gray))
                if len(chunk) == 256:
                    cols.append(1.0 - shot_mat @ np.stack(chunk).T)
                    chunk.clear()
                    if progress is not None:
                        progress(i, total)
                if cancel is not None and cancel():
                    return
            if chunk:
                cols.append(1.0 - shot_mat @ np.stack(chunk).T)
            if not idx:
                raise VideoError(video.path, "no frame could be decoded for alignment")
        if progress is not None:
            progress(total, total)
        frame_times = src.times[idx] if idx else np.zeros(0)
        end = src.duration
    # (K, M) distances in [0, 2], a row per step with a screenshot (K x M <= MAX_CELLS by the stride)
    dist = np.concatenate(cols, axis=1)[row_of] if cols else np.zeros((0, 0))
    if stamped:
        _align_by_timestamps(traj, walls, res, have, dist, frame_times, end,
                             _changed(shot_mat, row_of) if shot_mat is not None else None)
    else:
        assign = monotone_assignment(dist)
        starts, confs = _plateau_starts(dist, assign)
        t_match = {k: float(frame_times[s]) for k, s in zip(have, starts)}
        c_match = dict(zip(have, confs))
        _spread_ties(have, t_match, c_match, end)
        _write_times(traj, t_match, c_match, end)
        traj.metadata["alignment"] = {"method": "screenshot_match"}
    _flag_low_confidence(traj)
    _to_cache(traj, file, traj.warnings[warnings_before:])


def sliding_min(row: np.ndarray, n: int) -> np.ndarray:
    """``out[j] = min(row[j:j + n])`` (inf past the end), in O(len(row)).

    Args:
        row: (M,) values.
        n: window length (>= 1).
    """
    # van Herk / Gil-Werman: cut the padded row into blocks of n; a window starting at j spans the rest of j's block
    # (a suffix minimum) and the start of the next block up to j + n - 1 (a prefix minimum). Exact: only minima of
    # the same values are taken (SciPy's minimum_filter1d gives the same numbers; the desktop bundle carries no
    # SciPy).
    m = len(row)
    blocks = -(-(m + n) // n)
    padded = np.full(blocks * n, np.inf)
    padded[:m] = row
    grid = padded.reshape(blocks, n)
    prefix = np.minimum.accumulate(grid, axis=1).ravel()
    suffix = np.minimum.accumulate(grid[:, ::-1], axis=1)[:, ::-1].ravel()
    return np.minimum(suffix[:m], prefix[n - 1:n - 1 + m])


def fit_offset(dist: np.ndarray, frame_times: np.ndarray, walls: list[float], nexts: list[float | None],
               res: float) -> tuple[int, float]:
    """The sample where the first stamped action happens, and how sure the placement is (0..1).

    For a candidate start sample ``i0``, step ``k``'s screenshot must show between its action (``i0`` plus its
    stamp) and the next action's effect: its cost is the best distance in that window. The best ``i0`` minimises
    the summed cost. Windows are seconds long, so the offsets that fit form a valley as wide as their slack (the
    effects pin the offset down afterwards, see :func:`_align_by_timestamps`); the confidence asks whether another
    valley fits nearly as well (a different placement of the whole run): it compares the best sum with the best
    one outside the valley and :data:`_RIVAL_SECONDS` beyond (on :data:`_FIT_SCALE`), discounted when the best
    match is poor.

    Args:
        dist: (K, M) distances of the K stamped steps with a screenshot to the M sampled frames.
        frame_times: (M,) times of the samples.
        walls: (K,) when each screenshot's screen can first be on it: the stamp of the action it shows the
            result of, seconds since the first stamp of the run.
        nexts: (K,) the stamp of the action that ends it (None: it may last to the end of the recording).
        res: the stamps' resolution (the true action time lies in ``[stamp, stamp + res)``).
    """
    k_steps, m = dist.shape
    dt = float(np.median(np.diff(frame_times))) if m > 1 else 1.0
    total = np.zeros(m)
    for k in range(k_steps):
        shift = int(round(walls[k] / dt))
        nxt = nexts[k]
        if nxt is None:
            win = np.minimum.accumulate(dist[k][::-1])[::-1]  # from the action to the end of the recording
        else:
            # A window longer than the recording is the recording: never sized by the stamps' span.
            n = min(m, max(1, int(round((nxt - walls[k] + res + _GRACE) / dt))))
            win = sliding_min(dist[k], n)
        # cost[i0] = win[i0 + shift]; a step pushed past the end of the recording matches nothing there.
        cost = np.full(m, 1.0)
        lo = max(0, -shift)
        hi = min(m, m - shift)
        if hi > lo:
            cost[lo:hi] = np.minimum(win[lo + shift:hi + shift], 1.0)
        total += cost
    best = int(np.argmin(total))
    # The valley: the offsets around the best whose sum stays within noise of it (half a match margin a step).
    near = total <= total[best] + 0.5 * _MARGIN_SCALE * k_steps
    a = best
    while a > 0 and near[a - 1]:
        a -= 1
    b = best
    while b + 1 < m and near[b + 1]:
        b += 1
    rival = int(round(_RIVAL_SECONDS / dt))
    others = np.concatenate([total[:max(0, a - rival)], total[b + rival + 1:]])
    # Summed, not per step: every step a rival placement fits worse is evidence against it, and a run whose
    # steps mostly stay on one screen for long (where a shift costs nothing) must not drown the others.
    margin = float(others.min()) - float(total[best]) if others.size else 1.0
    quality = min(1.0, max(0.0, 1.0 - float(total[best]) / k_steps / _POOR_MATCH))
    return best, float((1.0 - math.exp(-max(0.0, margin) / _FIT_SCALE)) * quality)


def _effects(dist: np.ndarray, frame_times: np.ndarray, offset: float, rows: list[tuple[int, float, float]],
             changed: np.ndarray, res: float, end: float) -> dict[int, tuple[float, float, bool]]:
    """Where each screenshot's screen first shows in the recording, near where the fitted offset puts it.

    Args:
        dist: (K, M) distances.
        frame_times: (M,) sample times.
        offset: video time of the first stamp (the coarse fit).
        rows: (row, stamp from which its screen can show, stamp by which it ends, or the recording's end) per
            screenshot.
        changed: (K,) whether each screenshot differs from the previous one (to tell a visible effect from none).
        res: stamp resolution.
        end: recording length.

    Returns:
        row -> (time the step's screen first shows, best distance there, whether the screen changed there: its
        screenshot differs from the previous one and the match starts inside the window, not before it).
    """
    out: dict[int, tuple[float, float, bool]] = {}
    for r, w, w_next in rows:
        d = dist[r]
        lo = offset + w - res - _GRACE
        hi = min(offset + w_next + res + _GRACE, end)
        # The samples in [lo, hi] (times ascending): found in O(log M), the steps' windows need not be scanned.
        i0 = int(np.searchsorted(frame_times, lo, side="left"))
        i1 = int(np.searchsorted(frame_times, hi, side="right"))
        if i1 <= i0:
            continue
        j = i0 + int(np.argmin(d[i0:i1]))
        best = float(d[j])
        if r == 0:
            # No screenshot before it: its screen starts where frames stop matching it as well as its best frame.
            thr = best + 0.5 * max(0.0, float(np.median(d)) - best)
            a, _ = _run_around(d, j, thr, lo=i0)
            out[r] = (float(frame_times[a]), best, bool(a > i0))
            continue
        # The screen before this one is the previous screenshot's: it starts at the first frame from which the
        # frames look more like this screenshot than like that one (for a few samples running), a test the
        # pointer and the caret disturb equally on both sides, so typing a few characters is found too. A screen
        # identical to the previous one (a WAIT, a click on nothing) has no moment of its own. The search starts
        # after the last stretch before the best match where the previous screen was up: a window wider than the
        # run's moment (a step without a stamp, an offset not pinned down yet) may open on older screens, which
        # need not look more like the previous screenshot than like this one.
        closer = d[i0:i1] < dist[r - 1][i0:i1]
        run = np.convolve(closer.astype(np.int32), _RUN_KERNEL, mode="full")[_RUN - 1:]
        starts = np.flatnonzero(run >= min(_RUN, len(closer)))
        held = np.convolve((~closer[:j - i0 + 1]).astype(np.int32), _RUN_KERNEL, mode="full")[_RUN - 1:]
        previous = np.flatnonzero(held >= _RUN)
        if previous.size:
            starts = starts[starts >= previous[-1] + _RUN]
        a = i0 + int(starts[0]) if starts.size else i0
        out[r] = (float(frame_times[a]), best, bool(changed[r] and a > i0))
    return out


def _agreement(best: float, far: float) -> float:
    """How surely a screenshot shows where its timestamp puts it: its best distance there against how far the
    run's other screens are from it (``far``: the 90th percentile of its distances to every sampled frame). Screens
    of one app share most pixels, so an absolute scale would pass a screen that never appears; this one does not."""
    if far <= 1e-6:
        return 0.0
    return min(1.0, max(0.0, 1.0 - best / (0.5 * far)))


def _align_by_timestamps(traj: Trajectory, walls: list[float | None], res: float, have: list[int],
                         dist: np.ndarray, frame_times: np.ndarray, end: float,
                         changed: np.ndarray | None = None) -> None:
    """Place steps by their stamps plus one fitted offset; screenshots refine within the stamp's resolution.

    Two stages: :func:`fit_offset` finds the placement (the offset to within the windows' slack), then the
    moments the steps' effects appear pin it down: an action runs at its stamp plus the offset and its effect
    shows at most a moment later, so the offset is the smallest (effect - stamp) over the steps whose screen
    visibly changed (outliers more than the windows' slack below the median dropped). Each step then ends when
    its result shows (between its action and the next), or at its action when the screen did not change, and
    starts where the previous one ended (the first at the start of the recording): a step spans from its
    observation to its result, as native recordings and screenshot matching have it. The action's own moment is
    ``extra['t_action_video']``.
    """
    steps = traj.steps
    n = len(steps)
    # Steps without a stamp get one between their neighbours', by position (a line the harness wrote oddly).
    prev_known, next_known = _neighbours([w is not None for w in walls])
    w_all: list[float] = []
    for k in range(n):
        wk, prev, nxt = walls[k], prev_known[k], next_known[k]
        if wk is not None:
            w_all.append(wk)
        elif prev is not None and nxt is not None:
            w0, w1 = walls[prev], walls[nxt]
            assert w0 is not None and w1 is not None
            w_all.append(w0 + (w1 - w0) * (k - prev) / (nxt - prev))
        elif prev is not None or nxt is not None:
            w_all.append(walls[prev if prev is not None else nxt] or 0.0)  # type: ignore[index]  # one is set
        else:
            w_all.append(0.0)
    # The stamp of the first later action stamped later than each one (the end of its screenshot's window): the
    # next greater element, in one pass from the end with a stack of ever later stamps.
    next_wall: list[float | None] = [None] * n
    stack: list[float] = []
    for k in range(n - 1, -1, -1):
        while stack and stack[-1] <= w_all[k]:
            stack.pop()
        next_wall[k] = stack[-1] if stack else None
        stack.append(w_all[k])

    # Which action's result each screenshot shows, and the stamps bounding when it can be on screen: taken after
    # its step's action (OSWorld), it shows from that action to the next; taken before (the observation the
    # agent acted on), from the previous action to its own.
    before = all(steps[k].extra.get("screenshot_timing") == "before_action" for k in have) and bool(have)
    fit_rows = [r for r, k in enumerate(have) if walls[k] is not None]
    shows: dict[int, int | None] = {}
    bounds: dict[int, tuple[float, float | None]] = {}
    for r in fit_rows:
        k = have[r]
        if before:
            shows[r] = k - 1 if k > 0 else None
            bounds[r] = (w_all[k - 1] if k > 0 else w_all[k] - _BEFORE_FIRST, w_all[k])
        else:
            shows[r] = k
            bounds[r] = (w_all[k], next_wall[k])
    effects: dict[int, tuple[float, float, bool]] = {}
    if fit_rows:
        i0, fit_conf = fit_offset(dist[fit_rows], frame_times, [bounds[r][0] for r in fit_rows],
                                  [bounds[r][1] for r in fit_rows], res)
        offset = float(frame_times[i0])
        if changed is not None:
            # Twice: the fit's offset may be off by the windows' slack, so the first pass's windows can miss a
            # short-lived screen; the second looks again around the offset the effects gave.
            for _ in range(2):
                rows = [(r, lo_w, hi_w if hi_w is not None else end - offset) for r, (lo_w, hi_w) in bounds.items()]
                effects = _effects(dist, frame_times, offset, rows, changed, res, end)
                deltas = np.array([effects[r][0] - w_all[k] for r, k in shows.items()
                                   if k is not None and r in effects and effects[r][2]])
                if not deltas.size:
                    break
                keep = deltas[deltas >= np.median(deltas) - res - _GRACE]
                offset = float(keep.min())
            if deltas.size:
                # The effects themselves say whether the offset is right: each visible result must show within
                # the stamp's resolution (plus a redraw's grace) after its action. Steps that agree are
                # independent evidence (1 - e^(-n/2): 0.63 for two, 0.92 for five), scaled by the share that do.
                agree = int(((deltas >= offset - 1e-6) & (deltas <= offset + res + _GRACE)).sum())
                fit_conf = max(fit_conf, (1.0 - math.exp(-agree / 2.0)) * agree / deltas.size)
    else:
        offset, fit_conf = 0.0, 0.0  # stamps but no screenshot to anchor them: the recording's start
    result_row = {k: r for r, k in shows.items() if k is not None}
    # A step spans from the moment its observation is on screen (the previous step's result) to the moment its
    # own result is (the same convention as native recordings and screenshot matching: the model's keyframe is
    # the frame at a step's end). The action itself runs at its stamp plus the offset, kept as t_action_video.
    acts = [offset + w_all[k] for k in range(n)]
    results: list[float] = []
    confs: list[float] = []
    row_of = {k: r for r, k in enumerate(have)}
    far = np.percentile(dist, 90, axis=1) if dist.size else np.zeros(0)  # (K,) see _agreement
    for k in range(n):
        t = acts[k]  # no visible result: the screen is the same before and after, any moment from the action on
        conf = fit_conf * 0.5  # the stamp alone: no screenshot says the step is where it says
        own = row_of.get(k)
        rr = result_row.get(k)
        if rr is not None and rr in effects and effects[rr][2]:
            # Its result shows then; it cannot show before the action nor after the next action ran.
            hi = acts[k + 1] + res if k + 1 < n else end
            t = min(max(effects[rr][0], acts[k]), hi)
        if own is not None and own in effects:
            conf = fit_conf * _agreement(effects[own][1], float(far[own]))
        elif own is not None:
            conf = 0.0  # its window lies outside the recording
        results.append(t)
        confs.append(conf)
    for k in range(1, n):  # stamps within one second may be refined out of order: keep the run's order
        results[k] = max(results[k], results[k - 1])
    for k, step in enumerate(steps):
        step.t_end = max(0.0, min(results[k], end))
        step.t_start = min(step.t_end, max(0.0, results[k - 1])) if k > 0 else 0.0
        step.extra["t_action_video"] = round(min(max(acts[k], 0.0), end), 4)
        step.align_method = "timestamp_offset" if walls[k] is not None else "interpolated"
        step.align_confidence = round(confs[k] if walls[k] is not None else 0.0, 4)
    traj.metadata["alignment"] = {"method": "timestamp_offset", "offset": round(offset, 4),
                                  "fit_confidence": round(fit_conf, 4), "resolution": res}
    if fit_conf < LOW_CONFIDENCE:
        traj.warnings.append(f"{traj.source_path}: the offset between the action timestamps and the recording is "
                             f"uncertain (fit confidence {fit_conf:.2f}): step times may all be shifted")


def _flag_low_confidence(traj: Trajectory) -> None:
    """Name the uncertain steps in a warning and in ``metadata['alignment']``: a wrong place must not pass
    unnoticed (the viewer would show the wrong frames, the model would judge the wrong keyframes)."""
    low = traj.alignment_summary()["low_confidence_steps"]
    traj.metadata.setdefault("alignment", {})["low_confidence_steps"] = low
    if not low:
        return
    by_index = {s.index: s for s in traj.steps}
    listed = ", ".join(f"{k} ({by_index[k].align_confidence:.2f})" for k in low[:10])
    more = f" and {len(low) - 10} more" if len(low) > 10 else ""
    traj.warnings.append(f"{traj.source_path}: {len(low)} of {len(traj.steps)} steps placed in the recording with "
                         f"low confidence (< {LOW_CONFIDENCE}): steps {listed}{more}; check them against the video")


def _plateau_starts(dist: np.ndarray, assign: np.ndarray) -> tuple[list[int], list[float]]:
    """Move each assigned sample back to the start of its plateau; confidence from the match margin.

    The plateau of step k is the run of samples, ending at its assigned one, that look more like its screenshot
    than like the screen before it: the threshold lies half-way between the best distance and the distance to
    the previous step's matched frame (or to a typical frame, whichever is closer). A step whose screenshot
    looks like the previous step's (an action with no visible effect) gets the previous step's start and is
    spread later by :func:`_spread_ties`.

    Args:
        dist: (K, M) distances.
        assign: (K,) non-decreasing samples from :func:`monotone_assignment`.

    Returns:
        Start sample per step (non-decreasing) and confidence per step.
    """
    n_steps, m = dist.shape
    starts: list[int] = []
    confs: list[float] = []
    lo = 0
    medians = np.median(dist, axis=1)  # (K,)
    for k in range(n_steps):
        d, s = dist[k], int(assign[k])
        best = float(d[s])
        spread = float(medians[k]) - best  # how far a typical frame of the recording is
        if k > 0:
            before = float(d[assign[k - 1]]) - best  # how far the screen before this step is
            if before < 0.25 * spread:
                start = starts[-1]  # same screen as the previous step: a tie
                thr = best + 0.5 * max(before, 0.0)
            else:
                thr = best + 0.5 * min(before, spread)
                start, _ = _run_around(d, s, thr, lo=lo)
        else:
            thr = best + 0.5 * max(spread, 0.0)
            start, _ = _run_around(d, s, thr)
        # Confidence: how much better the match is than anything else the ordering allowed for this step
        # (between the neighbours' matches), outside its own plateau.
        _, end = _run_around(d, s, thr)
        w0 = int(assign[k - 1]) if k > 0 else 0
        w1 = int(assign[k + 1]) if k + 1 < n_steps else m - 1
        window = np.concatenate([d[w0:start], d[end + 1:w1 + 1]])
        other = float(window.min()) if window.size else best + max(spread, 0.0)
        starts.append(start)
        confs.append(_confidence(best, other))
        lo = start
    return starts, confs


def _spread_ties(have: list[int], t_match: dict[int, float], c_match: dict[int, float], end: float) -> None:
    """Steps matched to the same moment (consecutive identical screenshots: an action with no visible effect)
    share the plateau evenly up to the next distinct start, with half the confidence: pixels cannot tell them
    apart."""
    k = 0
    while k < len(have):
        j = k
        while j + 1 < len(have) and t_match[have[j + 1]] == t_match[have[k]]:
            j += 1
        if j > k:
            t0 = t_match[have[k]]
            t1 = t_match[have[j + 1]] if j + 1 < len(have) else end
            n = j - k + 1
            for r, step_k in enumerate(have[k + 1:j + 1], start=1):
                t_match[step_k] = t0 + (t1 - t0) * r / n
                c_match[step_k] *= 0.5
        k = j + 1


def _write_times(traj: Trajectory, t_match: dict[int, float], c_match: dict[int, float], end: float) -> None:
    steps = traj.steps
    n = len(steps)
    prev_matched, next_matched = _neighbours([k in t_match for k in range(n)])
    times: list[float] = []
    for k in range(n):
        if k in t_match:
            times.append(t_match[k])
            continue
        # Interpolate by position between the nearest matched neighbours (0 and the end bound the ends).
        prev, nxt = prev_matched[k], next_matched[k]
        t0, k0 = (t_match[prev], prev) if prev is not None else (0.0, 0)
        t1, k1 = (t_match[nxt], nxt) if nxt is not None else (end, n)
        times.append(t0 + (t1 - t0) * (k - k0) / (k1 - k0))
    # A screenshot taken after the action (OSWorld saves the observation env.step returns) shows the step's
    # result, so its match marks where the step ends; one taken before the action marks where it starts.
    after = any(s.extra.get("screenshot_timing") == "after_action" for s in steps)
    for k, step in enumerate(steps):
        if after:
            step.t_start = times[k - 1] if k > 0 else 0.0
            step.t_end = times[k]
        else:
            step.t_start = times[k]
            step.t_end = times[k + 1] if k + 1 < n else end
        if k in t_match:
            step.align_method = "screenshot_match"
            step.align_confidence = round(c_match[k], 4)
        else:
            step.align_method = "interpolated"
            step.align_confidence = 0.0


def _neighbours(present: list[bool]) -> tuple[list[int | None], list[int | None]]:
    """For each position, the nearest position before it and after it where ``present`` holds (None: none), in two
    passes: filling the gaps of a long run must not look through the whole run for each."""
    n = len(present)
    before: list[int | None] = [None] * n
    after: list[int | None] = [None] * n
    last: int | None = None
    for k in range(n):
        before[k] = last
        last = k if present[k] else last
    last = None
    for k in range(n - 1, -1, -1):
        after[k] = last
        last = k if present[k] else last
    return before, after


def _fill_video_ref(video: VideoRef, src: FrameSource) -> None:
    video.fps = video.fps or src.fps
    video.frames = video.frames or src.frame_count
    video.width = video.width or src.width
    video.height = video.height or src.height
