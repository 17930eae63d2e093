"""Reading the text on a screen, in any font, size and colour: line proposals plus PP-OCRv6 recognition.

Finding lines is cheap image morphology (strokes of either polarity, long rules removed, characters joined
along the line, then split into rows by their profile): a few milliseconds a frame at any resolution.
Recognition is the PP-OCRv6 small recogniser that ships inside the ``rapidocr`` wheel (ONNX, run here with
onnxruntime; no download). It costs about 0.08 ms of CPU per pixel of line width at its 48 px input height, so
the caller reads only the lines that matter (where the agent acted, what changed) and a cache keyed by the
crop's pixels reads a line once however often it reappears.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

REC_HEIGHT = 48  # the recogniser's input height
TEXT_HEIGHT = 36  # a line is scaled to this height and padded to REC_HEIGHT: a quarter less width to read, and
# as read as at full height on recorded screens (69 of 78 lines read the same, the rest split between better and
# worse; 28 px lost letters)
WIDTH_STEP = 32  # crops are padded to a multiple of this width (and batched by it)
MAX_CROP_WIDTH = 480  # at 36 px high: about 40 characters; longer lines are cut around their middle
#: Bump when line finding or reading changes what the model is given (checked against the weights at load).
TEXT_FEATURE_VERSION = 1


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in frame pixels."""

    x: int
    y: int
    w: int
    h: int

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    def distance(self, px: float, py: float) -> float:
        """Distance from a point to the box (0 inside)."""
        dx = max(self.x - px, 0.0, px - (self.x + self.w))
        dy = max(self.y - py, 0.0, py - (self.y + self.h))
        return float(np.hypot(dx, dy))


@dataclass(frozen=True)
class TextLine:
    """A line read on a frame."""

    box: Box
    text: str
    conf: float


def _rows(mask: np.ndarray) -> list[tuple[int, int]]:
    """Runs of non-empty rows of a boolean box (its text rows)."""
    prof = np.concatenate([[False], mask.any(1), [False]])
    d = np.diff(prof.astype(np.int8))
    return list(zip(np.nonzero(d == 1)[0].tolist(), np.nonzero(d == -1)[0].tolist()))


def line_boxes(frame: np.ndarray, min_h: int = 5, max_h: int = 96, max_lines: int = 400) -> list[Box]:
    """Boxes of the text lines (or words far apart) on an RGB or grey frame, top to bottom.

    Strokes come from the morphological gradient (so dark-on-light and light-on-dark read the same); long
    horizontal and vertical rules (field borders, separators) are removed so they do not glue text to boxes;
    characters are joined by a closing as wide as 0.6 of the median glyph height, words of a row whose gap is under
    their height are joined, and a joined region spanning several rows is split by its row profile.
    """
    g = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY) if frame.ndim == 3 else frame
    grad = cv2.morphologyEx(g, cv2.MORPH_GRADIENT, cv2.getStructuringElement(cv2.MORPH_RECT, (2, 2)))
    bw = (grad > 48).astype(np.uint8)
    rule = max(25, min(g.shape) // 20)
    hl = cv2.morphologyEx(bw, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (rule, 1)))
    vl = cv2.morphologyEx(bw, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, rule)))
    ink = bw & (1 - np.bitwise_or(hl, vl))
    n, _, st, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    hs = st[1:, 3]
    glyph = hs[(hs >= 4) & (hs <= max_h)]
    ch = float(np.median(glyph)) if len(glyph) else 10.0
    kw = max(3, int(round(ch * 0.6)))
    joined = cv2.morphologyEx(ink, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_RECT, (kw, 1)))
    n, lab, st, _ = cv2.connectedComponentsWithStats(joined, connectivity=8)
    boxes: list[Box] = []
    for i in range(1, n):
        x, y, w, h, _a = (int(v) for v in st[i])
        if h < min_h or w < 3:
            continue
        sub = (lab[y:y + h, x:x + w] == i) & (ink[y:y + h, x:x + w] > 0)
        for r0, r1 in _rows(sub):
            hh = r1 - r0
            if hh < min_h or hh > max_h:
                continue
            cols = np.nonzero(sub[r0:r1].any(0))[0]
            bw_ = int(cols[-1] - cols[0] + 1)
            if bw_ * hh < 30:
                continue
            boxes.append(Box(x + int(cols[0]), y + r0, bw_, hh))
    return _join_words(boxes)[:max_lines]


def _join_words(boxes: list[Box]) -> list[Box]:
    """Join boxes of one row whose gap is under their height (word spaces of wide and monospace faces alike;
    a gap between UI columns or controls is wider)."""
    boxes = sorted(boxes, key=lambda b: (b.x, b.y))
    out: list[Box] = []
    for b in boxes:
        for i in range(len(out) - 1, -1, -1):
            a = out[i]
            overlap = min(a.y + a.h, b.y + b.h) - max(a.y, b.y)
            gap = b.x - (a.x + a.w)
            if overlap >= 0.6 * min(a.h, b.h) and -2 <= gap <= max(a.h, b.h) and max(a.h, b.h) <= 1.8 * min(a.h, b.h):
                x0, y0 = min(a.x, b.x), min(a.y, b.y)
                out[i] = Box(x0, y0, max(a.x + a.w, b.x + b.w) - x0, max(a.y + a.h, b.y + b.h) - y0)
                break
        else:
            out.append(b)
    out.sort(key=lambda b: (b.y, b.x))
    return out


def default_model_path() -> Path:
    """The PP-OCRv6 small recogniser inside the installed ``rapidocr`` wheel."""
    import importlib.util

    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the rapidocr package is not installed (it ships the text recogniser)")
    return Path(list(spec.submodule_search_locations)[0]) / "models" / "PP-OCRv6_rec_small.onnx"


