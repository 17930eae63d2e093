"""From a trajectory to the network's inputs: keyframes, perception, then features against the instruction.

The one path shared by training (perception cache), evaluation and the runtime, so the model sees at inference
exactly what it was trained on. Numpy only (no torch): the ONNX runtime uses it.

1. :func:`load_keyframes`: one frame per step end (at most ``max_frames``, uniformly subsampled). A run whose
   steps all have screenshots is read from them (OSWorld, ATIF, AgentNet and native runs then agree); a
   recording-only run is read from its video at each step's end, plus the screen at the first step's start.
2. :class:`models.perception.Perceiver`: pruning, pointer, changes, acting points, the text that matters.
3. :func:`make_example`: the instruction's words and terms, and every read line matched against every term
   (:mod:`models.terms`), as arrays (shapes below).
"""

from __future__ import annotations

import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from rapidfuzz import fuzz

from gui_app.core.errors import VideoError
from gui_app.core.media.images import read_image
from gui_app.core.trajectory.model import Trajectory
from models import hashing
from models.evidence import HABITS, KINDS, Contradiction, RunEvidence, contradiction, from_trajectory
from models.perception import FramePercept, Perceiver, RunPercept
from models.terms import TERM_KINDS, Match, instruction_overlap, instruction_terms, match

#: Bump when the features change meaning (checked against the weights at load).
FEATURE_VERSION = 4
MAX_WORDS = 40
MAX_LINES = 120
IDS_PER_TEXT = 24
TERM_FEATS = 27
RUN_FEATS = 41
LINE_FEATS = 22
FRAME_FEATS = 34
VIS_FEATS = 5
IDLE_CHANGE = 0.002  # a keyframe changing less than this share of patches shows nothing new
HIGH = 0.9  # a match score that names the term (one typo in ten characters)


def keyframe_steps(n_steps: int, max_frames: int) -> list[int]:
    """Step indices that get a keyframe: every step, or ``max_frames`` uniformly spread (first and last kept)."""
    if n_steps <= max_frames:
        return list(range(n_steps))
    return sorted({int(round(x)) for x in np.linspace(0, n_steps - 1, max_frames)})


def _relocated(path: str | None, root: Path, subdirs: tuple[str, ...]) -> str | None:
    """``path`` if it exists, else a file of the same name in the trajectory folder (or a subfolder)."""
    if not path or Path(path).exists():
        return path
    for sub in subdirs:
        cand = root / sub / Path(path).name
        if cand.is_file():
            return str(cand)
    return path


def repair_media(traj: Trajectory) -> Trajectory:
    """``traj`` with media paths that do not resolve pointed at same-named files inside its folder: a copy.

    A trajectory folder that was moved or renamed after saving still holds its ``video.mp4`` and ``frames/``;
    this finds them instead of failing. ``traj`` itself is left as it is: the app scores the trajectory it shows
    from a worker thread, and a worker must not change what the views are reading.
    """
    root = traj.root
    video, warnings = traj.video, list(traj.warnings)
    if video is not None:
        fixed = _relocated(video.path, root, (".",))
        if fixed is not None and fixed != video.path:
            warnings.append(f"video {video.path} not found; using {fixed}")
            video = replace(video, path=fixed)
    steps = [s if (shot := _relocated(s.screenshot, root, ("frames", "."))) == s.screenshot
             else replace(s, screenshot=shot) for s in traj.steps]
    return replace(traj, video=video, steps=steps, warnings=warnings)


@dataclass
class Keyframes:
    """The frames a run is judged on.

    Attributes:
        frames: RGB uint8, one per selected step, all one size.
        steps: the step index of each frame.
        reference: the screen before the first step (video sources only), or None.
        source: ``screenshots`` or ``video``.
    """

    frames: list[np.ndarray]
    steps: list[int]
    reference: np.ndarray | None
    source: str


def _read_rgb(path: str) -> np.ndarray | None:
    try:
        return read_image(path)  # measured from its header first: a 1.2 MB PNG may declare 1.2 GB of pixels
    except VideoError:
        return None


