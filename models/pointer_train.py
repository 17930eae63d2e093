"""Train the pointer detector on real cursor themes pasted onto pointer-free screens, then export it to ONNX.

Every example is made on the fly: a screen recorded without a pointer (any recorder, any app), rescaled as a
display of another size or device scale would show it, recoloured (hue, brightness, inversion) so that no colour
scheme is special, and in most examples a pointer from an installed Xcursor theme (arrow, hand or I-beam, at a
random nominal size and scale) blended at a random place. The target is a Gaussian at the hotspot on the
stride-4 grid; the loss is CenterNet's focal loss. Themes are split by name, so a detector trained on some themes
is measured on themes it never saw.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch

from gui_app.training.cursors import ROLE_NAMES, CursorImage, XcursorError, cursor_image, draw_image, installed_themes
from models.pointer import POINTER_FEATURE_VERSION, STRIDE, PointerDetector, prepare
from models.pointer_net import PointerNet, PointerNetConfig

CROP = 128
SIZES = (16, 24, 32, 48, 64)


@dataclass
class Example:
    image: np.ndarray  # (3, CROP, CROP) float32
    heat: np.ndarray  # (CROP/4, CROP/4) float32 target
    has_pointer: bool


def load_backgrounds(paths: Sequence[str | Path], limit: int = 4000, seed: int = 0) -> list[np.ndarray]:
    """RGB images from the given files (a random subset of at most ``limit``)."""
    files = list(paths)
    random.Random(seed).shuffle(files)
    out = []
    for p in files[:limit]:
        img = cv2.imread(str(p), cv2.IMREAD_COLOR)
        if img is not None and min(img.shape[:2]) >= 64:
            out.append(cv2.cvtColor(img, cv2.COLOR_BGR2RGB))
    return out


def cursor_bank(themes: Sequence[str]) -> list[CursorImage]:
    """The arrow, hand and I-beam of every given theme at every size of :data:`SIZES`."""
    bank = []
    for theme in themes:
        for role in ROLE_NAMES:
            for size in SIZES:
                try:
                    bank.append(cursor_image(theme, role, size))
                except XcursorError:
                    break
    return bank


def _place(frame: np.ndarray, rng: random.Random) -> tuple[float, float]:
    """Where to put the pointer: anywhere half the time, else on something (an edge, a glyph): an agent's pointer
    rests on what it clicked or typed into, and a pointer over text and borders is the hard case."""
    h, w = frame.shape[:2]
    if rng.random() < 0.5:
        return rng.uniform(0, w - 1), rng.uniform(0, h - 1)
    g = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    edges = np.argwhere(cv2.morphologyEx(g, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)) > 60)
    if not len(edges):
        return rng.uniform(0, w - 1), rng.uniform(0, h - 1)
    y, x = edges[rng.randrange(len(edges))]
    return float(x) + rng.uniform(-3, 3), float(y) + rng.uniform(-3, 3)


def _scaled(cur: CursorImage, f: float) -> CursorImage:
    """A cursor image resized by ``f`` (a device scale factor), hotspot scaled with it."""
    if f == 1.0:
        return cur
    h, w = cur.rgba.shape[:2]
    rgba = cv2.resize(cur.rgba, (max(1, round(w * f)), max(1, round(h * f))),
                      interpolation=cv2.INTER_AREA if f < 1 else cv2.INTER_LINEAR)
    return CursorImage(rgba, round(cur.xhot * f), round(cur.yhot * f), cur.nominal)


def _recolour(img: np.ndarray, rng: random.Random) -> np.ndarray:
    if rng.random() < 0.5:
        hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV)
        hsv[..., 0] = (hsv[..., 0].astype(np.int32) + rng.randint(0, 179)) % 180
        img = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)
    if rng.random() < 0.15:
        img = 255 - img
    if rng.random() < 0.3:
        a, b = rng.uniform(0.7, 1.2), rng.uniform(-30, 30)
        img = np.clip(img.astype(np.float32) * a + b, 0, 255).astype(np.uint8)
    return img


def _gaussian(h: int, w: int, cy: float, cx: float, sigma: float = 1.0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * sigma ** 2)).astype(np.float32)


def make_example(bg: np.ndarray, bank: Sequence[CursorImage], rng: random.Random, p_pointer: float = 0.8) -> Example:
    """One training example (see the module docstring)."""
    frame = _recolour(bg, rng)
    r = rng.choice((0.5, 0.75, 1.0, 1.0, 1.5, 2.0, 3.0))
    h, w = frame.shape[:2]
    if max(h, w) * r > 2200:
        r = 2200 / max(h, w)
    if r != 1.0:
        frame = cv2.resize(frame, (max(16, int(w * r)), max(16, int(h * r))),
                           interpolation=cv2.INTER_AREA if r < 1 else cv2.INTER_LINEAR)
    frame = np.ascontiguousarray(frame)
    h, w = frame.shape[:2]
    hot = None
    if rng.random() < p_pointer:
        cur = rng.choice(bank)
        cscale = rng.choice((0.75, 1.0, 1.0, 1.25, 1.5, 2.0))
        x, y = _place(frame, rng)
        draw_image(frame, _scaled(cur, cscale), x, y)
        hot = (x, y)
    img, s = prepare(frame)
    _, H, W = img.shape
    gh, gw = H // STRIDE, W // STRIDE
    heat = np.zeros((gh, gw), np.float32)
    if hot is not None:
        # the peak sits exactly on the cell holding the hotspot (value 1.0): the focal loss's positives
        cy = min(gh - 1, max(0, int(hot[1] * s / STRIDE)))
        cx = min(gw - 1, max(0, int(hot[0] * s / STRIDE)))
        heat = _gaussian(gh, gw, cy, cx)
    # crop CROP x CROP (padding small inputs), containing the hotspot most of the time
    pad_h, pad_w = max(0, CROP - H), max(0, CROP - W)
    if pad_h or pad_w:
        img = np.pad(img, ((0, 0), (0, pad_h), (0, pad_w)), mode="edge")
        heat = np.pad(heat, ((0, pad_h // STRIDE), (0, pad_w // STRIDE)))
        H, W = img.shape[1:]
    if hot is not None and rng.random() < 0.85:
        hy, hx = int(hot[1] * s), int(hot[0] * s)
        y0 = rng.randint(*_span(hy, H))
        x0 = rng.randint(*_span(hx, W))
    else:
        y0, x0 = rng.randint(0, H - CROP), rng.randint(0, W - CROP)
    y0, x0 = y0 // STRIDE * STRIDE, x0 // STRIDE * STRIDE
    img = img[:, y0:y0 + CROP, x0:x0 + CROP]
    heat = heat[y0 // STRIDE:(y0 + CROP) // STRIDE, x0 // STRIDE:(x0 + CROP) // STRIDE]
    return Example(np.ascontiguousarray(img), np.ascontiguousarray(heat), bool(heat.max() > 0.5))


def _span(c: int, size: int) -> tuple[int, int]:
    """Range of crop origins that keep coordinate ``c`` at least 16 px inside a crop of a ``size``-long side."""
    hi_max = size - CROP
    lo = min(max(0, c - CROP + 16), hi_max)
    hi = min(max(0, c - 16), hi_max)
    return min(lo, hi), max(lo, hi)


def focal_loss(logits: torch.Tensor, target: torch.Tensor, alpha: float = 2.0, beta: float = 4.0) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss; logits and target (B, H, W)."""
    p = torch.sigmoid(logits).clamp(1e-4, 1 - 1e-4)
    pos = (target > 0.99).float()
    pos_loss = -torch.log(p) * (1 - p) ** alpha * pos
    neg_loss = -torch.log(1 - p) * p ** alpha * (1 - target) ** beta * (1 - pos)
    n = pos.sum().clamp(min=1.0)
    return (pos_loss.sum() + neg_loss.sum()) / n