def crop_line(frame: np.ndarray, box: Box, pad: int = 2) -> np.ndarray:
    """The line's pixels with a small margin (RGB)."""
    h, w = frame.shape[:2]
    return frame[max(0, box.y - pad):min(h, box.y + box.h + pad), max(0, box.x - pad):min(w, box.x + box.w + pad)]


class TextReader:
    """Recognise text lines with the PP-OCRv6 recogniser; cached by crop content (LRU)."""

    def __init__(self, model_path: str | Path | None = None, threads: int = 0, cache_size: int = 8192):
        import onnxruntime as ort

        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = threads
        so.log_severity_level = 3
        so.enable_cpu_mem_arena = False  # crops of many widths: an arena keeps the largest batch's memory for good
        self.path = str(model_path or default_model_path())
        self.session = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])
        meta = self.session.get_modelmeta().custom_metadata_map
        self.chars = meta["character"].splitlines() + [" "]  # PaddleOCR appends the space class
        self._input = self.session.get_inputs()[0].name
        self._cache: OrderedDict[bytes, tuple[str, float]] = OrderedDict()
        self._cache_size = cache_size
        self.crops_read = 0

    @staticmethod
    def _key(crop: np.ndarray) -> bytes:
        return hashlib.blake2b(np.ascontiguousarray(crop).tobytes() + bytes(str(crop.shape), "ascii"),
                               digest_size=16).digest()

    def _prep(self, crop: np.ndarray) -> tuple[np.ndarray, int]:
        """The recogniser's input for one crop, and the width of the line in it (the rest is padding)."""
        h, w = crop.shape[:2]
        nw = int(np.ceil(TEXT_HEIGHT * w / max(1, h)))
        if nw > MAX_CROP_WIDTH:  # keep the middle of an over-long line
            keep = int(w * MAX_CROP_WIDTH / nw)
            x0 = (w - keep) // 2
            crop, w, nw = crop[:, x0:x0 + keep], keep, MAX_CROP_WIDTH
        nw = max(8, nw)
        interp = cv2.INTER_AREA if TEXT_HEIGHT < h else cv2.INTER_LINEAR
        line = cv2.resize(crop, (nw, TEXT_HEIGHT), interpolation=interp)[..., ::-1]  # BGR, as the model was trained
        # Pad to the model's height, and to the next multiple of WIDTH_STEP, with the line's own background (the
        # median of its top and bottom rows). The recogniser attends along the whole line, so padding changes what
        # it reads: each crop is padded on its own and batched only with crops of its padded width, so a line
        # reads the same whatever else is read with it (the same run scores the same alone, in a batch, on Ray).
        width = -(-nw // WIDTH_STEP) * WIDTH_STEP
        img = np.empty((REC_HEIGHT, width, 3), np.uint8)
        img[:] = np.median(np.concatenate([line[0], line[-1]]), axis=0).astype(np.uint8)
        top = (REC_HEIGHT - TEXT_HEIGHT) // 2
        img[top:top + TEXT_HEIGHT, :nw] = line
        return (img.astype(np.float32) / 127.5 - 1.0).transpose(2, 0, 1), nw  # (3, 48, width)

    def _decode(self, probs: np.ndarray, width: int) -> tuple[str, float]:
        steps = max(1, int(np.ceil(width / 8)))  # the recogniser's output stride along the line
        ids = probs[:steps].argmax(-1)
        conf = probs[:steps].max(-1)
        out, confs, prev = [], [], -1
        for i, c in zip(ids.tolist(), conf.tolist()):
            if i != prev and i != 0 and i - 1 < len(self.chars):
                out.append(self.chars[i - 1])
                confs.append(c)
            prev = i
        return "".join(out).strip(), float(np.mean(confs)) if confs else 0.0

    def read_crops(self, crops: list[np.ndarray], batch_pixels: int = 6 * 320, use_cache: bool = True
                   ) -> list[tuple[str, float]]:
        """(text, confidence) per RGB crop. Crops of similar width are batched; seen crops come from the cache
        (``use_cache`` False: every crop is read, the unpruned baseline's cost)."""
        out: list[tuple[str, float] | None] = [None] * len(crops)
        todo: list[tuple[int, bytes, np.ndarray, int]] = []
        for i, c in enumerate(crops):
            if c.size == 0 or min(c.shape[:2]) < 3:
                out[i] = ("", 0.0)
                continue
            k = self._key(c)
            hit = self._cache.get(k) if use_cache else None
            if hit is not None:
                self._cache.move_to_end(k)
                out[i] = hit
            else:
                todo.append((i, k, *self._prep(c)))
        todo.sort(key=lambda t: t[2].shape[2])
        start = 0
        while start < len(todo):
            width = todo[start][2].shape[2]
            end = start + 1
            # a batch holds crops of one padded width, at most ``batch_pixels`` of width in all
            while end < len(todo) and todo[end][2].shape[2] == width and width * (end - start + 1) <= max(
                    batch_pixels, width):
                end += 1
            chunk = todo[start:end]
            x = np.stack([arr for _, _, arr, _ in chunk])
            probs = self.session.run(None, {self._input: x})[0]
            for j, (i, k, _, nw) in enumerate(chunk):
                res = self._decode(probs[j], nw)
                out[i] = res
                self._cache[k] = res
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            self.crops_read += len(chunk)
            start = end
        return [r if r is not None else ("", 0.0) for r in out]

    def read(self, frame: np.ndarray, boxes: list[Box]) -> list[TextLine]:
        """Read ``boxes`` on ``frame`` (RGB)."""
        res = self.read_crops([crop_line(frame, b) for b in boxes])
        return [TextLine(b, t, c) for b, (t, c) in zip(boxes, res)]