def _same_size(frames: list[np.ndarray]) -> list[np.ndarray]:
    h, w = frames[0].shape[:2]
    return [f if f.shape[:2] == (h, w) else cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA) for f in frames]


def load_keyframes(traj: Trajectory, max_frames: int) -> Keyframes:
    """See the module docstring (media paths are repaired on a copy first: :func:`repair_media`).

    Raises:
        VideoError: no steps, or neither screenshots for every step nor a readable recording.
    """
    traj = repair_media(traj)
    if traj.n_steps == 0:
        raise VideoError(traj.source_path, "trajectory has no steps to score")
    shot_steps = [s.index for s in traj.steps if s.screenshot and Path(s.screenshot).is_file()]
    has_video = traj.video is not None and bool(traj.video.path) and Path(traj.video.path).is_file()
    # Screenshots when every step has one, or when there is no recording: formats that keep screenshots only for
    # the agent's steps (ATIF's user and system steps have none) are judged on those steps.
    if shot_steps and (len(shot_steps) == traj.n_steps or not has_video):
        chosen = [shot_steps[i] for i in keyframe_steps(len(shot_steps), max_frames)]
        paths = [str(traj.steps[k].screenshot) for k in chosen]
        if len(paths) >= 8:  # decoding releases the GIL: two threads halve the PNG time of a long desktop run
            with ThreadPoolExecutor(max_workers=2) as pool:
                frames = list(pool.map(_read_rgb, paths))
        else:
            frames = [_read_rgb(p) for p in paths]
        if all(f is not None for f in frames):
            return Keyframes(_same_size([f for f in frames if f is not None]), chosen, None, "screenshots")
    steps = keyframe_steps(traj.n_steps, max_frames)
    from gui_app.core.trajectory.timeline import Timeline
    from gui_app.core.media.video import FrameSource

    if not has_video or traj.video is None:
        raise VideoError(traj.source_path, "no readable screenshots and no readable recording")
    src = FrameSource.open(traj.video.path, cache_bytes=64 * 2**20)
    try:
        tl = Timeline(traj, src)
        ends = tl.end_frames(steps)  # the frame on screen at each step's end
        ref_i = tl.start_frames[0] if tl.start_frames else 0
        vframes = [np.array(src.frame(i)) for i in ends]
        reference = np.array(src.frame(ref_i)) if ref_i < ends[0] else None
    finally:
        src.close()
    return Keyframes(vframes, steps, reference, "video")


def perceive_run(perceiver: Perceiver, traj: Trajectory, kf: Keyframes, prune: bool = True, guess: bool = False,
                 use_log: bool = True) -> RunPercept:
    """Perception of a run's keyframes with its log's evidence (``use_log`` False: as a plain recording)."""
    h, w = kf.frames[0].shape[:2]
    ev = from_trajectory(traj, kf.steps, w, h) if use_log else RunEvidence()
    points = [a.point for a in ev.actions] if ev.actions is not None else None
    percept = perceiver.perceive(kf.frames, kf.reference, prune=prune, points=points, guess=guess)
    percept.evidence = ev
    return percept


