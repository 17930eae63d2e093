"""Find the mouse pointer on a frame, whatever its theme and size, or say that none is drawn (numpy + ONNX).

The detector (:mod:`models.pointer_net`, trained by :mod:`models.pointer_train` on real Xcursor themes pasted
onto pointer-free screens) gives a heatmap of the hotspot; the peak and its probability are the answer. Screens
taken by pyautogui or a browser driver show no pointer at all, so a low peak is a normal answer, not an error:
the acting point then comes from what changed (:mod:`models.perception`).

Frames are scaled so their long side lies in [``MIN_SIDE``, ``MAX_SIDE``]: a 1920x1080 screen is read at 768 px
(a 24 px pointer stays about 10 px), a 160x210 MiniWoB screen at 384 px.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

MIN_SIDE = 384
MAX_SIDE = 768
STRIDE = 4
#: A change to the input moves the heatmap at most this far (in 8-px blocks of the scaled frame): a one-pixel
#: change moves cells up to 70 px away (the far edge of a 4-px cell; measured at every alignment, and what the
#: layers' receptive field gives), rounded up to blocks. tests/models/test_pointer.py checks that the incremental
#: heatmap equals the whole one.
REACH_BLOCKS = 9
#: Above this share of the frame, the parts to recompute are read as the whole frame instead.
INCREMENTAL_MAX_SHARE = 0.5
#: Bump when the input scaling or the heatmap's meaning changes (checked against the weights at load).
POINTER_FEATURE_VERSION = 1


@dataclass(frozen=True)
class PointerHit:
    """The detector's answer for one frame: the hotspot in frame pixels and the peak's probability."""

    x: float
    y: float
    score: float


def input_scale(height: int, width: int) -> float:
    """Factor applied to a frame of this size before detection."""
    long = max(height, width)
    return float(np.clip(long, MIN_SIDE, MAX_SIDE)) / long


def prepare(frame: np.ndarray) -> tuple[np.ndarray, float]:
    """``frame`` (H, W, 3) uint8 RGB -> ((3, H', W') float32 in [-1, 1], scale); H', W' multiples of 8.

    The scaled frame is padded (edge-replicated) to the next multiple of 8; coordinates map back with ``/ scale``.
    """
    img, s = _scaled(frame)
    return _to_input(img), s


def _to_input(img: np.ndarray) -> np.ndarray:
    return img.astype(np.float32).transpose(2, 0, 1) / 127.5 - 1.0


def _scaled(frame: np.ndarray) -> tuple[np.ndarray, float]:
    """The frame scaled for the detector and padded to multiples of 8 (uint8), and the scale."""
    h, w = frame.shape[:2]
    s = input_scale(h, w)
    nh, nw = max(8, int(round(h * s))), max(8, int(round(w * s)))
    img = cv2.resize(frame, (nw, nh), interpolation=cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR)
    ph, pw = (-nh) % 8, (-nw) % 8
    if ph or pw:
        img = cv2.copyMakeBorder(img, 0, ph, 0, pw, cv2.BORDER_REPLICATE)
    return img, s


def decode(heat: np.ndarray, scale: float) -> PointerHit:
    """Peak of one (H/4, W/4) logit map -> hotspot in frame pixels (sub-cell by a 3x3 weighted mean)."""
    prob = 1.0 / (1.0 + np.exp(-heat.astype(np.float64)))
    r, c = np.unravel_index(int(np.argmax(prob)), prob.shape)
    r0, r1, c0, c1 = max(0, r - 1), min(prob.shape[0], r + 2), max(0, c - 1), min(prob.shape[1], c + 2)
    win = prob[r0:r1, c0:c1]
    rr, cc = np.mgrid[r0:r1, c0:c1]
    wsum = float(win.sum())
    ry, cx = float((rr * win).sum() / wsum), float((cc * win).sum() / wsum)
    return PointerHit(x=(cx + 0.5) * STRIDE / scale, y=(ry + 0.5) * STRIDE / scale, score=float(prob[r, c]))


class PointerDetector:
    """The shipped detector, run with onnxruntime (one session, reused)."""

    def __init__(self, path: str | Path, threads: int = 0):
        import onnxruntime as ort

        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = threads
        self.path = str(path)
        self.session = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])

    def _run(self, x: np.ndarray) -> np.ndarray:
        """Logit maps (N, H/4, W/4) of a batch of inputs (N, 3, H, W)."""
        return self.session.run(None, {"image": np.ascontiguousarray(x)})[0][:, 0]

    def _plan(self, img: np.ndarray, prev: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int, int]]] | None:
        """What to recompute of ``img``'s heatmap given the heatmap of ``prev`` (the screen before, same size): the
        8-px blocks whose cells may change, and the crops (block rows and columns) to run the detector on; None
        when so much changed that running the whole frame is cheaper.

        The detector is fully convolutional (stride 8, receptive field ``REACH_BLOCKS`` blocks of 8 px), so a cell
        whose neighbourhood did not change keeps its value; the cells that may change are recomputed from crops
        holding their whole receptive field, aligned to the blocks. The result equals the whole frame's.
        """
        bh, bw = img.shape[0] // 8, img.shape[1] // 8
        diff = cv2.absdiff(img, prev).reshape(bh, 8, bw * 8 * img.shape[2])  # (numpy's any() is 20x slower)
        changed = (diff.max(axis=1).reshape(bh, bw, -1).max(-1) > 0).astype(np.uint8)
        if not changed.any():
            return changed, []
        kernel = np.ones((2 * REACH_BLOCKS + 1, 2 * REACH_BLOCKS + 1), np.uint8)
        affected = cv2.dilate(changed, kernel)  # the cells whose value may differ
        needed = cv2.dilate(affected, kernel)  # and the input they depend on
        _, _, stats, _ = cv2.connectedComponentsWithStats(needed, connectivity=8)
        rects = [(int(y), int(y + hh), int(x), int(x + ww)) for x, y, ww, hh, _ in stats[1:]]
        if sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in rects) > INCREMENTAL_MAX_SHARE * bh * bw:
            return None
        return affected, rects

    def _update(self, heat: np.ndarray, img: np.ndarray, affected: np.ndarray,
                rects: list[tuple[int, int, int, int]]) -> np.ndarray:
        """``heat`` (the screen before's heatmap) with the cells of :meth:`_plan` recomputed on ``img``."""
        if not rects:
            return heat
        out = heat.copy()
        x = _to_input(img)
        for r0, r1, c0, c1 in rects:
            part = self._run(x[None, :, r0 * 8:r1 * 8, c0 * 8:c1 * 8])[0]
            keep = np.repeat(np.repeat(affected[r0:r1, c0:c1].astype(bool), 2, 0), 2, 1)
            view = out[r0 * 2:r1 * 2, c0 * 2:c1 * 2]
            view[keep] = part[keep]
        return out

    def detect(self, frames: list[np.ndarray], batch: int = 8) -> list[PointerHit]:
        """One :class:`PointerHit` per frame (frames of different sizes are fine; same-size runs are batched).

        A frame of the same size as the one before it (a run's next keyframe) whose change is small is detected
        only around what changed (:meth:`_plan`), with the same answer as detecting it whole; the other frames are
        detected whole, in batches.
        """
        out: list[PointerHit | None] = [None] * len(frames)
        by_shape: dict[tuple[int, ...], list[int]] = {}
        for i, f in enumerate(frames):
            by_shape.setdefault(f.shape, []).append(i)
        for idx in by_shape.values():
            scaled = [_scaled(frames[i]) for i in idx]
            plans = [None] + [self._plan(scaled[j][0], scaled[j - 1][0]) for j in range(1, len(idx))]
            whole = [j for j, plan in enumerate(plans) if plan is None]
            heats: dict[int, np.ndarray] = {}
            for k in range(0, len(whole), batch):
                chunk = whole[k:k + batch]
                for j, h in zip(chunk, self._run(np.stack([_to_input(scaled[j][0]) for j in chunk]))):
                    heats[j] = h
            for j, plan in enumerate(plans):  # in order: each needs the heatmap of the frame before
                if plan is not None:
                    heats[j] = self._update(heats[j - 1], scaled[j][0], *plan)
                out[idx[j]] = decode(heats[j], scaled[j][1])
        return [h for h in out if h is not None]