def train(backgrounds: list[np.ndarray], themes: Sequence[str], out: str | Path, steps: int = 3000,
          batch: int = 32, lr: float = 3e-3, seed: int = 0, threads: int = 2, log_every: int = 100,
          init: str | Path | None = None) -> Path:
    """Train, export ``out/pointer.onnx`` (checked against torch) and return its path."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = random.Random(seed)
    bank = cursor_bank(themes)
    if not bank:
        raise ValueError(f"no cursor images in themes {list(themes)}")
    net = PointerNet(PointerNetConfig())
    if init:  # continue from an earlier detector (same architecture)
        net.load_state_dict(torch.load(init, map_location="cpu", weights_only=False)["state_dict"])
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    t0 = time.time()
    for step in range(steps):
        exs = [make_example(rng.choice(backgrounds), bank, rng) for _ in range(batch)]
        x = torch.from_numpy(np.stack([e.image for e in exs]))
        y = torch.from_numpy(np.stack([e.heat for e in exs]))
        loss = focal_loss(net(x)[:, 0], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step} loss {loss.item():.4f} {time.time() - t0:.0f}s", flush=True)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": net.state_dict(), "config": net.cfg.to_dict(), "themes": list(themes),
                "feature_version": POINTER_FEATURE_VERSION}, out / "pointer.pt")
    return export(net, out / "pointer.onnx")


def export(net: PointerNet, path: str | Path, atol: float = 1e-4) -> Path:
    """Export with dynamic batch/height/width, check the graph and compare onnxruntime with torch."""
    import onnx

    net.eval()
    x = torch.zeros(1, 3, 64, 96)
    torch.onnx.export(net, (x,), str(path), input_names=["image"], output_names=["heat"], opset_version=17,
                      dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"},
                                    "heat": {0: "batch", 2: "h4", 3: "w4"}}, dynamo=False)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    probe = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (2, 3, 120, 200)).astype(np.float32))
    with torch.no_grad():
        ref = net(probe).numpy()
    got = PointerDetector(path).session.run(None, {"image": probe.numpy()})[0]
    err = float(np.abs(ref - got).max())
    if err > atol:
        raise RuntimeError(f"{path}: onnxruntime differs from torch by {err:.2e} (> {atol:g})")
    return Path(path)


def evaluate(detector: PointerDetector, backgrounds: list[np.ndarray], themes: Sequence[str], n: int = 400,
             seed: int = 1, radius: float = 10.0) -> dict[str, float]:
    """Hit rate (peak within ``radius`` px of the hotspot) on pointers of ``themes`` and the peak scores on
    pointer-free frames, at the thresholds that matter."""
    rng = random.Random(seed)
    bank = cursor_bank(themes)
    pos_scores, hits, neg_scores = [], [], []
    for i in range(n):
        frame = _recolour(rng.choice(backgrounds), rng).copy()
        h, w = frame.shape[:2]
        r = rng.choice((1.0, 1.5, 2.0))
        frame = np.ascontiguousarray(cv2.resize(frame, (int(w * r), int(h * r)))) if r != 1 else frame
        h, w = frame.shape[:2]
        if i % 2 == 0:
            cur = rng.choice(bank)
            x, y = rng.uniform(4, w - 5), rng.uniform(4, h - 5)
            draw_image(frame, _scaled(cur, rng.choice((1.0, 1.5))), x, y)
            hit = detector.detect([frame])[0]
            pos_scores.append(hit.score)
            hits.append(math.hypot(hit.x - x, hit.y - y) <= radius * max(1.0, r))
        else:
            neg_scores.append(detector.detect([frame])[0].score)
    pos, located, neg = np.array(pos_scores), np.array(hits), np.array(neg_scores)
    out = {"n_pos": float(len(pos)), "n_neg": float(len(neg))}
    for thr in (0.3, 0.5, 0.7):
        out[f"recall@{thr}"] = float(((pos >= thr) & located).mean())
        out[f"false_pos@{thr}"] = float((neg >= thr).mean())
    out["located"] = float(located.mean())
    return out


#: Theme families never shown to the detector: its unseen-theme figures are measured on them.
HELD_OUT_FAMILIES = ("bibata", "dmz", "glass")
#: The themes of the recorder's style family B (gui_app/recorders/styles.py), the foreign split's look: never
#: shown to the detector either, so the reward model's cross table is honest about pointers too.
FAMILY_B_THEMES = ("DMZ-Black", "whiteglass", "Breeze_Snow", "Chameleon-Anthracite-Regular", "Bibata-Modern-Classic",
                   "Bibata-Original-Ice", "ComixCursors-Opaque-Black", "crystalgray")


def theme_family(theme: str) -> str:
    """A theme's family: its designer's set (``crystalblue`` and ``crystalgray`` are one family)."""
    t = theme.lower()
    for fam in ("bibata", "breeze", "chameleon", "comix", "crystal", "dmz", "oxy", "glass", "handhelds",
                "adwaita"):
        if t.startswith(fam) or t.endswith(fam):
            return fam
    return t


def split_themes(themes: Sequence[str]) -> tuple[list[str], list[str]]:
    """(train, held-out) themes: whole families are held out."""
    test = [t for t in themes if theme_family(t) in HELD_OUT_FAMILIES or t in FAMILY_B_THEMES]
    return [t for t in themes if t not in test], test


if __name__ == "__main__":
    import argparse
    import glob

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backgrounds", required=True, nargs="+",
                    help="globs of pointer-free screenshots; each glob is sampled as often as the others")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1: on a busy 2-core machine two threads made each step ten times slower)")
    ap.add_argument("--init", default=None, help="pointer.pt of an earlier run to continue from")
    a = ap.parse_args()
    groups = [load_backgrounds(sorted(glob.glob(g, recursive=True)), seed=a.seed) for g in a.backgrounds]
    val_bgs, train_bgs = [], []
    for grp in groups:  # a tenth of each group for validation, the rest balanced across groups
        n_val = max(1, len(grp) // 10)
        val_bgs += grp[:n_val]
    most = max(len(g) - max(1, len(g) // 10) for g in groups)
    for grp in groups:
        rest = grp[max(1, len(grp) // 10):] or grp
        train_bgs += (rest * (most // len(rest) + 1))[:most]
    train_themes, test_themes = split_themes(installed_themes())
    print(f"{len(train_bgs)} backgrounds, {len(train_themes)} train themes, held out: {test_themes}")
    path = train(train_bgs, train_themes, a.out, steps=a.steps, seed=a.seed, lr=a.lr, init=a.init, threads=a.threads)
    det = PointerDetector(path)
    report = {"seen_themes": evaluate(det, val_bgs, train_themes), "unseen_themes": evaluate(det, val_bgs, test_themes)}
    print(json.dumps(report, indent=1))
    (Path(a.out) / "pointer_eval.json").write_text(json.dumps(report, indent=1))