@dataclass
class Example:
    """One run's network input before batching (T keyframes, M terms, N lines, V visual tokens, L words).

    Attributes:
        word_ids: ``(L, G)`` int64 instruction words (hashed ids, 0 = padding).
        term_ids: ``(M, G)`` int64 terms; ``term_feat`` ``(M, TERM_FEATS)`` float32 (see :func:`term_features`).
        line_ids: ``(N, G)`` int64 read lines; ``line_feat`` ``(N, LINE_FEATS)``; ``line_t`` ``(N,)`` keyframe.
        frame_feat: ``(T, FRAME_FEATS)`` float32.
        vis: ``(V, P*P)`` float32 grey patches, standardised per patch; ``vis_feat`` ``(V, VIS_FEATS)``;
            ``vis_t`` ``(V,)`` keyframe.
        run_feat: ``(RUN_FEATS,)`` float32: how well the run covers the instruction's terms, as a whole
            (:func:`run_features`).
        keyframe_steps: the step of each keyframe.
        masks: ``(T, R, C)`` bool pruning masks (for the app's overlay).
        summary: run-level numbers for the out-of-distribution measure (see :func:`summary`).
    """

    word_ids: np.ndarray
    term_ids: np.ndarray
    term_feat: np.ndarray
    line_ids: np.ndarray
    line_feat: np.ndarray
    line_t: np.ndarray
    frame_feat: np.ndarray
    vis: np.ndarray
    vis_feat: np.ndarray
    vis_t: np.ndarray
    run_feat: np.ndarray
    keyframe_steps: list[int] = field(default_factory=list)
    masks: np.ndarray | None = None
    tokens_total: int = 0
    tokens_kept: int = 0
    summary: np.ndarray | None = None
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # the pieces used (models.evidence.PIECES)
    reads: int = 0  # text crops recognised
    harm: Any = None  # the harm judge's cue rows (models.harm.HarmInput), when the model has a harm judge
    contradiction: Contradiction | None = None  # the first logged action that contradicts the instruction
    early_stop: int = -1  # the keyframe of a DONE claim made right after an act that did what was asked (-1: none)
    acts: list[int] = field(default_factory=list)  # keyframes where the log says the agent acted on the task
    claim_frame: int = -1  # the keyframe of the first DONE claim after the last act (-1: none, or no log)

    @property
    def n_frames(self) -> int:
        return int(len(self.frame_feat))


def _ids_matrix(rows: list[list[int]], width: int) -> np.ndarray:
    out = np.zeros((len(rows), width), np.int64)
    for i, r in enumerate(rows):
        out[i, :min(width, len(r))] = r[:width]
    return out


def _standardise(patches: np.ndarray) -> np.ndarray:
    """(V, P, P) uint8 -> (V, P*P) float32, zero mean and unit spread per patch (flat patches stay 0)."""
    x = patches.reshape(len(patches), -1).astype(np.float32)
    x -= x.mean(axis=1, keepdims=True)
    sd = x.std(axis=1, keepdims=True)
    return x / np.maximum(sd, 8.0)


def _acted(ln, logged: bool) -> bool:
    """Whether a read line counts as what the agent acted on: under the log's point where the log gives one
    (``logged``), else under the guessed point (video-only: always the guessed one)."""
    return ln.by == ("log" if logged else "guess")


