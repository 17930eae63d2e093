"""Score trajectories with the reward model: onnxruntime by default, torch as a second backend.

``RewardModel.load()`` opens the shipped weights (``models/weights/``: ``model.onnx``, ``pointer.onnx`` and
``model.json``, and ``trees.onnx`` where the weights have run trees; ``model.pt`` for the torch backend) or a
training run folder (``checkpoint.pt``, torch only) through :class:`models.checkpoint.Checkpoint`, and checks that
every version the weights were trained with (features, perception, terms, hashing, reader, pointer detector, pointer
sprite) is the one this code computes. Torch is imported only for the torch backend.

``score(traj)`` reads one keyframe per step end (at most :attr:`RewardModel.max_keyframes`, uniformly subsampled
when the run is longer), perceives them (:mod:`models.perception`), matches the instruction (:mod:`models.features`),
runs the network, calibrates its probability and averages it with the run trees' (:mod:`models.trees`; weights
without trees: the network alone) into p_success, and measures how far the run is from the training data (``ood``:
1.0 is the 99th percentile of validation runs; above it the verdict is ``unknown`` rather than confident).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core.scoring.score import Safety, Score
from gui_app.core.trajectory.model import Trajectory, step_text
from models.checkpoint import RUN_FILE, WEIGHTS_FILE, Checkpoint, ModelLoadError
from models.config import ModelConfig
from models.features import INPUT_NAMES, Example, load_keyframes, make_batch, make_example, perceive_run
from models.harm import HarmHead, harm_input, secret_values
from models.perception import Perceiver
from models.trees import RunTrees, blend, sigmoid

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
BACKENDS = ("onnx", "torch")
OOD_LIMIT = 1.0

NO_INSTRUCTION = "no instruction: the verdict has nothing to judge the run against"
UNLIKE_TRAINING = "unlike the runs the model was trained on (ood {ood:.2f} > 1): treat the verdict as unknown"
NO_TEXT = "no text could be read where the run acted or changed the screen"
OUTSIDE_SCREENS = ("screens of {w}x{h} px, outside the sizes the model was trained on ({w0}-{w1} x {h0}-{h1} px): "
                   "treat the verdict as unknown")
OUTSIDE_SHAPE = ("screens of {w}x{h} px, width/height {a:.2f}, a shape the model was not trained on "
                 "({a0:.2f}-{a1:.2f}): treat the verdict as unknown")
SUBSAMPLED = ("judged on {k} keyframes spread evenly over its {n} steps, the most the model judges (the steps "
              "between are folded into them)")
SIZE_MARGIN = 1.25  # a screen up to 25% smaller or larger than any trained on still counts as seen
LENGTH_MARGIN = 1.5  # a run is judged on at most this many times the keyframes of the longest run trained


def default_pointer_path() -> Path:
    return WEIGHTS_DIR / "pointer.onnx"


@dataclass
class Prepared:
    """One trajectory made ready for the network (:meth:`RewardModel.prepare`)."""

    example: Example
    n_steps: int
    instruction: str


class _OnnxBackend:
    def __init__(self, onnx_path: Path, threads: int):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # No busy-waiting after a run: the pool otherwise spins on both cores and slows the next decoding.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        # Give the CPU arena's free chunks back after every run. A batch is padded to its longest run, so one long
        # run makes the arena grow by hundreds of MB (attention over every padded token), and without shrinkage
        # the arena keeps that peak for the life of the process and extends it for each new batch shape: the app
        # went 195 -> 736 -> 810 -> 860 MB over three library scorings (bench/scoring_memory.py).
        self.run_options = ort.RunOptions()
        self.run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def __call__(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, f, e = self.session.run(["success_logit", "frame_logits", "embedding"], {k: batch[k] for k in INPUT_NAMES},
                                   self.run_options)
        return s, f, e


class _TorchBackend:
    def __init__(self, state: dict[str, Any], cfg: ModelConfig, threads: int):
        import torch

        from models.network import build

        torch.set_num_threads(threads)
        self.torch = torch
        self.net = build(cfg)
        self.net.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
        self.net.eval()

    def __call__(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with self.torch.no_grad():
            s, f, e = self.net(**{k: self.torch.from_numpy(batch[k]) for k in INPUT_NAMES})
        return s.numpy(), f.numpy(), e.numpy()


def _trees(path: Path | None, what: str) -> RunTrees | None:
    if path is None:
        return None
    if not path.is_file():
        raise ModelLoadError(f"{path}: file not found ({what})")
    return _readable(path, what, lambda: RunTrees(path))


def _readable(path: Path, what: str, make: Any) -> Any:
    """``make()``, with an ONNX file onnxruntime cannot read reported as a :class:`ModelLoadError` naming it."""
    try:
        return make()
    except Exception as exc:  # onnxruntime's own errors (InvalidProtobuf, Fail, ...) derive from Exception alone
        raise ModelLoadError(f"{path}: {what} cannot be read: {str(exc).splitlines()[0][:200]}") from exc


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def first_deviation(ex: Example, dist: np.ndarray) -> int:
    """The keyframe where the run first deviates: the first whose logged action contradicts the instruction
    (:func:`models.evidence.contradiction`: a value typed nearly but not exactly), else the network's most likely
    keyframe (``dist``, its distribution over the keyframes); when that is the run's last act and the agent then
    claimed DONE although the act did what the instruction names, the claim (:attr:`Example.early_stop`: it
    stopped too early)."""
    return _deviation(ex, dist)[0]


def _deviation(ex: Example, dist: np.ndarray, instruction: str = "") -> tuple[int, str]:
    """:func:`first_deviation`, and why in words when the log's evidence placed it ('' when the network did): what
    was typed is left out when the term it missed is a secret that ``instruction`` gives."""
    c = ex.contradiction
    if c is not None and 0 <= c.frame < ex.n_frames:
        if c.term in secret_values(instruction):  # evidence never repeats a secret
            return c.frame, "typed a near miss of a secret the instruction gives"
        return c.frame, f"typed {_quote(c.typed)} where the instruction names {_quote(c.term)}"
    d = dist[: ex.n_frames]
    if ex.acts:  # the log says where the agent acted: a hover or a wait is not where a run deviates, the claim
        # that ended it may be (it stopped too early)
        cand = ex.acts + ([ex.claim_frame] if 0 <= ex.claim_frame < ex.n_frames else [])
        k = cand[int(np.argmax(d[cand]))]
    else:
        k = int(np.argmax(d))
    if 0 <= ex.early_stop < ex.n_frames and ex.frame_feat[k, 1] > 0:  # k is the run's end (its last act)
        return ex.early_stop, "claimed DONE right after doing what the instruction names: it stopped too early"
    return k, ""


def _quote(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return '"' + (text if len(text) <= limit else text[:limit - 1] + "…") + '"'


def deviation_step(ex: Example, score: Score) -> int:
    """The step where ``score``'s run would first deviate (:func:`first_deviation`), whatever its verdict: what
    ``eval`` compares with a failure's labelled step (0 for a run without keyframes)."""
    steps = score.keyframe_steps
    if not steps:
        return 0
    return int(steps[first_deviation(ex, np.array([score.step_scores[s] for s in steps]))])


