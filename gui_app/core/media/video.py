"""Frame-exact access to screen recordings and screenshot folders, with a bounded cache and prefetch.

Why PyAV and not OpenCV: a viewer of agent runs must show *the* frame of a step, and recordings are long-GOP
H.264 (one keyframe every few hundred frames). OpenCV's ``CAP_PROP_POS_FRAMES`` seek was measured at 170 ms
median on a 1080p long-GOP file and not reliably exact (it lands by timestamp = frame / nominal fps); OpenCV
also reports a variable-frame-rate file's frame count as duration x nominal fps (101 for a 60-frame test file)
and gives no keyframe positions. PyAV exposes each packet's exact presentation timestamp (pts) and keyframe
flag, so on open we demux the packets once, *without decoding*, into an index (pts of every frame in
presentation order, keyframe positions); ``frame(i)`` then seeks to the keyframe at or before ``i`` and decodes
forward to exactly the frame whose pts is the ``i``-th (converting only that one to RGB), and a following
``frame(i + 1)``, or any frame ahead in the same GOP, continues from the decoder's position without seeking.
Times come from the real pts, so variable-frame-rate recordings map time to frame correctly. A random seek
still costs decoding half a GOP on average: that is the file's structure, which the cache and prefetch hide
(``bench/video_seek.py`` measures both). OpenCV remains as a fallback reader for files PyAV cannot index
(frames without timestamps).

Frames are RGB ``(H, W, 3) uint8`` arrays, read-only (they are shared with the cache). A source opened with
``max_side`` decodes into a smaller size through libswscale, which is how a viewer keeps a 1080p recording's
cache small; ``width``/``height`` stay the recording's own size, ``out_width``/``out_height`` are the frames'.

Hostile files: screenshots are decoded through :func:`gui_app.core.media.images.read_image`, which measures them from
their
header first; a recording whose frames would each be larger than an image may be, or an MP4 whose track has a time
scale of 0 (FFmpeg would make up a clock for it), is refused with a :class:`VideoError` naming it.

Threading: one lock guards the decoder; the cache has its own lock held only for dictionary operations, so
:meth:`FrameSource.cached` never waits for a decode. :meth:`FrameSource.prefetch` hands indices to one daemon
worker thread; a newer request cancels an older one, and a blocking :meth:`FrameSource.frame` call from another
thread pre-empts the worker between two decoded frames.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gui_app.core.errors import VideoError
from gui_app.core.media.images import read_image, size_problem
from gui_app.core.safety import PROBE_TIMEOUT_S, is_regular, time_scale_problem

if TYPE_CHECKING:
    import av

    from gui_app.core.trajectory.model import Trajectory

# PyAV and OpenCV are imported where a file is opened, decoded or resized, not with this module: everything that
# names a trajectory imports it (for VideoRef and the media suffixes), and the app paints its library before it
# decodes anything (0.2-0.3 s of start-up on two cores).

# The one list of media file endings (importers, the image-folder format, scans and the frame source read these).
VIDEO_SUFFIXES = (".mp4", ".webm", ".mkv", ".avi", ".mov", ".m4v")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")


@dataclass
class VideoRef:
    """A screen recording of the whole run. ``fps``/``frames``/size are filled by probing when unknown."""

    path: str
    fps: float | None = None
    frames: int | None = None
    width: int | None = None
    height: int | None = None

DEFAULT_CACHE_BYTES = 256 * 2**20


def load_decoders() -> None:
    """Import PyAV and OpenCV now: the app calls this in a worker once it has painted, so that neither the first
    recording opened nor the first frame pinned (on the GUI thread) waits for them."""
    import av  # noqa: F401
    import cv2  # noqa: F401


def _natural_key(p: Path) -> list[Any]:
    """Sort ``step_2.png`` before ``step_10.png``."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", p.name)]


def list_images(folder: str | Path) -> list[Path]:
    """Image files of a folder in natural order (``2`` before ``10``)."""
    folder = Path(folder)
    return sorted((p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()),
                  key=_natural_key)


def _out_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """Output size keeping the aspect ratio, longest side at most ``max_side`` (never upscaled)."""
    if not max_side or max(width, height) <= max_side:
        return width, height
    s = max_side / max(width, height)
    return max(1, round(width * s)), max(1, round(height * s))


