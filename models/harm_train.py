"""Training the harm judge (:mod:`models.harm`) on recorded runs whose harm is known, and exporting it to ONNX.

Labels come from each run's metadata: ``harm.harmful`` and ``harm.first_harmful_step`` (the threat scenarios of
the desktop recorder write them from their harm checker, which reads the end state); a run without a ``harm``
object is a safe negative (the benign desktop tasks, MiniWoB++). Perception is the success judge's, read once and
cached (:func:`models.data.perceive_all`), so training the head takes seconds after the first pass.

The network scores each step's cue row with a small MLP; the run's logit is its most harmful step's. The loss is
the run's binary cross-entropy plus, for harmful runs with a known step, the step's: the steps before the first
harmful one are safe, that one is harmful (so the first step that passes the threshold is where harm began). One
run in four is also shown as a plain recording (its log's actions left out), so the head learns the screens-only
cues too. Calibration (Platt) and the threshold are fitted on a validation slice held out by episode.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.train import fit_platt
from models.harm import CUES, HARM_JSON, HARM_ONNX, HARM_VERSION, N_CUES, HarmInput, harm_input, harm_label

HIDDEN = 16


class HarmNet(torch.nn.Module):
    """Per-step harm logits from cue rows: ``cues`` (B, S, N_CUES) -> (B, S)."""

    def __init__(self, hidden: int = HIDDEN):
        super().__init__()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(N_CUES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

    def forward(self, cues: torch.Tensor) -> torch.Tensor:
        return self.mlp(cues).squeeze(-1)


@dataclass
class HarmExample:
    inp: HarmInput
    harmful: bool
    first_row: int  # row of the first harmful step, -1 when unknown or safe
    path: str
    group: str  # what keeps an episode's copies on one side of the split
    video_only: bool = False


def _row_of(inp: HarmInput, step: int | None) -> int:
    if step is None or not inp.steps:
        return -1
    rows = [i for i, s in enumerate(inp.steps) if s >= step]
    return rows[0] if rows else len(inp.steps) - 1


def _video_only(path: str) -> bool:
    return hashlib.blake2b(path.encode(), digest_size=2).digest()[0] % 4 == 0


def examples(episodes: Iterable[str], cache: str | Path, weights: str | Path | None = None, workers: int = 2,
             progress: Callable[[int, int], None] | None = None, both_modes: bool = True
             ) -> tuple[list[HarmExample], dict[str, str]]:
    """Harm examples of native episode folders, perceived once into ``cache`` (errors by episode)."""
    from gui_app.core.trajectory.formats import native
    from models.checkpoint import Checkpoint
    from models.data import cache_key, load_percept, perceive_all
    from models.runtime import WEIGHTS_DIR

    ck = Checkpoint.load(Path(weights or WEIGHTS_DIR), state=False)
    key = cache_key(ck.perception, ck.pointer)
    eps = sorted(set(map(str, episodes)))
    errors = perceive_all(eps, cache, key, ck.pointer, ck.perception, workers=workers, progress=progress)
    out: list[HarmExample] = []
    for ep in eps:
        if ep in errors:
            continue
        try:
            traj = native.load(ep)
            payload = load_percept(cache, key, ep)
        except Exception as exc:  # noqa: BLE001 - one unreadable episode is reported, the rest train
            errors[ep] = f"{type(exc).__name__}: {exc}"
            continue
        harmful, step = harm_label(traj.metadata)
        md = traj.metadata if isinstance(traj.metadata, dict) else {}
        group = f"{md.get('task', '?')}:{md.get('seed', ep)}"
        inp = harm_input(traj, payload["percept"], payload["steps"], use_log=True)
        out.append(HarmExample(inp, harmful, _row_of(inp, step) if harmful else -1, ep, group))
        if both_modes and _video_only(ep):
            vin = harm_input(traj, payload["percept"], payload["steps"], use_log=False)
            out.append(HarmExample(vin, harmful, _row_of(vin, step) if harmful else -1, ep, group, True))
    return out, errors


def _split(exs: list[HarmExample], val_share: float, seed: int) -> tuple[list[HarmExample], list[HarmExample]]:
    groups = sorted({e.group for e in exs})
    rng = random.Random(seed)
    rng.shuffle(groups)
    val = set(groups[: max(1, int(len(groups) * val_share))])
    return [e for e in exs if e.group not in val], [e for e in exs if e.group in val]


def _run_logits(net: HarmNet, exs: list[HarmExample]) -> np.ndarray:
    with torch.no_grad():
        return np.array([float(net(torch.from_numpy(e.inp.cues[None]))[0].max()) if len(e.inp.cues) else -10.0
                         for e in exs])


def choose_threshold(p: np.ndarray, y: np.ndarray) -> float:
    """The threshold with the best balanced accuracy on validation (harmful recall and safe specificity weighed
    alike: harm is rare, so plain accuracy would favour calling everything safe); 0.5 when validation lacks a
    class."""
    if not (y == 1).any() or not (y == 0).any():
        return 0.5
    best, thr = -1.0, 0.5
    for t in np.unique(np.clip(p, 0.02, 0.98)):
        pred = p >= t
        bal = 0.5 * (pred[y == 1].mean() + (1.0 - pred[y == 0].mean()))
        if bal > best + 1e-9:
            best, thr = bal, float(t)
    return thr


def metrics(p: np.ndarray, y: np.ndarray, thr: float) -> dict[str, float]:
    pred = p >= thr
    pos, neg = y == 1, y == 0
    return {"n": int(len(y)), "harmful": int(pos.sum()),
            "accuracy": float((pred == pos).mean()) if len(y) else float("nan"),
            "harmful_recall": float(pred[pos].mean()) if pos.any() else float("nan"),
            "false_alarms": float(pred[neg].mean()) if neg.any() else float("nan")}


def train(exs: list[HarmExample], out: str | Path, epochs: int = 60, lr: float = 1e-2, seed: int = 0,
          val_share: float = 0.2, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train, calibrate, choose the threshold, export ``harm.onnx`` and ``harm.json`` into ``out``."""
    torch.manual_seed(seed)
    random.seed(seed)
    tr, va = _split(exs, val_share, seed)
    if not tr or not va:
        raise ValueError(f"too few episodes to train the harm judge ({len(exs)})")
    n_pos = sum(e.harmful for e in tr)
    pos_weight = torch.tensor((len(tr) - n_pos) / max(1, n_pos))
    net = HarmNet()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-3)
    t0 = time.time()
    best: tuple[float, dict[str, Any]] | None = None
    yv = np.array([int(e.harmful) for e in va])
    for ep in range(epochs):
        net.train()
        order = list(range(len(tr)))
        random.shuffle(order)
        for i in order:
            e = tr[i]
            if not len(e.inp.cues):
                continue
            z = net(torch.from_numpy(e.inp.cues[None]))[0]
            y = torch.tensor(float(e.harmful))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z.max(), y, pos_weight=pos_weight)
            if e.harmful and e.first_row >= 0:
                target = torch.zeros(e.first_row + 1)
                target[-1] = 1.0
                loss = loss + 0.5 * torch.nn.functional.binary_cross_entropy_with_logits(z[: e.first_row + 1],
                                                                                          target)
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        zv = _run_logits(net, va)
        vloss = float(torch.nn.functional.binary_cross_entropy_with_logits(
            torch.from_numpy(zv.astype(np.float32)), torch.from_numpy(yv.astype(np.float32))))
        if best is None or vloss < best[0]:
            best = (vloss, {k: v.clone() for k, v in net.state_dict().items()})
    assert best is not None
    net.load_state_dict(best[1])
    net.eval()
    zv = _run_logits(net, va)
    a, b = fit_platt(zv, yv.astype(np.float64))
    pv = 1.0 / (1.0 + np.exp(-(a * zv + b)))
    thr = choose_threshold(pv, yv)
    val = metrics(pv, yv, thr)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    export(net, out / HARM_ONNX)
    meta = {"version": HARM_VERSION, "cues": list(CUES), "hidden": HIDDEN, "calibration": {"a": a, "b": b},
            "threshold": thr, "validation": val, "trained_on": {"train": len(tr), "validation": len(va),
                                                                "harmful_train": n_pos},
            "seconds": round(time.time() - t0, 1)}
    (out / HARM_JSON).write_text(json.dumps(meta, indent=1))
    log(f"harm judge: validation {val}, threshold {thr:.3f}, {meta['seconds']} s")
    return meta


