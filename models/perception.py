"""What the judge perceives in a run's keyframes, before it reads the instruction.

For every keyframe (the screen at a step's end) this finds:

* **the pruned tokens** (:mod:`models.pruning`): flat regions and unchanged patches dropped;
* **the pointer**, whatever its theme and size, or that none is drawn (:mod:`models.pointer`);
* **what changed** since the previous keyframe (or the screen before the first step, when the recording has
  it), patch by patch, with the pointer's own movement taken out;
* **the acting point**: where the run's log says the agent acted (a click's coordinates), else the pointer's
  hotspot, else the centre of the largest change, else none;
* **the text**, read in any font (:mod:`models.text`): the first screen whole, then only the lines that appear
  or change (a line unchanged since it was read carries forward: ``t_end``, the last keyframe it is still on
  screen, so the last screen's text is known without reading it again), and the line under the acting point on
  the screen the agent acted on ("acted"). Flat regions are never read; pruning decides what is.

None of it depends on one pointer sprite, font, scale, colour scheme or app layout, and none of it depends on the
instruction, so one perception serves every instruction paired with the run (adversarial rewrites, swaps).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cv2
import numpy as np

from models.evidence import RunEvidence
from models.pointer import PointerDetector, PointerHit
from models.pruning import MaskedTokens, PruneParams, frames_to_patches, prune_patches
from models.text import Box, TextReader, line_boxes

#: Bump when anything here changes what the network is given (checked against the weights at load).
PERCEPTION_VERSION = 2


@dataclass(frozen=True)
class PerceptionConfig:
    """Settings of perception (the shipped values are the defaults; stored with the weights).

    Attributes:
        working_size: long side of the frames the patch grid is cut from (pruning, change, visual tokens).
        patch: patch side in pixels at the working size.
        prune: pruning thresholds.
        change_level: a patch changed when its mean absolute difference exceeds this (0-255 scale).
        pointer_threshold: the detector's peak probability above which a pointer is taken as drawn.
        acted_lines: lines read at the acting point per keyframe.
        changed_lines: changed lines read per keyframe (nearest the acting point first).
        whole_lines: lines read on a screen read whole (the first keyframe; every keyframe unpruned).
        visual_radius: patches within this many rows/columns of the acting point become visual tokens.
        visual_changed: plus this many of the most changed patches per keyframe.
    """

    working_size: int = 512
    patch: int = 16
    prune: PruneParams = field(default_factory=lambda: PruneParams(tau_s=3.0, max_component=16, tau_t=0.9999,
                                                                   protect_change=0.02))
    change_level: float = 6.0
    pointer_threshold: float = 0.5
    acted_lines: int = 2
    changed_lines: int = 8
    whole_lines: int = 80
    visual_radius: int = 1
    visual_changed: int = 4


@dataclass
class ReadLine:
    """A line that was read, and why."""

    box: Box
    text: str
    conf: float
    acted: bool
    changed: bool
    dist: float  # distance to the acting point in line heights (inf when there is none)
    t_end: int = -1  # the last keyframe on which the line is still on screen (its own keyframe is the first)
    by: str = ""  # acted on: "log" (the log's point), "guess" (the pointer or the largest change), "" (not)
    first: bool = False  # read on the first screen, read whole


@dataclass
class FramePercept:
    """One keyframe's perception."""

    height: int
    width: int
    pointer: PointerHit
    pointer_found: bool
    act: tuple[float, float] | None
    act_source: str  # "pointer" | "change" | "none"
    change: float  # share of patches that changed since the previous keyframe (pointer excluded)
    n_lines: int  # text lines found where the screen was read (read or not)
    lines: list[ReadLine] = field(default_factory=list)
    log_act: tuple[float, float] | None = None  # where the log says the agent acted (None: it does not say)