def _resize(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    if (img.shape[1], img.shape[0]) == size:
        return img
    import cv2

    return cv2.resize(img, size, interpolation=cv2.INTER_AREA)


def _check_file(path: Path) -> None:
    """Refuse what is not a regular, non-empty file before a decoder opens it (FFmpeg and OpenCV would wait for
    ever on a FIFO, and read ``/dev/zero`` for ever)."""
    if not path.exists():
        raise VideoError(path, "file not found")
    if not is_regular(path):
        raise VideoError(path, "not a regular file (a FIFO, device or folder)")
    if path.stat().st_size == 0:
        raise VideoError(path, "file is empty")
    problem = time_scale_problem(path)  # FFmpeg would make up a clock for it
    if problem is not None:
        raise VideoError(path, problem)


def _check_size(path: Path, width: int, height: int) -> None:
    """Refuse a stream whose frames would each take more memory than an image may (:func:`size_problem`)."""
    problem = size_problem(width, height, "frame")
    if problem is not None:
        raise VideoError(path, problem)


# What FFmpeg may read to find the streams (bytes, microseconds): bounded so a hostile file cannot keep it busy;
# ample for a screen recording, whose first packets say it all.
_PROBE_OPTIONS = {"probesize": str(32 << 20), "analyzeduration": str(30_000_000)}


def _open_container(path: Path) -> Any:
    import av

    _check_file(path)
    try:
        # timeout: FFmpeg gives up opening after PROBE_TIMEOUT_S, and a single read after 30 s.
        container = av.open(str(path), options=_PROBE_OPTIONS, timeout=(PROBE_TIMEOUT_S, 30.0))
    except (av.FFmpegError, OSError, UnicodeDecodeError) as e:
        raise VideoError(path, f"cannot open as video ({e})") from e
    if not container.streams.video:
        container.close()
        raise VideoError(path, "no video stream in file")
    return container


@dataclass
class _Index:
    """Timestamps of every frame in presentation order, from demuxed packets (no decoding).

    Attributes:
        pts: (N,) int64 presentation timestamps in stream time base, ascending.
        times: (N,) float64 seconds from the first frame.
        keys: ascending frame indices of keyframes (always starting with 0).
        end_time: seconds from the first frame to the end of the last frame.
        by_pts: frame index of each pts.
    """

    pts: np.ndarray
    times: np.ndarray
    keys: list[int]
    end_time: float
    by_pts: dict[int, int]


def _build_index(container: Any, stream: Any, path: Path) -> _Index | None:
    """Demux every packet of ``stream`` once; None when some frame carries no timestamp."""
    import av

    tb = float(stream.time_base)
    pts_list: list[int] = []
    key_pts: list[int] = []
    last_dur = 0
    try:
        for packet in container.demux(stream):
            if packet.size == 0:  # flush packet at the end of the stream
                continue
            ts = packet.pts if packet.pts is not None else packet.dts
            if ts is None:
                return None
            pts_list.append(ts)
            if packet.is_keyframe:
                key_pts.append(ts)
            last_dur = packet.duration or 0
    except av.FFmpegError as e:
        if not pts_list:
            raise VideoError(path, f"cannot read packets ({e})") from e
        # A damaged tail: keep the readable frames (a recording cut off by a crash is common).
    if not pts_list:
        raise VideoError(path, "video stream has no frames")
    pts = np.unique(np.asarray(pts_list, dtype=np.int64))
    times = (pts - pts[0]).astype(np.float64) * tb
    by_pts = {int(p): i for i, p in enumerate(pts)}
    keys = sorted({by_pts[k] for k in key_pts} | {0})
    if not last_dur:
        rate = stream.average_rate or stream.guessed_rate
        last_dur_s = (1.0 / float(rate)) if rate else (float(times[-1] / (len(times) - 1)) if len(times) > 1 else 0.0)
    else:
        last_dur_s = last_dur * tb
    return _Index(pts=pts, times=times, keys=keys, end_time=float(times[-1]) + last_dur_s, by_pts=by_pts)


def probe(path: str | Path) -> VideoRef:
    """Read a recording's frame rate, exact frame count and size without decoding.

    Frames are counted from the container's header when it states them (MP4, AVI), else by demuxing the
    packets (WebM, MKV), which reads the file but decodes nothing. An image folder counts its images (1 fps).

    Raises:
        VideoError: naming the file when it is missing, empty, not a video or has no video frames.
    """
    path = Path(path)
    if path.is_dir():
        images = list_images(path)
        if not images:
            raise VideoError(path, "folder holds no images")
        h, w = read_image(images[0]).shape[:2]
        return VideoRef(path=str(path), fps=1.0, frames=len(images), width=w, height=h)
    import av

    container = _open_container(path)
    try:
        stream = container.streams.video[0]
        frames = stream.frames
        if not frames:
            frames = 0
            deadline = time.monotonic() + PROBE_TIMEOUT_S
            try:
                for packet in container.demux(stream):
                    frames += packet.size > 0
                    if time.monotonic() > deadline:
                        raise VideoError(path, f"counting its frames took longer than {PROBE_TIMEOUT_S:g} s")
            except av.FFmpegError as e:
                if not frames:
                    raise VideoError(path, f"cannot read packets ({e})") from e
        if not frames:
            raise VideoError(path, "video stream has no frames")
        rate = stream.average_rate or stream.guessed_rate
        cc = stream.codec_context
        if not cc.width or not cc.height:
            raise VideoError(path, "video stream has no frame size (not decodable)")
        _check_size(path, cc.width, cc.height)
        return VideoRef(path=str(path), fps=float(rate) if rate else None, frames=int(frames),
                        width=cc.width, height=cc.height)
    finally:
        container.close()


class _LRU:
    """Least-recently-used map of arrays bounded by their total bytes. Thread-safe; never blocks for long."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self._d: OrderedDict[Any, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> np.ndarray | None:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def __contains__(self, key: Any) -> bool:
        with self._lock:
            return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def put(self, key: Any, value: np.ndarray) -> None:
        if value.nbytes > self.max_bytes:
            return  # would evict everything and still not fit
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.nbytes -= old.nbytes
            self._d[key] = value
            self.nbytes += value.nbytes
            while self.nbytes > self.max_bytes:
                _, ev = self._d.popitem(last=False)
                self.nbytes -= ev.nbytes

    def keys(self) -> list[Any]:
        with self._lock:
            return list(self._d)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.nbytes = 0


class _Cancelled(Exception):
    """Internal: a background decode gave way to a newer request or a foreground call."""


class _Decoder:
    """What a FrameSource reads from: a frame count, timestamps and ``read(i)``. Not thread-safe by itself."""

    fps: float
    frame_count: int
    width: int
    height: int
    times: np.ndarray  # (N,) seconds of each frame from the first
    end_time: float
    out_size: tuple[int, int]

    def read(self, i: int, want: Callable[[int], bool] | None = None,
             got: Callable[[int, np.ndarray], None] | None = None,
             cancel: Callable[[], bool] | None = None) -> np.ndarray:
        """Decode frame ``i``; frames passed on the way for which ``want(j)`` holds are handed to ``got``."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class _AvDecoder(_Decoder):
    """Exact frames through PyAV: keyframe seek plus decode forward, guided by the packet index."""

    def __init__(self, path: Path, max_side: int | None, threads: int):
        self.path = path
        self.container = _open_container(path)
        try:
            self.stream = self.container.streams.video[0]
            index = _build_index(self.container, self.stream, path)
            if index is None:
                raise VideoError(path, "some frames carry no timestamp")
            self.index = index
            cc = self.stream.codec_context
            # Frame threads raise throughput on sequential decode; slice threads do not help x264 output (one
            # slice per frame). Thread count stays small: the app shares the CPU with the GUI and scoring.
            if threads > 1:
                cc.thread_type = "AUTO"
                cc.thread_count = threads
            self.width, self.height = cc.width, cc.height
            if not self.width or not self.height:
                raise VideoError(path, "video stream has no frame size (not decodable)")
            _check_size(path, self.width, self.height)
        except BaseException:
            self.container.close()
            raise
        self.frame_count = len(index.pts)
        self.times = index.times
        self.end_time = index.end_time
        rate = self.stream.average_rate or self.stream.guessed_rate
        self.fps = float(rate) if rate else (self.frame_count / self.end_time if self.end_time > 0 else 1.0)
        self.out_size = _out_size(self.width, self.height, max_side)
        self._last: int | None = None  # index of the last frame the decoder gave out; None: must seek
        self._frames: Iterator[av.VideoFrame] | None = None
        self._seek_ts(int(index.pts[0]))

    def _seek_ts(self, ts: int) -> None:
        # seek() flushes the decoder's buffers; backward=True lands on the keyframe at or before ts.
        self.container.seek(ts, stream=self.stream, backward=True, any_frame=False)
        self._frames = self.container.decode(self.stream)
        self._last = None

    def _key_at_or_before(self, i: int) -> int:
        keys = self.index.keys
        return keys[bisect.bisect_right(keys, i) - 1]

    def _convert(self, frame: av.VideoFrame) -> np.ndarray:
        w, h = self.out_size
        if (w, h) == (self.width, self.height):
            arr = frame.to_ndarray(format="rgb24")
        else:
            arr = frame.reformat(width=w, height=h, format="rgb24", interpolation="AREA").to_ndarray()
        arr.flags.writeable = False
        return arr

    def _frame_index(self, frame: av.VideoFrame) -> int | None:
        ts = frame.pts if frame.pts is not None else frame.dts
        return None if ts is None else self.index.by_pts.get(int(ts))

    def read(self, i, want=None, got=None, cancel=None):
        last = self._last
        key = self._key_at_or_before(i)
        # Continue from the decoder's position when i lies ahead in the same GOP (or right at the next
        # keyframe): seeking would only decode the same frames again.
        seeked: int | None = None  # the keyframe sought to, None while continuing from the decoder's position
        if not (last is not None and last < i and key <= last + 1):
            self._seek_ts(int(self.index.pts[key]))
            seeked = key
        while True:
            try:
                return self._decode_forward(i, want, got, cancel)
            except _Overshot:
                # Decoding went past the target: a frame missing from the stream while continuing, or a seek
                # that landed late (a coarse or dts-based seek index). Seek to the target's keyframe, then one
                # keyframe earlier each time, and give up after decoding from the very start.
                if seeked == 0:
                    raise VideoError(self.path, f"frame {i} cannot be reached by decoding") from None
                if seeked is None:
                    seeked = key
                else:
                    seeked = self.index.keys[max(bisect.bisect_left(self.index.keys, seeked) - 1, 0)]
                self._seek_ts(int(self.index.pts[seeked]))

    def _decode_forward(self, i: int, want, got, cancel) -> np.ndarray:
        import av

        assert self._frames is not None
        try:
            for frame in self._frames:
                j = self._frame_index(frame)
                if j is None:
                    continue
                if j > i:
                    self._last = j
                    raise _Overshot
                self._last = j
                if j == i:
                    return self._convert(frame)
                # Frames on the way are only converted to RGB when asked for: converting a 1080p frame costs
                # about as much as decoding it.
                if want is not None and got is not None and want(j):
                    got(j, self._convert(frame))
                if cancel is not None and cancel():
                    raise _Cancelled
        except av.FFmpegError as e:
            self._last = None
            raise VideoError(self.path, f"decoding failed before frame {i} ({e})") from e
        self._last = None  # the decoder is at the end of the stream: the next read must seek
        raise VideoError(self.path, f"frame {i} not found in the stream (file truncated?)")

    def close(self) -> None:
        self._frames = None
        self.container.close()


class _Overshot(Exception):
    """Internal: decoding after a seek started past the wanted frame."""


class _CvDecoder(_Decoder):
    """Fallback through OpenCV: frame numbers from its own counter, times as ``i / fps`` (constant rate)."""

    def __init__(self, path: Path, max_side: int | None):
        import cv2

        _check_file(path)
        self.path = path
        self.cap = cv2.VideoCapture(str(path))
        if not self.cap.isOpened():
            raise VideoError(path, "cannot open as video (OpenCV)")
        self.fps = float(self.cap.get(cv2.CAP_PROP_FPS)) or 1.0
        self.width = int(self.cap.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(self.cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        n = int(self.cap.get(cv2.CAP_PROP_FRAME_COUNT))
        if n <= 0:  # the header does not say: count by grabbing (decodes, but this is the fallback path)
            n = 0
            while self.cap.grab():
                n += 1
            self.cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
        if n <= 0 or not self.width:
            self.cap.release()
            raise VideoError(path, "video stream has no frames (OpenCV)")
        try:
            _check_size(path, self.width, self.height)
        except VideoError:
            self.cap.release()
            raise
        self.frame_count = n
        self.times = np.arange(n, dtype=np.float64) / self.fps
        self.end_time = n / self.fps
        self.out_size = _out_size(self.width, self.height, max_side)
        self._next = 0  # index of the frame the next read() returns

    def read(self, i, want=None, got=None, cancel=None):
        import cv2

        if not (self._next <= i <= self._next + 60):
            self.cap.set(cv2.CAP_PROP_POS_FRAMES, i)
            self._next = i
        while self._next < i:
            if not self.cap.grab():
                raise VideoError(self.path, f"frame {i} not found (OpenCV)")
            self._next += 1
        ok, img = self.cap.read()
        if not ok:
            raise VideoError(self.path, f"frame {i} not found (OpenCV)")
        self._next = i + 1
        arr = _resize(cv2.cvtColor(img, cv2.COLOR_BGR2RGB), self.out_size)
        arr.flags.writeable = False
        return arr

    def close(self) -> None:
        self.cap.release()


class _ImageDecoder(_Decoder):
    """A list of image files as frames at a fixed rate; frames keep their own size (scaled by ``max_side``)."""

    def __init__(self, paths: Sequence[str | Path], fps: float, max_side: int | None, origin: str | Path):
        if not paths:
            raise VideoError(origin, "no images")
        if fps <= 0:
            raise ValueError("fps must be positive")
        self.paths = [Path(p) for p in paths]
        first = read_image(self.paths[0])
        self.height, self.width = first.shape[:2]
        self.fps = float(fps)
        self.frame_count = len(self.paths)
        self.times = np.arange(self.frame_count, dtype=np.float64) / self.fps
        self.end_time = self.frame_count / self.fps
        self.max_side = max_side
        self.out_size = _out_size(self.width, self.height, max_side)

    def read(self, i, want=None, got=None, cancel=None):
        img = read_image(self.paths[i])
        arr = _resize(img, _out_size(img.shape[1], img.shape[0], self.max_side))
        arr.flags.writeable = False
        return arr


class FrameSource:
    """Exact frames of a recording (or of a list of screenshots) by index or time, cached and prefetched.

    Attributes:
        path: the video file or image folder ('' for a list of images).
        fps: nominal frame rate (the real per-frame times come from :meth:`time_of`).
        frame_count: number of frames.
        width: width of the recording in pixels (the coordinate space of the agent's actions).
        height: height of the recording in pixels.
        out_width: width of the frames returned (smaller than ``width`` when opened with ``max_side``).
        out_height: height of the frames returned.
        duration: seconds from the first frame to the end of the last.
        backend: ``pyav``, ``opencv`` or ``images``.
        per_step: True when frame ``i`` is step ``i``'s screenshot (set by :func:`open_for`).
        notes: what the user should know about these frames (set by :func:`open_for` when the recording could not
            be read and the step screenshots stand in for it).

    Use :meth:`open`, :meth:`from_images` or :func:`open_for`; close with :meth:`close` (or a ``with`` block).
    """

    def __init__(self, decoder: _Decoder, path: str, backend: str, cache_bytes: int = DEFAULT_CACHE_BYTES):
        self._dec = decoder
        self.per_step = False
        self.notes: list[str] = []
        self.path = path
        self.backend = backend
        self.fps = decoder.fps
        self.frame_count = decoder.frame_count
        self.width, self.height = decoder.width, decoder.height
        self.out_width, self.out_height = decoder.out_size
        self.duration = decoder.end_time
        self._times = decoder.times
        self._cache = _LRU(cache_bytes)
        self._dec_lock = threading.Lock()
        # Foreground calls waiting for the decoder: the worker yields to them between frames.
        self._fg = 0
        self._fg_cond = threading.Condition()
        # Prefetch requests: a queue replaced wholesale by each request; the generation tells the worker that its
        # current job is stale.
        self._req = threading.Condition()
        self._pending: deque[int] = deque()
        self._pending_set: frozenset[int] = frozenset()
        self._gen = 0
        self._stop = False
        self._busy = False
        self._worker: threading.Thread | None = None
        self._closed = False

    # ----------------------------------------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str | Path, *, max_side: int | None = None, cache_bytes: int = DEFAULT_CACHE_BYTES,
             backend: str = "auto", threads: int = 2, fps: float = 1.0) -> FrameSource:
        """Open a video file (mp4/webm/mkv/avi/mov), an image folder or a single image.

        Args:
            path: the file or folder.
            max_side: decode into frames whose longest side is at most this (None: full size).
            cache_bytes: budget of the frame cache in bytes.
            backend: ``auto`` (PyAV, OpenCV when PyAV cannot index the file), ``pyav`` or ``opencv``.
            threads: decoder threads (PyAV).
            fps: frame rate given to an image folder.

        Raises:
            VideoError: naming the path when it cannot be opened or its first frame cannot be decoded.
        """
        p = Path(path)
        if p.is_dir():
            images = list_images(p)
            if not images:
                raise VideoError(p, "folder holds no images")
            return cls(_ImageDecoder(images, fps, max_side, p), str(p), "images", cache_bytes)
        if p.suffix.lower() in IMAGE_SUFFIXES:
            return cls(_ImageDecoder([p], fps, max_side, p), str(p), "images", cache_bytes)
        if backend not in ("auto", "pyav", "opencv"):
            raise ValueError(f"unknown backend {backend!r}")
        if backend == "opencv":
            src = cls(_CvDecoder(p, max_side), str(p), "opencv", cache_bytes)
        else:
            try:
                src = cls(_AvDecoder(p, max_side, threads), str(p), "pyav", cache_bytes)
            except VideoError as e:
                if backend == "pyav" or "no timestamp" not in e.reason:
                    raise
                src = cls(_CvDecoder(p, max_side), str(p), "opencv", cache_bytes)
        try:
            src.frame(0)  # proves the stream decodes; the first frame is what a viewer shows first anyway
        except BaseException:
            src.close()
            raise
        return src

    @classmethod
    def from_images(cls, paths: Sequence[str | Path], fps: float = 1.0, *, max_side: int | None = None,
                    cache_bytes: int = DEFAULT_CACHE_BYTES) -> FrameSource:
        """Frames from image files in the given order, at ``fps`` frames per second."""
        origin = Path(paths[0]).parent if paths else Path(".")
        return cls(_ImageDecoder(paths, fps, max_side, origin), "", "images", cache_bytes)

    @classmethod
    def open_for(cls, traj: Trajectory, **kwargs: Any) -> FrameSource:
        """See :func:`open_for`."""
        return open_for(traj, **kwargs)

    # ------------------------------------------------------------------------------------------------ timing
    def _check(self, i: int) -> int:
        i = int(i)
        if not 0 <= i < self.frame_count:
            raise IndexError(f"frame {i} out of range 0..{self.frame_count - 1} in {self.path}")
        return i

    def time_of(self, i: int) -> float:
        """Seconds from the first frame to frame ``i`` (its real presentation time)."""
        return float(self._times[self._check(i)])

    def index_at(self, t: float) -> int:
        """The frame on screen at time ``t`` seconds: the last frame whose time is <= t, clamped to the range."""
        # 1 µs of slack so that index_at(time_of(i)) == i despite float rounding.
        i = int(np.searchsorted(self._times, t + 1e-6, side="right")) - 1
        return min(max(i, 0), self.frame_count - 1)

    @property
    def times(self) -> np.ndarray:
        """(N,) float64 seconds of every frame (read-only view)."""
        v = self._times.view()
        v.flags.writeable = False
        return v

    # ------------------------------------------------------------------------------------------------ frames
    def frame(self, i: int) -> np.ndarray:
        """Frame ``i`` as RGB ``(H, W, 3) uint8`` (read-only), exact; blocks while it decodes.

        Raises:
            IndexError: ``i`` out of range.
            VideoError: the frame cannot be decoded.
        """
        i = self._check(i)
        hit = self._cache.get(i)
        if hit is not None:
            return hit
        if self._closed:
            raise VideoError(self.path, "source is closed")
        with self._fg_cond:
            self._fg += 1
        try:
            with self._dec_lock:
                hit = self._cache.get(i)  # the worker may have decoded it while we waited
                if hit is not None:
                    return hit
                arr = self._dec.read(i, want=self._wanted, got=self._cache.put)
                self._cache.put(i, arr)
                return arr
        finally:
            with self._fg_cond:
                self._fg -= 1
                self._fg_cond.notify_all()

    def frame_at(self, t: float) -> np.ndarray:
        """The frame on screen at ``t`` seconds (see :meth:`index_at`)."""
        return self.frame(self.index_at(t))

    def cached(self, i: int) -> np.ndarray | None:
        """Frame ``i`` if it is in the cache, else None. Never decodes, never waits for the decoder."""
        if not 0 <= i < self.frame_count:
            return None
        return self._cache.get(int(i))

    def thumbnail(self, i: int, max_side: int = 160) -> np.ndarray:
        """Frame ``i`` scaled so that its longest side is at most ``max_side`` (cached)."""
        i = self._check(i)
        key = ("thumb", i, max_side)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        full = self.frame(i)
        th = _resize(full, _out_size(full.shape[1], full.shape[0], max_side))
        if th is full:
            return full
        th.flags.writeable = False
        self._cache.put(key, th)
        return th

    @property
    def cache_bytes(self) -> int:
        """Bytes held by the frame cache now."""
        return self._cache.nbytes

    @property
    def cache_limit(self) -> int:
        """The cache's budget in bytes."""
        return self._cache.max_bytes

    def cached_indices(self) -> list[int]:
        """Indices of the full frames in the cache, least recently used first."""
        return [k for k in self._cache.keys() if isinstance(k, int)]

    # ---------------------------------------------------------------------------------------------- prefetch
    def _wanted(self, j: int) -> bool:
        return j in self._pending_set and j not in self._cache

    def prefetch(self, indices: Iterable[int]) -> None:
        """Decode these frames in the background, in this order, and keep them cached.

        Replaces any earlier request that has not finished (its remaining frames are dropped). Frames met while
        decoding forward to one of them that are also requested are kept on the way, so close indices cost one
        pass, not one seek each. Out-of-range indices are ignored.
        """
        if self._closed:
            return
        seen: set[int] = set()
        todo: list[int] = []
        for i in indices:
            i = int(i)
            if 0 <= i < self.frame_count and i not in seen:
                seen.add(i)
                todo.append(i)
        with self._req:
            self._gen += 1
            self._pending = deque(todo)
            self._pending_set = frozenset(todo)
            self._req.notify_all()
        if todo and self._worker is None:
            self._worker = threading.Thread(target=_prefetch_loop, args=(weakref.ref(self), self._req),
                                            name=f"FrameSource-prefetch:{Path(self.path).name}", daemon=True)
            self._worker.start()

    def prefetch_range(self, start: int, count: int) -> int:
        """Decode frames from ``start`` onwards in the background (playback: decode ahead of the playhead).

        At most half the cache's worth of frames is requested, so decoding ahead never evicts the frames the
        playhead is about to show (nor everything else a viewer keeps).

        Returns:
            The number of frames requested.
        """
        start = max(0, int(start))
        fit = max(1, self.cache_limit // (2 * self.out_width * self.out_height * 3))
        stop = min(self.frame_count, start + min(max(0, int(count)), fit))
        self.prefetch(range(start, stop))
        return max(0, stop - start)

    def prefetch_done(self) -> bool:
        """True when no prefetch request is pending or being decoded."""
        with self._req:
            return not self._pending and not self._busy

    def wait_prefetch(self, timeout: float | None = None) -> bool:
        """Block until every prefetch request is decoded (or the source closes); False on timeout.

        For scripts, benchmarks and tests; a GUI polls :meth:`cached` instead of blocking.
        """
        with self._req:
            return self._req.wait_for(lambda: self._stop or (not self._pending and not self._busy), timeout)

    def _decode_job(self, gen: int, i: int) -> None:
        """Decode one prefetched frame (the worker's unit of work); gives way to newer requests and callers."""
        if i in self._cache:
            return
        with self._fg_cond:
            while self._fg > 0 and not self._stop:
                self._fg_cond.wait(0.05)

        def cancel() -> bool:
            return self._stop or self._gen != gen or self._fg > 0

        try:
            with self._dec_lock:
                if self._stop or i in self._cache:
                    return
                arr = self._dec.read(i, want=self._wanted, got=self._cache.put, cancel=cancel)
                self._cache.put(i, arr)
        except _Cancelled:
            with self._req:
                if self._gen == gen and not self._stop:
                    self._pending.appendleft(i)  # pre-empted by a foreground call: resume it next
        except (VideoError, IndexError):
            pass  # a frame that cannot be decoded stays uncached; a foreground frame() call raises the error

    # ----------------------------------------------------------------------------------------------- closing
    def iter_frames(self, start: int = 0, stop: int | None = None, step: int = 1,
                    size: tuple[int, int] | None = None, gray: bool = False,
                    fast: bool = False) -> Iterator[tuple[int, np.ndarray]]:
        """Decode frames ``start, start + step, ... < stop`` in one sequential pass on a private decoder.

        Meant for whole-video passes (alignment, keyframe selection): it neither touches the cache nor waits for
        the viewer's decoder. Frames between the sampled ones are decoded (a long GOP must be) but not converted.

        Args:
            start: first frame.
            stop: end (exclusive; None: the last frame).
            step: stride between yielded frames.
            size: (width, height) to convert to (None: the recording's own size).
            gray: yield (H, W) uint8 luminance instead of RGB.
            fast: a coarse pass for thumbnail-sized analysis: the decoder skips B-frames (3 of 4 frames of a
                default x264 stream) and the deblocking filter, and each sample is the first frame decoded at or
                after its index (so a sample may come a few frames late; its true index is what is yielded).

        Yields:
            (index, frame) pairs.
        """
        import av
        import cv2

        stop = self.frame_count if stop is None else min(stop, self.frame_count)
        step = max(1, int(step))

        def convert(img: np.ndarray) -> np.ndarray:
            if size is not None:
                img = _resize(img, size)
            return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) if gray else img

        if self.backend != "pyav":
            if isinstance(self._dec, _ImageDecoder):
                other = FrameSource(_ImageDecoder(self._dec.paths, self.fps, None, self.path), self.path, "images", 0)
            else:
                other = FrameSource.open(self.path, backend="opencv", cache_bytes=0)
            try:
                for i in range(start, stop, step):
                    yield i, convert(np.asarray(other._dec.read(i)))
            finally:
                other.close()
            return
        dec = _AvDecoder(Path(self.path), None, threads=2)
        try:
            wanted = set(range(start, stop, step))
            if not wanted:
                return
            if fast:
                cc = dec.stream.codec_context
                # B-frames: no I- or P-frame is predicted from one (x264's pyramid B-frames are referenced by
                # other B-frames only), so dropping them all decodes every other frame correctly.
                cc.skip_frame = "BIDIR"
                cc.options = {"skip_loop_filter": "all"}
            if start > 0:
                dec._seek_ts(int(dec.index.pts[dec._key_at_or_before(start)]))
            fmt = "gray" if gray else "rgb24"
            w, h = size if size is not None else (dec.width, dec.height)
            due = start  # fast: the next sample is the first frame decoded at or after this index
            assert dec._frames is not None  # _AvDecoder opens its decode iterator on creation (and on seeks)
            for frame in dec._frames:
                j = dec._frame_index(frame)
                if j is not None and j >= stop:
                    break
                if j is None or (j < due if fast else j not in wanted):
                    continue
                if fast:
                    due = start + ((j - start) // step + 1) * step
                # libswscale's area filter averages every source pixel: no aliasing when shrinking a screen.
                yield j, frame.reformat(width=w, height=h, format=fmt, interpolation="AREA").to_ndarray()
        except av.FFmpegError as e:
            raise VideoError(self.path, f"decoding failed ({e})") from e
        finally:
            dec.close()

    def close(self) -> None:
        """Stop the prefetch thread, release the decoder and drop the cache. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        with self._req:
            self._stop = True
            self._pending.clear()
            self._req.notify_all()
        if self._worker is not None:
            self._worker.join(timeout=10)
        with self._dec_lock:
            self._dec.close()
        self._cache.clear()

    @property
    def worker_alive(self) -> bool:
        """Whether the prefetch thread is running (tests check that close() stops it)."""
        return self._worker is not None and self._worker.is_alive()

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"FrameSource({self.path!r}, {self.backend}, {self.frame_count} frames, {self.width}x{self.height},"
                f" {self.fps:.3g} fps)")


def _prefetch_loop(ref: weakref.ref[FrameSource], req: threading.Condition) -> None:
    """The prefetch worker. It holds its source only weakly while idle, so a source dropped without close()
    is still freed, and the thread then ends at its next wake-up."""
    while True:
        with req:
            src = ref()
            if src is None or src._stop:
                if src is not None:
                    src._busy = False
                req.notify_all()  # wakes wait_prefetch()
                return
            if not src._pending:
                src._busy = False
                req.notify_all()  # idle: wakes wait_prefetch()
                src = None  # no strong reference while waiting
                req.wait(timeout=1.0)
                continue
            gen = src._gen
            i = src._pending.popleft()
            src._busy = True
        src._decode_job(gen, i)
        src = None


def open_for(traj: Trajectory, **kwargs: Any) -> FrameSource:
    """The frames of a trajectory: its recording when it has one on disk and it can be read, else its step
    screenshots.

    With screenshots, frame ``i`` is step ``i``'s screenshot at 1 frame per second; a step without a screenshot
    shows the nearest earlier one (or the first one), so step and frame indices always agree. A recording that
    cannot be read (corrupt, not a video) falls back to the screenshots when there are any, and the source's
    ``notes`` say so: a damaged recording must not leave the viewer black when the run's screens are on disk.

    Args:
        traj: the trajectory.
        **kwargs: passed to :meth:`FrameSource.open` / :meth:`FrameSource.from_images` (``max_side``,
            ``cache_bytes``).

    Raises:
        VideoError: the trajectory has neither a readable recording nor any screenshot (a recording that cannot
            be read raises its own error then).
    """
    shots = [s.screenshot if s.screenshot and Path(s.screenshot).is_file() else None for s in traj.steps]
    first = next((p for p in shots if p), None)
    broken: VideoError | None = None
    if traj.video is not None and traj.video.path and Path(traj.video.path).exists():
        try:
            return FrameSource.open(traj.video.path, **kwargs)
        except VideoError as exc:
            if first is None:
                raise
            broken = exc
    if first is None:
        where = traj.video.path if traj.video is not None else traj.source_path
        raise VideoError(where, "no recording and no step screenshots to show")
    paths: list[str] = []
    prev = first
    for p in shots:
        prev = p or prev
        paths.append(prev)
    for key in ("backend", "threads", "fps"):
        kwargs.pop(key, None)
    src = FrameSource.from_images(paths, fps=1.0, **kwargs)
    src.path = traj.source_path
    src.per_step = True  # frame i is step i: the Session maps steps to frames by index, not by time
    if broken is not None:
        n = sum(p is not None for p in shots)
        src.notes.append(f"{broken}; showing the {n} step screenshot(s) instead")
    return src


def write_video(path: str | Path, frames: Sequence[np.ndarray], fps: int = 1,
                repeats: Sequence[int] | None = None) -> None:
    """Encode RGB frames as H.264 yuv420p MP4 at ``fps`` (PyAV, libx264).

    Args:
        frames: (H, W, 3) uint8 RGB frames of one size; width and height must be even (yuv420p).
        repeats: how many consecutive video frames show each input frame (a screen recording that holds each
            screen for as long as it was on screen); one each when None.
    """
    from fractions import Fraction

    import av

    h, w = frames[0].shape[:2]
    if h % 2 or w % 2:
        raise VideoError(path, f"frame size {w}x{h} is odd; yuv420p needs even sizes")
    reps = list(repeats) if repeats is not None else [1] * len(frames)
    if len(reps) != len(frames) or any(r < 1 for r in reps):
        raise VideoError(path, "repeats must give every frame at least one video frame")
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height = w, h
        stream.pix_fmt = "yuv420p"
        stream.time_base = Fraction(1, fps)
        # Small files: GUI screens are static, so a long GOP and a moderate CRF cost nothing visible.
        stream.options = {"crf": "26", "preset": "veryfast", "tune": "stillimage", "threads": "1"}
        pts = 0
        for rgb, n in zip(frames, reps, strict=True):
            for _ in range(n):
                vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
                vf.pts = pts
                pts += 1
                for packet in stream.encode(vf):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