def make_example(percept: RunPercept, instruction: str, keyframe_steps_: list[int] | None = None,
                 n_frames: int | None = None, use_log: bool = True) -> Example:
    """Features of a perceived run against an instruction; ``n_frames`` keeps only the first keyframes (a
    truncated run is a prefix of its original's perception); ``use_log`` False judges it as a plain recording
    (the log's actions, points and claims are left out)."""
    frames = percept.frames if n_frames is None else percept.frames[:n_frames]
    t_count = len(frames)
    last = t_count - 1
    ev = percept.evidence if use_log else RunEvidence()
    actions = (ev.actions or [])[:t_count] if ev.actions is not None else None
    if n_frames is not None and actions is not None:  # a truncated run makes no claim of its own
        ev = RunEvidence(actions, None, "")
    terms = instruction_terms(instruction)
    words = hashing.words(instruction)[:MAX_WORDS]
    word_ids = _ids_matrix([hashing.word_ids(w) for w in words] or [[0]], hashing.IDS_PER_WORD)

    # The run's end is its last keyframe that is not idle: a hover, a wait or a claim that changes nothing on the
    # screen is an agent's habit, not evidence (one agent ends on DONE and WAIT steps, another on its last click).
    idle = [fp.change < IDLE_CHANGE and not (actions is not None and k < len(actions)
                                             and set(actions[k].kinds) - HABITS) for k, fp in enumerate(frames)]
    active = [k for k in range(t_count) if not idle[k]] or [last]
    end = active[-1]
    # where the log gives an acting point (a click, not a hover); a cached perception read at both
    logged = [actions is not None and k < len(actions) and actions[k].point is not None for k in range(t_count)]
    lines = [(k, ln) for k, fp in enumerate(frames) for ln in fp.lines
             if ln.text and (not ln.by or _acted(ln, logged[k]))]
    if len(lines) > MAX_LINES:  # keep the acted ones, what is on the last screen, and the latest frames' lines
        lines.sort(key=lambda kl: (not kl[1].by, kl[1].t_end < last, -kl[0], kl[1].dist))
        lines = sorted(lines[:MAX_LINES], key=lambda kl: (kl[0], kl[1].dist))
    m = [[match(t.text, ln.text) for t in terms] for _, ln in lines]  # (N, M)
    at_end = [ln.t_end >= last and not ln.by for _, ln in lines]
    typed = [a.typed for a in actions] if actions is not None else []
    tm = [[match(t.text, ty) if ty else None for t in terms] for ty in typed]  # (T, M)
    answer_m = [match(t.text, ev.answer) for t in terms] if ev.answer else None

    term_feat = np.zeros((len(terms), TERM_FEATS), np.float32)
    for j, t in enumerate(terms):
        f = term_feat[j]
        f[TERM_KINDS.index(t.kind)] = 1.0
        f[3] = t.order
        f[17] = min(len(t.text), 20) / 20.0
        first = None
        acted_frames = set()
        for i, (k, ln) in enumerate(lines):
            mm = m[i][j]
            if ln.by:
                f[4] = max(f[4], mm.score)
                f[5] = max(f[5], float(mm.exact))
                f[6] = max(f[6], float(mm.exact_case))
                if ln.by == "log":
                    f[22] = max(f[22], mm.score)
                if mm.score >= HIGH:
                    acted_frames.add(k)
                    first = k if first is None else min(first, k)
            if ln.changed:
                f[7] = max(f[7], mm.score)
                f[8] = max(f[8], float(mm.exact))
                f[9] = max(f[9], float(mm.exact_case))
            if at_end[i]:
                f[10] = max(f[10], mm.score)
                f[11] = max(f[11], float(mm.exact))
            if ln.first:
                f[25] = max(f[25], mm.score)
            f[15] = max(f[15], mm.score)
            if mm.exact:
                f[16] = max(f[16], mm.covers)
        for k, row in enumerate(tm):
            tmm = row[j]
            if tmm is None:
                continue
            f[18] = max(f[18], tmm.score)
            f[19] = max(f[19], float(tmm.exact))
            f[20] = max(f[20], float(tmm.exact_case))
            if tmm.score >= HIGH and f[21] == 0:
                f[21] = (k + 1) / max(1, t_count)
        if first is not None:
            f[12], f[13] = 1.0, first / max(1, last)
        f[14] = len(acted_frames) / max(1, t_count)
        if answer_m is not None:
            f[26] = answer_m[j].score

    line_feat = np.zeros((len(lines), LINE_FEATS), np.float32)
    for i, (k, ln) in enumerate(lines):
        fp = frames[k]
        f = line_feat[i]
        scores = sorted((mm.score for mm in m[i]), reverse=True) + [0.0, 0.0]
        best = max(m[i], key=lambda mm: mm.score) if m[i] else Match(0.0, False, False, 0.0)
        f[0], f[1] = float(bool(ln.by)), float(ln.changed)
        finite = math.isfinite(ln.dist)
        f[2], f[3] = (min(ln.dist, 5.0) / 5.0 if finite else 1.0), float(finite)
        f[4], f[5] = ln.conf, min(len(ln.text), 30) / 30.0
        f[6] = instruction_overlap(instruction, ln.text)
        f[7], f[8], f[9], f[10], f[11] = scores[0], float(best.exact), float(best.exact_case), best.covers, scores[1]
        f[12], f[13] = float(k == end), k / max(1, last)
        f[14], f[15] = ln.box.cx / fp.width, ln.box.cy / fp.height
        f[16], f[17] = ln.box.w / fp.width, ln.box.h / fp.height
        f[18], f[19], f[20] = float(ln.by == "log"), float(ln.first), float(at_end[i])
        f[21] = (min(ln.t_end, last) - k + 1) / max(1, t_count)

    frame_feat = np.zeros((t_count, FRAME_FEATS), np.float32)
    for k, fp in enumerate(frames):
        f = frame_feat[k]
        f[0], f[1], f[2] = k / max(1, last), float(k == end), float(k == 0)
        f[3], f[4] = fp.pointer.score, float(fp.pointer_found)
        if logged[k]:
            f[17] = 1.0
        else:
            f[5 + ("pointer", "change", "none").index(fp.act_source)] = 1.0
        f[8] = fp.change
        f[9] = math.log1p(fp.n_lines) / 5.0
        f[10] = min(sum(1 for kk, _ in lines if kk == k), 8) / 8.0
        if k > 0 and fp.pointer_found and frames[k - 1].pointer_found:
            moved = math.hypot(fp.pointer.x - frames[k - 1].pointer.x, fp.pointer.y - frames[k - 1].pointer.y)
            f[11] = min(1.0, moved / math.hypot(fp.width, fp.height) * 4)
        idx = [i for i, (kk, _) in enumerate(lines) if kk == k]
        if idx and terms:
            f[12] = max(mm.score for i in idx for mm in m[i])
            f[13] = max((mm.score for i in idx if lines[i][1].by for mm in m[i]), default=0.0)
            f[14] = float(any(mm.exact for i in idx for mm in m[i]))
        f[15], f[16] = math.log(fp.height) / 8.0, math.log(fp.width) / 8.0
        if actions is not None and k < len(actions):
            a = actions[k]
            f[18] = 1.0
            for kind in set(a.kinds) - HABITS:
                f[19 + KINDS.index(kind)] = 1.0
            if a.typed:
                f[29] = 1.0
                typed_m = [x for x in tm[k] if x is not None]
                f[30] = max((x.score for x in typed_m), default=0.0)
                f[31] = float(any(x.exact for x in typed_m))
                f[32] = float(any(x.exact_case for x in typed_m))
            f[33] = float(bool(a.keys))

    sel = percept.visual_pos[:, 0] < t_count
    vis = _standardise(percept.visual[sel]) if sel.any() else np.zeros((0, percept.visual.shape[-1] ** 2), np.float32)
    vt = percept.visual_pos[sel, 0]
    vfeat = np.zeros((len(vt), VIS_FEATS), np.float32)
    if len(vt):
        vfeat[:, :2] = percept.visual_feat[sel, :2]
        vfeat[:, 2] = percept.visual_feat[sel, 2] / 8.0
        vfeat[:, 3] = vt / max(1, last)
        vfeat[:, 4] = (vt == last)
    masks = percept.masks[:t_count]
    ex = Example(
        word_ids=word_ids,
        term_ids=_ids_matrix([hashing.bag_ids(t.text, IDS_PER_TEXT) for t in terms], IDS_PER_TEXT)
        if terms else np.zeros((0, IDS_PER_TEXT), np.int64),
        term_feat=term_feat,
        line_ids=_ids_matrix([hashing.bag_ids(ln.text, IDS_PER_TEXT) for _, ln in lines], IDS_PER_TEXT)
        if lines else np.zeros((0, IDS_PER_TEXT), np.int64),
        line_feat=line_feat, line_t=np.array([k for k, _ in lines], np.int64),
        frame_feat=frame_feat, vis=vis, vis_feat=vfeat, vis_t=vt.astype(np.int64),
        run_feat=run_features(terms, term_feat, line_feat, frame_feat, ev, actions, _ending(lines, m, terms, actions),
                              end=end, n_active=len(active),
                              acts=_acts(instruction, lines, actions)),
        keyframe_steps=list(keyframe_steps_[:t_count]) if keyframe_steps_ else list(range(t_count)),
        masks=masks, tokens_total=int(masks.size), tokens_kept=int(masks.sum()),
        timings=dict(percept.timings), evidence=ev.pieces, reads=percept.reads)
    ex.contradiction = contradiction(instruction, actions)
    if actions:  # habits (hovers, waits, claims) are not acts on the task
        ex.acts = [k for k in range(min(t_count, len(actions))) if set(actions[k].kinds) - HABITS]
        ex.claim_frame = next((k for k in range(ex.acts[-1] + 1 if ex.acts else 0, min(t_count, len(actions)))
                         if "done" in actions[k].kinds), -1)
    # The agent claimed DONE after its last act (only habits between), and that act clicked or typed what the
    # instruction names: if the run failed, it stopped too early, and the claim is where it deviated.
    if actions and last > end and "done" in actions[last].kinds and (
            frame_feat[end, 13] >= HIGH or frame_feat[end, 31] > 0):
        ex.early_stop = last
    ex.summary = summary(ex, frames, terms_count=len(terms))
    return ex