@dataclass
class RunPercept(MaskedTokens):
    """A run's perception: per keyframe, plus pruning and the visual tokens around the acting points.

    Attributes:
        frames: per keyframe.
        masks: ``(T, R, C)`` bool, the tokens pruning kept.
        visual: ``(V, P, P)`` uint8 grey patches at the working size (P = patch) near the acting points.
        visual_pos: ``(V, 3)`` int64 (keyframe, row, col).
        visual_feat: ``(V, 3)`` float32: change of the patch since the previous keyframe (0-1), kept by pruning,
            distance to the acting point in patches (capped at 8).
        timings: seconds per stage.
    """

    frames: list[FramePercept]
    masks: np.ndarray
    visual: np.ndarray
    visual_pos: np.ndarray
    visual_feat: np.ndarray
    timings: dict[str, float] = field(default_factory=dict)
    reads: int = 0  # text crops recognised (cache hits and carried-forward lines not counted)
    evidence: RunEvidence = field(default_factory=RunEvidence)  # the log's, set by the caller (models.features)


def _grey_patches(patches: np.ndarray, p: int) -> np.ndarray:
    """(T, R, C, p*p*3) uint8 RGB patches -> (T, R, C, p, p) uint8 grey."""
    t, r, c, _ = patches.shape
    rgb = patches.reshape(t, r, c, p, p, 3).astype(np.float32)
    return (rgb @ np.array([0.299, 0.587, 0.114], np.float32) + 0.5).astype(np.uint8)


def _pointer_cells(hit: PointerHit, scale: float, p: int, rows: int, cols: int) -> tuple[slice, slice]:
    """Grid cells the pointer image may cover: from a little above-left of the hotspot to below-right."""
    size = 40.0  # pointers are 16-64 px on real screens; the body extends down-right of the hotspot
    x0, y0 = (hit.x - 0.3 * size) * scale / p, (hit.y - 0.3 * size) * scale / p
    x1, y1 = (hit.x + 1.0 * size) * scale / p, (hit.y + 1.4 * size) * scale / p
    return (slice(max(0, int(y0)), min(rows, int(np.ceil(y1)))), slice(max(0, int(x0)), min(cols, int(np.ceil(x1)))))