def export(net: HarmNet, path: Path) -> None:
    """``net`` as ONNX: input ``cues`` (1, S, N_CUES), output ``logits`` (1, S); S dynamic."""
    import warnings

    import onnxruntime as ort

    net.eval()
    dummy = torch.zeros(1, 5, N_CUES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice: it is the one that works here
        torch.onnx.export(net, (dummy,), str(path), input_names=["cues"], output_names=["logits"],
                          dynamic_axes={"cues": {1: "steps"}, "logits": {1: "steps"}}, opset_version=17,
                          dynamo=False)
    probe = torch.from_numpy(np.random.default_rng(0).random((1, 9, N_CUES)).astype(np.float32))
    with torch.no_grad():
        ref = net(probe).numpy()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"cues": probe.numpy()})[0]
    if not np.allclose(got, ref, atol=1e-4):
        raise ValueError(f"{path}: the ONNX graph differs from torch by {float(np.abs(got - ref).max()):.2g}")


def evaluate(exs: list[HarmExample], folder: str | Path) -> dict[str, Any]:
    """The harm table of examples under the judge in ``folder``: accuracy, harmful recall, false alarms on safe
    runs, first harmful step exact and within one."""
    from models.harm import HarmHead

    head = HarmHead.load(folder)
    if head is None:
        raise ValueError(f"{folder}: no harm judge ({HARM_ONNX}, {HARM_JSON}) of version {HARM_VERSION}")
    ps, ys, exact, near = [], [], [], []
    for e in exs:
        n = max(e.inp.steps, default=0) + 1
        s = head.judge(e.inp, n)
        ps.append(0.0 if s.p_harm is None else s.p_harm)
        ys.append(int(e.harmful))
        if e.harmful and e.first_row >= 0 and s.harmful:
            true = e.inp.steps[e.first_row]
            pred = s.first_harmful_step if s.first_harmful_step is not None else -99
            exact.append(pred == true)
            near.append(abs(pred - true) <= 1)
        elif e.harmful and e.first_row >= 0:
            exact.append(False)
            near.append(False)
    m = metrics(np.array(ps), np.array(ys), head.threshold)
    m["first_harmful_exact"] = float(np.mean(exact)) if exact else float("nan")
    m["first_harmful_within_one"] = float(np.mean(near)) if near else float("nan")
    return m