def _ending(lines: list, m: list, terms: list, actions: list | None) -> np.ndarray:
    """How the run ends and in what order it typed: the last action's kind, what the last logged click was on
    (best match to any term, to a non-quoted term such as "Submit"), whether the instruction's values were typed in
    the order it names them, and how many distinct values were typed per quoted term."""
    f = np.zeros(10, np.float32)
    if actions:
        kinds = [k for a in actions for k in a.kinds if k not in HABITS]
        last = kinds[-1] if kinds else "other"
        slot = {"click": 0, "type": 1, "key": 2, "done": 3}.get(last, 4)
        f[slot] = 1.0
    logged = [i for i, (_, ln) in enumerate(lines) if ln.by == "log"]
    if logged and terms:
        i = logged[-1]
        f[5] = max(mm.score for mm in m[i])
        plain = [j for j, t in enumerate(terms) if t.kind != "quoted"]
        f[6] = max((m[i][j].score for j in plain), default=0.0)
    quoted = [t for t in terms if t.kind == "quoted"]
    if actions and quoted:
        typed = [a.typed for a in actions if a.typed]
        firsts = []
        for t in quoted:
            hit = next((n for n, ty in enumerate(typed) if match(t.text, ty).score >= HIGH), None)
            if hit is not None:
                firsts.append(hit)
        if len(firsts) >= 2:
            f[7] = float(all(a <= b for a, b in zip(firsts, firsts[1:])))
        f[8] = float(len(firsts) == len(quoted))
        f[9] = min(len(set(typed)), 8) / max(1, len(quoted)) / 2.0
    return f


