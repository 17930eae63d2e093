"""Score trajectories with the reward model: onnxruntime by default, torch as a second backend.

``RewardModel.load()`` opens the shipped weights (``models/weights/``: ``model.onnx`` + ``model.json``, and
``model.pt`` for the torch backend); a path may also name another weights folder or a training run folder
(``RUN/checkpoint.pt``, torch only). Torch is imported only when the torch backend is asked for, so the app
never loads it at start-up.

``score(traj)`` reduces the run to one keyframe per step (the frame at each step's end; at most
``max_frames``, uniformly subsampled), prunes the tokens, runs the network and maps keyframes back to steps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core.errors import RollscopeError
from gui_app.core.score import Score
from gui_app.core.trajectory import Trajectory
from models.config import FEATURE_VERSION, ModelConfig
from models.features import Example, featurize, make_batch
from models.tokenizer import Tokenizer

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
BACKENDS = ("onnx", "torch")


# Measured on the shipped model (card, known limits): runs without a pointer on the last keyframe were judged
# right 63% of the time (51 runs over validation, test and held-out types) against 77% with one.
NO_POINTER = ("no mouse pointer found on the last keyframe: the verdict leans on where the pointer rests at a "
              "step's end, so it is less reliable here (model card, known limits)")


class ModelLoadError(RollscopeError):
    """The model files are missing or do not match this version of the code."""


@dataclass
class Prepared:
    """One trajectory made ready for the network (:meth:`RewardModel.prepare`): its features and step count."""

    example: Example
    n_steps: int


class _OnnxBackend:
    def __init__(self, onnx_path: Path, threads: int):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No busy-waiting after a run: onnxruntime's pool otherwise spins on both cores for a while after each
        # forward and slows the next trajectory's decoding and pruning (measured: decode 22 -> 52 ms).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        # Give the CPU arena's free chunks back after every run. A batch is padded to its longest run, so one long
        # run makes the arena grow by hundreds of MB (attention over every padded token), and without shrinkage
        # the arena keeps that peak for the life of the process and extends it for each new batch shape: the app
        # went 195 -> 736 -> 810 -> 860 MB over three library scorings (bench/scoring_memory.py).
        self.run_options = ort.RunOptions()
        self.run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def __call__(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        s, f = self.session.run(["success_logit", "frame_logits"], batch, self.run_options)
        return s, f


class _TorchBackend:
    def __init__(self, state: dict, cfg: ModelConfig, threads: int):
        import torch

        from models.network import build

        torch.set_num_threads(threads)
        self.torch = torch
        self.net = build(cfg)
        self.net.load_state_dict({k: v.float() for k, v in state.items()})
        self.net.eval()

    def __call__(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        with self.torch.no_grad():
            s, f = self.net(**{k: self.torch.from_numpy(v) for k, v in batch.items()})
        return s.numpy(), f.numpy()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


class RewardModel:
    """A loaded reward model (config, tokenizer, threshold, one backend).

    It is the core's :class:`gui_app.core.scoring.Scorer`: :meth:`prepare` featurizes one trajectory (without
    changing it), :meth:`score_prepared` scores a batch, and :meth:`score` does both for one trajectory.
    """

    def __init__(self, cfg: ModelConfig, tokenizer: Tokenizer, threshold: float, backend: Any, name: str,
                 prune_default: bool = True):
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.threshold = threshold
        self.backend = backend
        self.name = name
        self.prune_default = prune_default

    @classmethod
    def load(cls, path: str | Path | None = None, backend: str = "onnx", threads: int = 2) -> "RewardModel":
        """Open a model.

        Args:
            path: a weights folder (``model.json`` + ``model.onnx``/``model.pt``) or a run folder
                (``checkpoint.pt``); None: the shipped weights.
            backend: ``onnx`` (onnxruntime) or ``torch``.
            threads: CPU threads for the backend.

        Raises:
            ModelLoadError: missing files, an unknown backend, or features of another version.
        """
        if backend not in BACKENDS:
            raise ModelLoadError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
        p = Path(path) if path is not None else WEIGHTS_DIR
        if p.is_file():
            p = p.parent
        meta_file = p / "model.json"
        if meta_file.is_file():
            meta = json.loads(meta_file.read_text())
            state = None
            if backend == "torch":
                state = cls._torch_state(p / "model.pt")
        elif (p / "checkpoint.pt").is_file():
            if backend != "torch":
                raise ModelLoadError(f"{p}: a training run holds a torch checkpoint only; export it with "
                                     f"`rollscope export-onnx {p}` or use --backend torch")
            ckpt = cls._torch_state(p / "checkpoint.pt", full=True)
            meta = {k: ckpt[k] for k in ("config", "feature_version", "tokenizer", "threshold")}
            meta["prune"] = ckpt.get("prune", True)
            state = ckpt["state_dict"]
        else:
            raise ModelLoadError(f"{p}: no model.json or checkpoint.pt (is this a weights or run folder?)")
        if meta.get("feature_version") != FEATURE_VERSION:
            raise ModelLoadError(f"{p}: features of version {meta.get('feature_version')}, this code computes "
                                 f"version {FEATURE_VERSION}")
        cfg = ModelConfig.from_dict(meta["config"])
        tok = Tokenizer.from_dict(meta["tokenizer"])
        if backend == "onnx":
            onnx_path = p / "model.onnx"
            if not onnx_path.is_file():
                raise ModelLoadError(f"{onnx_path}: file not found")
            impl: Any = _OnnxBackend(onnx_path, threads)
        else:
            assert state is not None  # read above for the torch backend
            impl = _TorchBackend(state, cfg, threads)
        return cls(cfg, tok, float(meta.get("threshold", 0.5)), impl, f"{p.name}:{backend}",
                   prune_default=bool(meta.get("prune", True)))

    @staticmethod
    def _torch_state(file: Path, full: bool = False) -> dict:
        if not file.is_file():
            raise ModelLoadError(f"{file}: file not found (the torch backend needs it)")
        import torch

        obj = torch.load(file, map_location="cpu", weights_only=False)
        return obj if full else obj["state_dict"]

    def forward(self, batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Raw network outputs for a padded batch: success logits (B,), frame logits (B, T)."""
        return self.backend(batch)

    def score_example(self, ex: Example, n_steps: int) -> Score:
        """Score an already featurized trajectory (``ex.keyframe_steps`` maps keyframes to steps)."""
        return self.score_examples([ex], [n_steps])[0]

    def score_examples(self, examples: list[Example], n_steps: list[int]) -> list[Score]:
        """Score featurized trajectories in one padded forward pass (its time is shared out evenly)."""
        t0 = time.perf_counter()
        s, f = self.forward(make_batch(examples))
        t_fwd = (time.perf_counter() - t0) / len(examples)
        return [self._result(ex, n, s[i], f[i], t_fwd) for i, (ex, n) in enumerate(zip(examples, n_steps))]

    def _result(self, ex: Example, n_steps: int, s: np.ndarray, f: np.ndarray, t_fwd: float) -> Score:
        p = float(_sigmoid(s))
        dist = _softmax(f[: ex.n_frames].astype(np.float64))
        step_scores = [0.0] * n_steps
        for j, k in enumerate(ex.keyframe_steps):
            step_scores[k] = float(dist[j])
        success = p >= self.threshold
        first = None if success or not ex.keyframe_steps else int(ex.keyframe_steps[int(np.argmax(dist))])
        timings = dict(ex.timings)
        timings["forward"] = t_fwd
        masks = [] if ex.masks is None else [m for m in ex.masks]
        warnings: list[str] = []
        if self.cfg.cursor_match and ex.match is not None and ex.match.shape[1] > 2 and ex.n_frames:
            last = (ex.positions[:, 0] == ex.n_frames - 1) & (ex.match[:, 2] > 0.5)
            if not last.any():
                warnings.append(NO_POINTER)
        return Score(p_success=p, threshold=self.threshold, success=bool(success), first_error_step=first,
                     step_scores=step_scores, masks=masks, keyframe_steps=list(ex.keyframe_steps),
                     tokens_kept=ex.tokens_kept, tokens_total=ex.tokens_total, model=self.name, warnings=warnings,
                     seconds=float(sum(timings.values())), timings=timings)

    def prepare(self, traj: Trajectory, prune: bool = True) -> Prepared:
        """Featurize one trajectory for :meth:`score_prepared` (decode, prune, tokenize; ``traj`` is not changed).

        Raises:
            VideoError: no readable recording or screenshots.
        """
        return Prepared(featurize(traj, self.cfg, self.tokenizer, prune=prune), traj.n_steps)

    def score_prepared(self, prepared: Sequence[Prepared]) -> list[Score]:
        """Score prepared trajectories in one padded forward pass."""
        return self.score_examples([p.example for p in prepared], [p.n_steps for p in prepared])

    def score(self, traj: Trajectory, prune: bool = True) -> Score:
        """Score one trajectory: decode its step-end keyframes, prune, run the network.

        Args:
            traj: the trajectory (needs a recording or step screenshots).
            prune: False feeds every token (slower; the unpruned baseline).

        Raises:
            VideoError: no readable recording or screenshots.
        """
        return self.score_prepared([self.prepare(traj, prune=prune)])[0]