class RewardModel:
    """A loaded reward model: perception, network backend, calibration, threshold and OOD reference."""

    def __init__(self, checkpoint: Checkpoint, backend: Any, perceiver: Perceiver, name: str):
        self.checkpoint = checkpoint
        self.cfg = checkpoint.net
        self.backend = backend
        self.perceiver = perceiver
        self.name = name
        self.threshold = checkpoint.threshold
        self.calibration = checkpoint.calibration
        ood = checkpoint.ood
        self._ood = (np.array(ood.mean), np.array(ood.std), np.array(ood.precision), ood.scale)
        self._range = ood.summary_range  # None in weights from before summary ranges: the distance alone
        self.harm: HarmHead | None = None  # the harm judge beside it (weights from before it have none)
        self.trees: RunTrees | None = None  # the run trees averaged with the network (weights without: None)
        self.agent_trees: RunTrees | None = None  # a fine-tune's agent trees (models.trees)

    @classmethod
    def load(cls, path: str | Path | None = None, backend: str = "onnx", threads: int = 2) -> RewardModel:
        """Open a weights folder or a run folder (see the module docstring).

        Raises:
            ModelLoadError: missing files, an unknown backend, or weights of other versions.
        """
        from models.pointer import PointerDetector
        from models.text import TextReader

        if backend not in BACKENDS:
            raise ModelLoadError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
        p = Path(path) if path is not None else WEIGHTS_DIR
        if p.is_file():
            p = p.parent
        if backend != "torch" and not (p / WEIGHTS_FILE).is_file() and (p / RUN_FILE).is_file():
            raise ModelLoadError(f"{p}: a training run holds a torch checkpoint only; export it with "
                                 f"`rollscope export-onnx {p}` or use --backend torch")
        ck = Checkpoint.load(p, state=backend == "torch")
        ck.check_versions(p)
        if not ck.pointer.is_file():
            raise ModelLoadError(f"{ck.pointer}: file not found (the pointer detector)")
        if backend == "onnx":
            onnx_path = p / "model.onnx"
            if not onnx_path.is_file():
                raise ModelLoadError(f"{onnx_path}: file not found")
            impl: Any = _readable(onnx_path, "the network", lambda: _OnnxBackend(onnx_path, threads))
        else:
            impl = _TorchBackend(ck.state_dict or {}, ck.net, threads)
        perceiver = Perceiver(PointerDetector(ck.pointer, threads=threads), TextReader(threads=threads),
                              ck.perception)
        model = cls(ck, impl, perceiver, f"{p.name}:{backend}")
        model.harm = HarmHead.load(p, threads=1)
        model.trees, model.agent_trees = (_trees(path, what) for path, what in (
            (ck.trees, "the run trees"), (ck.agent_trees, "the agent trees")))
        return model

    def featurize(self, traj: Trajectory, prune: bool = True, use_log: bool = True) -> Example:
        """Keyframes, perception and features of one trajectory (``prune`` False: every token, the baseline;
        ``use_log`` False: judged as a plain recording, the step log's actions and claims left out).

        Raises:
            VideoError: no readable recording or screenshots.
        """
        t0 = time.perf_counter()
        cap = self.max_keyframes
        kf = load_keyframes(traj, cap)
        t_decode = time.perf_counter() - t0
        percept = perceive_run(self.perceiver, traj, kf, prune=prune, use_log=use_log)
        t0 = time.perf_counter()
        ex = make_example(percept, traj.instruction, kf.steps, use_log=use_log)
        if len(kf.steps) >= cap and traj.n_steps > len(kf.steps):
            ex.warnings.append(SUBSAMPLED.format(k=len(kf.steps), n=traj.n_steps))
        if self.harm is not None:
            ex.harm = harm_input(traj, percept, kf.steps, use_log=use_log)
        ex.timings["decode"] = t_decode
        ex.timings["features"] = time.perf_counter() - t0
        return ex

    def ood(self, emb: np.ndarray, ex: Example) -> float:
        """Distance of one run from the training data, in units of the validation runs' 99th percentile."""
        from models.versions import mahalanobis

        mu, sd, prec, scale = self._ood
        vec = np.concatenate([emb, ex.summary if ex.summary is not None else np.zeros(len(mu) - len(emb))])
        return float(mahalanobis(vec[None], mu, sd, prec)[0] / scale)

    @property
    def max_keyframes(self) -> int:
        """The most keyframes a run is judged on: the network's table, and where the weights record the longest run
        trained, at most ``LENGTH_MARGIN`` times its keyframes. A longer run is judged on a uniform subsample of its
        steps (the steps between folded into them: :mod:`models.evidence`) rather than called unknown for its
        length: judged on half their keyframes, agent B's and desktop profile b's dev runs of 16 steps or more kept
        their accuracy (72.0% both, AUROC 0.620 and 0.617, 50 runs)."""
        if not self._range:
            return self.cfg.max_frames
        return max(1, min(self.cfg.max_frames, int(math.expm1(self._range.max[0]) * LENGTH_MARGIN + 1e-6)))

    def outside(self, ex: Example) -> list[str]:
        """Why a run lies outside what the model was trained on by its screen size or shape (empty: inside); a run
        longer than any trained is judged on fewer keyframes instead (:attr:`max_keyframes`).

        The summary's second and third numbers are log(height), log(width) of the first keyframe
        (:func:`models.features.summary`)."""
        if not self._range or ex.summary is None:
            return []
        lo, hi = self._range.min, self._range.max
        h, w = math.exp(ex.summary[1]), math.exp(ex.summary[2])
        h0, h1, w0, w1 = math.exp(lo[1]), math.exp(hi[1]), math.exp(lo[2]), math.exp(hi[2])
        out = []
        a0, a1 = self._range.aspect or (0.0, math.inf)  # weights from before the aspect range: sizes only
        if not (h0 / SIZE_MARGIN <= h <= h1 * SIZE_MARGIN and w0 / SIZE_MARGIN <= w <= w1 * SIZE_MARGIN):
            out.append(OUTSIDE_SCREENS.format(w=round(w), h=round(h), w0=round(w0), w1=round(w1), h0=round(h0),
                                              h1=round(h1)))
        elif not a0 / SIZE_MARGIN <= w / h <= a1 * SIZE_MARGIN:
            out.append(OUTSIDE_SHAPE.format(w=round(w), h=round(h), a=w / h, a0=a0, a1=a1))
        return out

    def prepare(self, traj: Trajectory, prune: bool = True, use_log: bool = True) -> Prepared:
        """The network's input for one trajectory (the core's :class:`~gui_app.core.scoring.batch.Scorer` step one).

        Raises:
            VideoError: no readable recording or screenshots.
        """
        return Prepared(self.featurize(traj, prune=prune, use_log=use_log), traj.n_steps, traj.instruction or "")

    def score_prepared(self, prepared: Sequence[Prepared]) -> list[Score]:
        """Score prepared trajectories in one padded forward pass (its time is shared out evenly)."""
        if not prepared:
            return []
        t0 = time.perf_counter()
        s, f, e = self.backend(make_batch([p.example for p in prepared]))
        feats = np.stack([p.example.run_feat for p in prepared])
        trees, agent = (None if t is None else t.p(feats) for t in (self.trees, self.agent_trees))
        t_fwd = (time.perf_counter() - t0) / len(prepared)
        return [self._result(p.example, p.n_steps, s[i], f[i], e[i], t_fwd, p.instruction,
                             None if trees is None else float(trees[i]), None if agent is None else float(agent[i]))
                for i, p in enumerate(prepared)]

    def _result(self, ex: Example, n_steps: int, s: float, f: np.ndarray, emb: np.ndarray, t_fwd: float,
                instruction: str, p_trees: float | None = None, p_agent: float | None = None) -> Score:
        a, b = self.calibration.a, self.calibration.b
        p_network = float(sigmoid(a * float(s) + b))
        tcal = self.checkpoint.trees_calibration
        p = float(blend(p_network, p_trees, tcal.a, tcal.b, p_agent))
        dist = _softmax(f[: ex.n_frames].astype(np.float64))
        step_scores = [0.0] * n_steps
        for j, k in enumerate(ex.keyframe_steps):
            if k < n_steps:
                step_scores[k] = float(dist[j])
        safety = self._safety(ex, n_steps)
        success = p >= self.threshold
        first, why = None, ""
        if not success and ex.keyframe_steps:
            frame, how = _deviation(ex, dist, instruction)
            first = int(ex.keyframe_steps[frame])
            why = f"First deviation at {step_text(first)}, from the log: {how}." if how else ""
        timings = dict(ex.timings)
        timings["forward"] = t_fwd
        ood = self.ood(emb, ex)
        warnings = list(ex.warnings)
        if not instruction.strip():
            warnings.append(NO_INSTRUCTION)
        if ood > OOD_LIMIT:
            warnings.append(UNLIKE_TRAINING.format(ood=ood))
        outside = self.outside(ex)
        warnings += outside
        if ex.line_feat.shape[0] == 0:
            warnings.append(NO_TEXT)
        masks = [] if ex.masks is None else [m for m in ex.masks]
        return Score(p_success=p, threshold=self.threshold, success=bool(success), first_error_step=first,
                     step_scores=step_scores, masks=masks, keyframe_steps=list(ex.keyframe_steps),
                     tokens_kept=ex.tokens_kept, tokens_total=ex.tokens_total, model=self.name, ood=ood,
                     unknown=ood > OOD_LIMIT or bool(outside) or not instruction.strip(), warnings=warnings,
                     seconds=float(sum(timings.values())), timings=timings, evidence=list(ex.evidence),
                     text_reads=ex.reads, safety=safety, rationale=why)

    def _safety(self, ex: Example, n_steps: int) -> Safety | None:
        """The harm verdict beside success (None: these weights have no harm judge)."""
        if self.harm is None or ex.harm is None:
            return None
        t0 = time.perf_counter()
        out = self.harm.judge(ex.harm, n_steps)
        ex.timings["harm"] = time.perf_counter() - t0
        return out

    def score(self, traj: Trajectory, prune: bool = True, use_log: bool = True) -> Score:
        """Score one trajectory (see the module docstring).

        Raises:
            VideoError: no readable recording or screenshots.
        """
        return self.score_prepared([self.prepare(traj, prune=prune, use_log=use_log)])[0]