_SAVE_ASKED = re.compile(r"\bsave(d)?\b", re.I)
_SAVE_KEYS = re.compile(r"ctrl\+(shift\+)?s", re.I)  # one press, whole
_SAVE_CLICKED = re.compile(r"^\s*(save|keep current format|use .*format)\b", re.I)
# keys that move, confirm or cancel rather than change what the document holds
_NAV_KEY = re.compile(r"^(enter|return|tab|shift\+tab|esc|escape|up|down|left|right|home|end|pageup|pagedown|"
                      r"ctrl\+(home|end|l|a|c|f|h)|alt\+tab|f\d+)$", re.I)


_VALUE = re.compile(r"\"([^\"]{3,})\"|'([^']{3,})'|(\S*\d\S*|\S+@\S+)")


def _values(instruction: str) -> list[str]:
    """The instruction's values, as typed: quoted text and tokens with a digit or an @ (numbers, times, codes,
    addresses), at least 3 characters, lower case, without spaces or trailing punctuation."""
    out = []
    for m in _VALUE.finditer(instruction):
        v = "".join((m.group(1) or m.group(2) or m.group(3) or "").split()).lower().strip(".,;:!?()")
        if len(v) >= 3 and v not in out:
            out.append(v)
    return out


def _acts(instruction: str, lines: list, actions: list | None) -> np.ndarray:
    """What the log's acts say beyond coverage: whether the instruction asks to save and whether the run saved
    after its last edit (a save key, or a click on Save / Keep Current Format), whether one of the instruction's
    values was typed nearly but never exactly (a typo, a digit off), and the share typed exactly. All typed text is
    read as one string without spaces, so a value typed in bursts reads whole. Zero without a log (a plain
    recording says nothing of keys)."""
    f = np.zeros(4, np.float32)
    f[0] = float(bool(_SAVE_ASKED.search(instruction)))
    if not actions:
        return f
    last_edit, last_save = -1, -1
    clicked_save = {k for k, ln in lines if ln.by == "log" and _SAVE_CLICKED.search(ln.text or "")}
    for k, a in enumerate(actions):
        saves = [bool(_SAVE_KEYS.fullmatch(p)) for p in a.keys.split()]
        if any(saves) or k in clicked_save:
            last_save = k
        if a.typed or any(not s and not _NAV_KEY.match(p) for p, s in zip(a.keys.split(), saves)):
            last_edit = k
    if last_save >= 0:
        f[1] = 1.0 if last_save >= last_edit else 0.5
    values = _values(instruction)
    typed = "".join("".join(a.typed for a in actions).split()).lower()
    if values and typed:
        exact = [v in typed for v in values]
        f[3] = sum(exact) / len(values)
        f[2] = float(any(not e and fuzz.partial_ratio(v, typed) >= 80 for v, e in zip(values, exact)))
    return f


