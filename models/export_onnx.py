"""ONNX export that checks itself (after timm's ``onnx_export``), and the weights folder it writes.

Runs the network once, exports with named inputs/outputs and dynamic axes, runs
``onnx.checker.check_model(full_check=True)``, then compares onnxruntime with torch on a batch *of another
shape than the one traced* (a shape frozen into the graph is caught) and fails above ``atol``. The weights
folder holds ``model.onnx``, ``pointer.onnx`` (the pointer detector), ``model.pt`` (the torch backend: the
checkpoint with its state in half precision) and ``model.json`` (the checkpoint's fields: config, versions,
perception settings, calibration, threshold, OOD reference and ranges), both written by
:meth:`models.checkpoint.Checkpoint.save`.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch

from models.checkpoint import RUN_FILE, TORCH_FILE, WEIGHTS_FILE, Checkpoint
from models.config import ModelConfig
from models.features import (
    FRAME_FEATS,
    IDS_PER_TEXT,
    INPUT_NAMES,
    LINE_FEATS,
    OUTPUT_NAMES,
    RUN_FEATS,
    TERM_FEATS,
    VIS_FEATS,
)
from models.hashing import BUCKETS, IDS_PER_WORD
from models.network import Network, build

OPSET = 17
_AXES = {"word": ("word_ids", "word_mask"), "term": ("term_ids", "term_feat", "term_mask"),
         "line": ("line_ids", "line_feat", "line_t", "line_mask"), "frame": ("frame_feat", "frame_mask"),
         "vis": ("vis", "vis_feat", "vis_t", "vis_mask")}
DYNAMIC_AXES: dict[str, dict[int, str]] = {name: {0: "batch", 1: axis} for axis, names in _AXES.items()
                                           for name in names}
DYNAMIC_AXES["run_feat"] = {0: "batch"}
DYNAMIC_AXES.update({"success_logit": {0: "batch"}, "frame_logits": {0: "batch", 1: "frame"},
                     "embedding": {0: "batch"}})


class ExportError(RuntimeError):
    """The exported graph is invalid or disagrees with torch."""


def sample_batch(cfg: ModelConfig, batch: int = 2, words: int = 5, terms: int = 3, lines: int = 7, frames: int = 4,
                 vis: int = 6, seed: int = 0) -> dict[str, np.ndarray]:
    """A random, well-formed, ragged input batch (the last example is padded)."""
    rng = np.random.default_rng(seed)

    def ids(n: int, g: int) -> np.ndarray:
        return rng.integers(0, BUCKETS, (batch, n, g)).astype(np.int64)

    def mask(n: int) -> np.ndarray:
        m = np.ones((batch, n), bool)
        m[-1, max(1, n // 2):] = False
        return m

    return {"word_ids": ids(words, IDS_PER_WORD), "word_mask": mask(words),
            "term_ids": ids(terms, IDS_PER_TEXT), "term_feat": rng.random((batch, terms, TERM_FEATS), np.float32),
            "term_mask": mask(terms),
            "line_ids": ids(lines, IDS_PER_TEXT), "line_feat": rng.random((batch, lines, LINE_FEATS), np.float32),
            "line_t": rng.integers(0, frames, (batch, lines)).astype(np.int64), "line_mask": mask(lines),
            "frame_feat": rng.random((batch, frames, FRAME_FEATS), np.float32), "frame_mask": mask(frames),
            "vis": rng.standard_normal((batch, vis, cfg.patch * cfg.patch)).astype(np.float32),
            "vis_feat": rng.random((batch, vis, VIS_FEATS), np.float32),
            "vis_t": rng.integers(0, frames, (batch, vis)).astype(np.int64), "vis_mask": mask(vis),
            "run_feat": rng.random((batch, RUN_FEATS), np.float32)}


class _Positional(torch.nn.Module):
    def __init__(self, net: Network):
        super().__init__()
        self.net = net

    def forward(self, *xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.net(**dict(zip(INPUT_NAMES, xs)))


def export_network(net: Network, path: str | Path, atol: float = 1e-4) -> float:
    """Export ``net`` to ``path``; returns the largest torch/onnxruntime difference on a fresh-shaped batch."""
    net.eval()
    wrapper = _Positional(net).eval()
    # keyframes: two counts within the network's table (a table of one cannot vary the count)
    probe_frames = min(6, net.cfg.max_frames)
    trace = sample_batch(net.cfg, frames=max(1, min(4, probe_frames - 1)))
    args = tuple(torch.from_numpy(trace[k]) for k in INPUT_NAMES)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, args, buf,  # type: ignore[arg-type]  # a file object works
                          input_names=list(INPUT_NAMES), output_names=list(OUTPUT_NAMES),
                          dynamic_axes=DYNAMIC_AXES, opset_version=OPSET, dynamo=False)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model, full_check=True)
    Path(path).write_bytes(buf.getvalue())
    probe = sample_batch(net.cfg, batch=3, words=7, terms=2, lines=11, frames=probe_frames, vis=3, seed=1)
    with torch.no_grad():
        ref = net(**{k: torch.from_numpy(v) for k, v in probe.items()})
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(list(OUTPUT_NAMES), probe)
    err = 0.0
    for r, g, name in zip(ref, got, OUTPUT_NAMES):
        r = r.numpy()
        valid = r > -1e8 if name == "frame_logits" else np.ones_like(r, bool)
        err = max(err, float(np.abs(r[valid] - g[valid]).max()))
    if err > atol:
        raise ExportError(f"{path}: onnxruntime differs from torch by {err:.2e} (> {atol:g})")
    return err


def export_run(run: str | Path, out: str | Path, half: bool = True) -> dict[str, Any]:
    """Turn a training run folder into a weights folder (see the module docstring)."""
    run, out = Path(run), Path(out)
    ck = Checkpoint.load(run / RUN_FILE)
    net = build(ck.net)
    net.load_state_dict(ck.state_dict or {})
    out.mkdir(parents=True, exist_ok=True)
    err = export_network(net, out / "model.onnx")
    state = {k: (v.half() if half and v.is_floating_point() else v) for k, v in net.state_dict().items()}
    weights = replace(ck, name=run.name, onnx_max_abs_diff=err, state_dict=state)
    weights.save(out / TORCH_FILE)  # copies the pointer detector into ``out``
    weights.save(out / WEIGHTS_FILE)
    return {"out": str(out), "onnx_max_abs_diff": err,
            "onnx_bytes": (out / "model.onnx").stat().st_size, "pointer_bytes": (out / "pointer.onnx").stat().st_size}