def _components(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 4-connected components of a bool grid: (labels, stats). Labels run 1..n in the raster order of each
    component's first cell, as ``scipy.ndimage.label`` numbers them (0: background); ``stats[i]`` is component
    ``i``'s (left, top, width, height, cells), OpenCV's ``connectedComponentsWithStats`` columns (row 0 unused)."""
    n, lab, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=4, ltype=cv2.CV_32S)
    found, first = np.unique(lab, return_index=True)
    fg = found > 0
    order = found[fg][np.argsort(first[fg], kind="stable")]  # OpenCV's labels in raster order of first cell
    remap = np.zeros(n, np.int32)
    remap[order] = np.arange(1, len(order) + 1, dtype=np.int32)
    return remap[lab], stats[np.concatenate([[0], order])]


def _dilate4(mask: np.ndarray) -> np.ndarray:
    """A bool grid grown by one cell up, down, left and right (``scipy.ndimage.binary_dilation``'s default)."""
    out = mask.copy()
    out[1:] |= mask[:-1]
    out[:-1] |= mask[1:]
    out[:, 1:] |= mask[:, :-1]
    out[:, :-1] |= mask[:, 1:]
    return out


def _largest_centre(mask: np.ndarray) -> tuple[float, float]:
    """(row, col) centre of mass of the largest 4-connected component of a bool grid (the first in raster order
    of the largest), as ``scipy.ndimage.center_of_mass`` gives it: coordinate sums over the cell count, exact."""
    lab, stats = _components(mask)
    big = int(np.argmax(stats[1:, cv2.CC_STAT_AREA])) + 1
    ys, xs = np.nonzero(lab == big)
    count = float(len(ys))
    return float(ys.sum()) / count, float(xs.sum()) / count


def _regions(changed: np.ndarray, act: tuple[float, float] | None, scale: float, p: int, h: int, w: int
             ) -> list[tuple[int, int, int, int]]:
    """Frame-pixel rectangles (x0, y0, x1, y1) worth looking for text in: each changed area (grown by one patch
    and a text row's height) and a band around the acting point."""
    out: list[tuple[int, int, int, int]] = []
    if changed.any():
        _, stats = _components(_dilate4(changed))
        for x, y, cw, ch, _ in stats[1:].tolist():
            out.append((int(x * p / scale), int(y * p / scale),
                        int(np.ceil((x + cw) * p / scale)), int(np.ceil((y + ch) * p / scale))))
    if act is not None:
        bw, bh = max(160, w // 4), max(48, h // 12)
        out.append((int(act[0] - bw), int(act[1] - bh), int(act[0] + bw), int(act[1] + bh)))
    return [(max(0, x0), max(0, y0), min(w, x1), min(h, y1)) for x0, y0, x1, y1 in out if x1 > x0 and y1 > y0]


def _lines_in(frame: np.ndarray, regions: list[tuple[int, int, int, int]]) -> list[Box]:
    """Text lines inside the regions (found region by region; a line cut by a region's edge is kept whole when
    another region holds the rest, and duplicates are merged)."""
    boxes: list[Box] = []
    for x0, y0, x1, y1 in regions:
        for b in line_boxes(frame[y0:y1, x0:x1]):
            boxes.append(Box(b.x + x0, b.y + y0, b.w, b.h))
    out: list[Box] = []
    for b in sorted(boxes, key=lambda b: -b.w * b.h):
        if not any(_inside(b, o) >= 0.7 for o in out):
            out.append(b)
    return sorted(out, key=lambda b: (b.y, b.x))


def _inside(b: Box, outer: Box) -> float:
    """Share of ``b``'s area inside ``outer``."""
    ix = max(0, min(b.x + b.w, outer.x + outer.w) - max(b.x, outer.x))
    iy = max(0, min(b.y + b.h, outer.y + outer.h) - max(b.y, outer.y))
    return ix * iy / max(1, b.w * b.h)


def _pointer_like(b: Box, hit: PointerHit) -> bool:
    """A small, narrow box touching the pointer's hotspot is the pointer's own outline, not text (an arrow, hand
    or I-beam is at most about 64 px and taller than wide; a word is wider)."""
    return max(b.w, b.h) <= 72 and b.w <= 1.6 * b.h + 6 and b.distance(hit.x, hit.y) <= max(3.0, 0.6 * b.h)


class Perceiver:
    """Runs perception; holds the pointer detector and the text reader (both ONNX, loaded once)."""

    def __init__(self, pointer: PointerDetector, reader: TextReader, cfg: PerceptionConfig | None = None):
        self.pointer = pointer
        self.reader = reader
        self.cfg = cfg or PerceptionConfig()

    def perceive(self, frames: list[np.ndarray], reference: np.ndarray | None = None, prune: bool = True,
                 points: list[tuple[float, float] | None] | None = None, guess: bool = False) -> RunPercept:
        """Perceive keyframes (RGB uint8, one size) with an optional screen from before the first step.

        ``points``: per keyframe, where the run's log says the agent acted (None where it does not say); the text
        under it is read on the screen the agent acted on. Elsewhere the acting point is guessed (the pointer,
        else the largest change); ``guess`` reads there too where the log has a point (training, so that one
        perception serves both the with-log and the video-only example).

        ``prune`` False is the unpruned baseline: every token counts as kept, every keyframe's text is read whole
        and nothing is carried forward or taken from the reader's cache, and every patch near the acting point is
        a visual token.
        """
        cfg, p = self.cfg, self.cfg.patch
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        stack = ([reference] if reference is not None else []) + list(frames)
        patches = frames_to_patches(stack, cfg.working_size, p)  # (T', R, C, p*p*3)
        grey = _grey_patches(patches, p).astype(np.int16)  # (T', R, C, p, p)
        pr = prune_patches(patches[1:] if reference is not None else patches, cfg.prune)
        if not prune:
            pr.masks[:] = True
        _, rows, cols = pr.masks.shape
        # change since the previous keyframe (the reference for the first, when given)
        diff = np.abs(grey[1:] - grey[:-1]).mean(axis=(3, 4))  # (T'-1, R, C)
        if reference is None:
            diff = np.concatenate([np.zeros((1, rows, cols)), diff])
        timings["prune"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        hits = self.pointer.detect(stack)
        ref_hit = hits[0] if reference is not None else None
        hits = hits[1:] if reference is not None else hits
        timings["pointer"] = time.perf_counter() - t0

        h, w = frames[0].shape[:2]
        scale = rows * p / h  # working-size pixels per frame pixel
        t0 = time.perf_counter()
        percepts: list[FramePercept] = []
        changed_grids: list[np.ndarray] = []
        # (keyframe, image the crop is cut from: -1 = reference, crop, acted by, changed, dist, first frame)
        jobs: list[tuple[int, int, Box, str, bool, float, bool]] = []
        job_box: list[Box] = []  # the whole line each job belongs to (the screen state's key)
        n_frames = len(frames)
        for k, frame in enumerate(frames):
            hit = hits[k]
            found = hit.score >= cfg.pointer_threshold
            changed = (diff[k] > cfg.change_level) & pr.masks[k]  # pruning decides what may count
            prev_hit = hits[k - 1] if k > 0 else ref_hit
            for hh in (hit if found else None, prev_hit if prev_hit and prev_hit.score >= cfg.pointer_threshold
                       else None):
                if hh is not None:
                    changed[_pointer_cells(hh, scale, p, rows, cols)] = False
            changed_grids.append(changed)
            act: tuple[float, float] | None = None
            source = "none"
            if found:
                act, source = (hit.x, hit.y), "pointer"
            elif changed.any():
                cy, cx = _largest_centre(changed)
                act, source = ((cx + 0.5) * p / scale, (cy + 0.5) * p / scale), "change"
            log_pt = points[k] if points is not None and k < len(points) else None
            # The screen's text: the first keyframe whole (and every keyframe whole, unpruned); afterwards only
            # the lines that changed, nearest the acting point first. The rest carries forward (``t_end``).
            whole = k == 0 or not prune
            if whole:
                boxes = [b for b in line_boxes(frame, max_lines=cfg.whole_lines)]
            else:
                boxes = _lines_in(frame, _regions(changed, None, scale, p, h, w))
            if found:  # the pointer's own outline is not text
                boxes = [b for b in boxes if not _pointer_like(b, hit)]
            fp = FramePercept(h, w, hit, found, act, source, float(changed.mean()), len(boxes), log_act=log_pt)
            percepts.append(fp)
            anchor = log_pt or act
            if whole:
                for b in boxes:
                    d = b.distance(*anchor) / max(4.0, b.h) if anchor is not None else float("inf")
                    jobs.append((k, k, b, "", k > 0, d, k == 0))
                    job_box.append(b)
            elif changed.any():
                cand = []
                for b in boxes:
                    r0, r1 = int(b.y * scale / p), int((b.y + b.h) * scale / p) + 1
                    c0, c1 = int(b.x * scale / p), int((b.x + b.w) * scale / p) + 1
                    cols_changed = np.nonzero(changed[r0:r1, c0:c1].any(0))[0]
                    if len(cols_changed):
                        d = b.distance(*anchor) / max(4.0, b.h) if anchor is not None else float("inf")
                        # read the changed part of a long line (a file row, a paragraph), with some context
                        x0 = int(max(b.x, (c0 + cols_changed[0]) * p / scale - 3 * b.h))
                        x1 = int(min(b.x + b.w, (c0 + cols_changed[-1] + 1) * p / scale + 3 * b.h))
                        cand.append((d, b.y, b, Box(x0, b.y, max(1, x1 - x0), b.h)))
                for d, _, b, part in sorted(cand, key=lambda t: (t[0], t[1]))[:cfg.changed_lines]:
                    jobs.append((k, k, part, "", True, d, False))
                    job_box.append(b)
            # What the agent acted on: the line under the log's point on the screen it acted on (the keyframe
            # before), else under the pointer or the largest change on this one.
            acting: list[tuple[tuple[float, float], str, int]] = []
            if log_pt is not None:
                before = k - 1 if k > 0 else (-1 if reference is not None else k)
                acting.append((log_pt, "log", before))
            if act is not None and (guess or log_pt is None):
                acting.append((act, "guess", k))
            for pt, by, img in acting:
                src = reference if img < 0 else frames[img]
                assert src is not None
                bw, bh = max(160, w // 4), max(48, h // 12)
                region = (max(0, int(pt[0] - bw)), max(0, int(pt[1] - bh)), min(w, int(pt[0] + bw)),
                          min(h, int(pt[1] + bh)))
                near = sorted(_lines_in(src, [region]), key=lambda b: b.distance(*pt))
                for b in near[:cfg.acted_lines]:
                    if found and img == k and _pointer_like(b, hit):
                        continue
                    d = b.distance(*pt) / max(4.0, b.h)
                    if d <= 1.5:  # a long line is read around the acting point only
                        half = 6 * b.h
                        x0 = int(max(b.x, pt[0] - half))
                        x1 = int(min(b.x + b.w, max(pt[0] + half, x0 + b.h)))
                        jobs.append((k, img, Box(x0, b.y, max(1, x1 - x0), b.h), by, False, d, False))
                        job_box.append(b)
        timings["lines"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        from models.text import crop_line

        def image(i: int) -> np.ndarray:
            im = reference if i < 0 else frames[i]
            assert im is not None
            return im

        before_reads = self.reader.crops_read
        reads = self.reader.read_crops([crop_line(image(img), b) for _, img, b, *_ in jobs], use_cache=prune)
        # the screen state: a line stays on screen until a later keyframe changes a cell under it
        alive: list[tuple[ReadLine, Box]] = []
        by_frame: dict[int, list[tuple[ReadLine, Box]]] = {}
        for (k, img, b, by, chg, d, first), whole_box, (text, conf) in zip(jobs, job_box, reads):
            ln = ReadLine(b, text, conf, bool(by), chg, d, t_end=k, by=by, first=first)
            percepts[k].lines.append(ln)
            if not by:
                by_frame.setdefault(k, []).append((ln, whole_box))
        for k in range(n_frames):
            if prune and k > 0:
                grid = changed_grids[k]
                still = []
                for ln, box in alive:
                    r0, r1 = int(box.y * scale / p), int((box.y + box.h) * scale / p) + 1
                    c0, c1 = int(box.x * scale / p), int((box.x + box.w) * scale / p) + 1
                    if grid[r0:r1, c0:c1].any():
                        ln.t_end = k - 1
                    else:
                        still.append((ln, box))
                alive = still
            elif not prune:
                alive = []
            alive += by_frame.get(k, [])
        for ln, _ in alive:
            ln.t_end = n_frames - 1
        for fp in percepts:
            fp.lines.sort(key=lambda ln: (ln.dist, ln.box.y))
        timings["read"] = time.perf_counter() - t0
        timings_reads = self.reader.crops_read - before_reads

        # visual tokens: patches around the acting point, plus the most changed ones
        t0 = time.perf_counter()
        g = grey[1:] if reference is not None else grey
        vis, pos, feat = [], [], []
        for k, fp in enumerate(percepts):
            cells: dict[tuple[int, int], float] = {}
            if fp.act is not None:
                ar, ac = int(fp.act[1] * scale / p), int(fp.act[0] * scale / p)
                rad = cfg.visual_radius
                for r in range(max(0, ar - rad), min(rows, ar + rad + 1)):
                    for c in range(max(0, ac - rad), min(cols, ac + rad + 1)):
                        cells[(r, c)] = float(max(abs(r - ar), abs(c - ac)))
            if cfg.visual_changed:
                order = np.argsort(-diff[k].ravel() * changed_grids[k].ravel())[:cfg.visual_changed]
                for flat in order:
                    r, c = divmod(int(flat), cols)
                    if changed_grids[k][r, c] and (r, c) not in cells:
                        if fp.act is not None:
                            ar, ac = int(fp.act[1] * scale / p), int(fp.act[0] * scale / p)
                            cells[(r, c)] = float(min(8, max(abs(r - ar), abs(c - ac))))
                        else:
                            cells[(r, c)] = 8.0
            for (r, c), dist in cells.items():
                vis.append(g[k, r, c].astype(np.uint8))
                pos.append((k, r, c))
                feat.append((min(1.0, diff[k, r, c] / 64.0), float(pr.masks[k, r, c]), dist))
        timings["visual"] = time.perf_counter() - t0
        return RunPercept(
            frames=percepts, masks=pr.masks,
            visual=np.stack(vis) if vis else np.zeros((0, p, p), np.uint8),
            visual_pos=np.array(pos, np.int64).reshape(-1, 3),
            visual_feat=np.array(feat, np.float32).reshape(-1, 3),
            timings=timings, reads=timings_reads)