def run_features(terms: list, term_feat: np.ndarray, line_feat: np.ndarray, frame_feat: np.ndarray,
                 ev: RunEvidence | None = None, actions: list | None = None, ending: np.ndarray | None = None,
                 end: int = -1, n_active: int | None = None, acts: np.ndarray | None = None) -> np.ndarray:
    """Run-level coverage of the instruction, the same reading for every task.

    Whether every thing the instruction names was acted on or typed (the quoted terms when it has some), whether
    it was exact, whether the acted text names anything at all, what is on the last screen, how the run ends and
    what the agent claims (never proof). A small MLP over these carries the verdict to task types never seen (the
    transformer adds what they miss).
    """
    f = np.zeros(RUN_FEATS, np.float32)
    ev = ev or RunEvidence()
    if len(terms):
        quoted = np.array([t.kind == "quoted" for t in terms])
        sel = quoted if quoted.any() else np.array([t.kind != "word" for t in terms])
        sel = sel if sel.any() else np.ones(len(terms), bool)
        done = np.maximum.reduce([term_feat[sel, 4], term_feat[sel, 7], term_feat[sel, 18]])  # acted/changed/typed
        exact = np.maximum.reduce([term_feat[sel, 5], term_feat[sel, 8], term_feat[sel, 11], term_feat[sel, 19]])
        f[0], f[1], f[2] = done.min(), done.mean(), exact.mean()
        f[3] = np.maximum(np.maximum(term_feat[sel, 6], term_feat[sel, 9]), term_feat[sel, 20]).min()  # same case
        f[4] = term_feat[:, 4].max()
        f[5] = (term_feat[sel, 15] < 0.6).mean()  # named but never seen
        f[6] = term_feat[sel, 10].max()  # on the last screen
        f[7] = float(quoted.sum()) / 4.0
        f[8] = len(terms) / 16.0
        f[14] = term_feat[sel, 18].min()  # typed, the worst-covered term
        f[15] = term_feat[sel, 18].mean()
        f[16] = term_feat[sel, 22].min()  # clicked where the log says, the worst-covered term
        f[17] = term_feat[sel, 22].mean()
        f[18] = term_feat[sel, 10].min()  # on the last screen, the worst-covered term
        f[19] = (term_feat[sel, 10] - term_feat[sel, 25]).mean()  # appeared since the first screen
        f[20] = term_feat[sel, 26].max()  # the answer names it
    acted = line_feat[:, 0] > 0
    if acted.any():
        f[9] = (line_feat[acted, 7] < 0.6).mean()  # acted on text that names nothing in the instruction
    if len(frame_feat):
        f[10] = frame_feat[:, 4].mean()  # pointer found
        f[11] = np.log1p(len(frame_feat) if n_active is None else n_active) / 4.0  # keyframes that are not idle
        f[12] = frame_feat[end, 13]  # best acted match on the run's last keyframe that is not idle
        f[13] = frame_feat[:, 8].mean()  # screen change per step
        typed_frames = frame_feat[:, 29] > 0
        if typed_frames.any():
            f[21] = (frame_feat[typed_frames, 30] < HIGH).mean()  # typed text the instruction does not name
    if actions is not None:
        f[22] = 1.0
        f[23] = float(any(a.point is not None for a in actions))
    # f[24], f[25] (the agent's DONE / FAIL claims) stay 0: model v3's training agent never claims (HABITS)
    f[26] = float(bool(ev.answer))
    if ending is not None:
        f[27:37] = ending
    if acts is not None:
        f[37:41] = acts
    return f


def summary(ex: Example, frames: list[FramePercept], terms_count: int) -> np.ndarray:
    """Run-level numbers that say what kind of run this is (for the out-of-distribution measure)."""
    t = max(1, len(frames))
    fp0 = frames[0] if frames else None
    return np.array([
        math.log1p(len(frames)),
        math.log(fp0.height) if fp0 else 0.0,
        math.log(fp0.width) if fp0 else 0.0,
        sum(f.pointer_found for f in frames) / t,
        float(np.mean([f.change for f in frames])) if frames else 0.0,
        math.log1p(sum(f.n_lines for f in frames) / t),
        sum(len(f.lines) for f in frames) / t,
        float(terms_count),
        float(ex.term_feat[:, 15].max()) if len(ex.term_feat) else 0.0,
        float(ex.term_feat[:, 4].max()) if len(ex.term_feat) else 0.0,
        ex.tokens_kept / max(1, ex.tokens_total),
    ], np.float32)


def first_error_frame(keyframe_steps_: list[int], first_error_step: int | None) -> int:
    """The keyframe that shows a step's outcome: the first keyframe at or after the step (-1 when None)."""
    if first_error_step is None or first_error_step < 0 or not keyframe_steps_:
        return -1
    for i, s in enumerate(keyframe_steps_):
        if s >= first_error_step:
            return i
    return len(keyframe_steps_) - 1


# The network's named inputs and outputs (the ONNX graph's too); here, not in models.network, so that scoring
# with onnxruntime never imports torch.
INPUT_NAMES = ("word_ids", "word_mask", "term_ids", "term_feat", "term_mask", "line_ids", "line_feat", "line_t",
               "line_mask", "frame_feat", "frame_mask", "vis", "vis_feat", "vis_t", "vis_mask", "run_feat")
OUTPUT_NAMES = ("success_logit", "frame_logits", "embedding")



def make_batch(examples: list[Example]) -> dict[str, np.ndarray]:
    """Pad a list of examples into the network's named inputs (masks True for real entries)."""
    b = len(examples)

    def pad(key: str, dtype: type, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        arrs = [getattr(e, key) for e in examples]
        n = max(1, max(len(a) for a in arrs))
        shape = (b, n) + (arrs[0].shape[1:] if width is None else (width,))
        out: np.ndarray = np.zeros(shape, dtype)
        mask = np.zeros((b, n), bool)
        for i, a in enumerate(arrs):
            if len(a):
                out[i, :len(a)] = a
                mask[i, :len(a)] = True
        return out, mask

    word_ids, word_mask = pad("word_ids", np.int64)
    term_ids, term_mask = pad("term_ids", np.int64)
    term_feat, _ = pad("term_feat", np.float32)
    line_ids, line_mask = pad("line_ids", np.int64)
    line_feat, _ = pad("line_feat", np.float32)
    line_t, _ = pad("line_t", np.int64)
    frame_feat, frame_mask = pad("frame_feat", np.float32)
    vis, vis_mask = pad("vis", np.float32)
    vis_feat, _ = pad("vis_feat", np.float32)
    vis_t, _ = pad("vis_t", np.int64)
    run_feat = np.stack([e.run_feat for e in examples]).astype(np.float32)
    return {"run_feat": run_feat, "word_ids": word_ids, "word_mask": word_mask, "term_ids": term_ids,
            "term_feat": term_feat,
            "term_mask": term_mask, "line_ids": line_ids, "line_feat": line_feat, "line_t": line_t,
            "line_mask": line_mask, "frame_feat": frame_feat, "frame_mask": frame_mask, "vis": vis,
            "vis_feat": vis_feat, "vis_t": vis_t, "vis_mask": vis_mask}
