"""The scorer's path runs without SciPy (the desktop bundle leaves it out, 73 MiB): pruning's components, the
perceiver's changed areas and acting point, and alignment's sliding minimum give SciPy's numbers exactly, on the
bundled samples' real screens and on random input. SciPy stays an install dependency (training uses it), so it is
the reference here."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import ndimage
from scipy.ndimage import minimum_filter1d
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from gui_app.core.trajectory.align import sliding_min
from models.perception import PerceptionConfig, _grey_patches, _largest_centre, _regions
from models.pruning import PruneParams, _row_dot, frames_to_patches, prune_patches, spatial_keep, to_float

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def _runs() -> list[list[np.ndarray]]:
    """Each sample run's screenshots, RGB, in step order (runs with frames of one size)."""
    runs = []
    for folder in sorted(SAMPLES.rglob("frames")):
        shots = sorted(folder.glob("*.png"), key=lambda f: (f.name != "initial.png", f.name))
        frames = [cv2.cvtColor(cv2.imread(str(f), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB) for f in shots]
        if len(frames) >= 2 and len({f.shape for f in frames}) == 1:
            runs.append(frames)
    return runs


RUNS = _runs()


def test_the_samples_have_screens():
    assert len(RUNS) >= 5 and sum(len(r) for r in RUNS) >= 30


# --- pruning: components of the 4-neighbour patch graph -----------------------------------------------------------

def _scipy_spatial_keep(p: np.ndarray, tau_s: float, max_component: int) -> np.ndarray:
    """spatial_keep as it was written with SciPy: one sparse graph of every frame, connected_components."""
    t, r, c, d = p.shape
    n = t * r * c
    flat = p.reshape(n, d)
    sq = _row_dot(flat, flat)
    idx = np.arange(n)
    pairs_a, pairs_b = [], []
    for shift, valid in ((1, (idx % c) < c - 1), (c, (idx % (r * c)) < (r - 1) * c)):
        if n <= shift:
            continue
        dist2 = sq[shift:] + sq[:-shift] - 2.0 * _row_dot(flat[shift:], flat[:-shift])
        a = np.flatnonzero((dist2 < tau_s * tau_s) & valid[:-shift])
        pairs_a.append(a)
        pairs_b.append(a + shift)
    a = np.concatenate(pairs_a) if pairs_a else np.zeros(0, np.int64)
    b = np.concatenate(pairs_b) if pairs_b else np.zeros(0, np.int64)
    graph = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=False)
    sizes = np.bincount(labels)
    return (sizes[labels] <= max_component).reshape(t, r, c)


@pytest.mark.parametrize("working_size", [224, 512])
def test_pruning_masks_equal_scipys_on_the_sample_screens(working_size, monkeypatch):
    params = PruneParams()
    for frames in RUNS:
        patches = frames_to_patches(frames, working_size)
        p = to_float(patches)
        for tau_s, max_component in ((params.tau_s, params.max_component), (1.0, 4), (8.0, 200)):
            want = _scipy_spatial_keep(p, tau_s, max_component)
            assert np.array_equal(spatial_keep(p, tau_s, max_component), want)
        got = prune_patches(patches, params).masks
        monkeypatch.setattr("models.pruning.spatial_keep",
                            lambda q, tau, mc, sq_norms=None: _scipy_spatial_keep(q, tau, mc))
        want_masks = prune_patches(patches, params).masks
        monkeypatch.undo()
        assert np.array_equal(got, want_masks)


@settings(max_examples=60, deadline=None)
@given(arrays(np.int8, st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 6), st.integers(1, 3)),
              elements=st.integers(0, 3)), st.sampled_from([0.5, 1.5, 3.0]), st.integers(1, 8))
def test_spatial_keep_equals_scipys_on_random_patches(q, tau_s, max_component):
    p = q.astype(np.float32)
    assert np.array_equal(spatial_keep(p, tau_s, max_component), _scipy_spatial_keep(p, tau_s, max_component))


# --- perception: changed areas and the largest change's centre ------------------------------------------------------

def _scipy_regions(changed, act, scale, p, h, w):
    out = []
    if changed.any():
        grown = ndimage.binary_dilation(changed, iterations=1)
        lab, _ = ndimage.label(grown)
        for sl in ndimage.find_objects(lab):
            out.append((int(sl[1].start * p / scale), int(sl[0].start * p / scale),
                        int(np.ceil(sl[1].stop * p / scale)), int(np.ceil(sl[0].stop * p / scale))))
    if act is not None:
        bw, bh = max(160, w // 4), max(48, h // 12)
        out.append((int(act[0] - bw), int(act[1] - bh), int(act[0] + bw), int(act[1] + bh)))
    return [(max(0, x0), max(0, y0), min(w, x1), min(h, y1)) for x0, y0, x1, y1 in out if x1 > x0 and y1 > y0]


def _scipy_centre(changed):
    lab, n = ndimage.label(changed)
    sizes = ndimage.sum(changed, lab, range(1, n + 1))
    big = int(np.argmax(sizes)) + 1
    return ndimage.center_of_mass(changed, lab, big)


def _check_grid(changed: np.ndarray, scale: float, p: int, h: int, w: int) -> None:
    assert _regions(changed, None, scale, p, h, w) == _scipy_regions(changed, None, scale, p, h, w)
    assert _regions(changed, (w / 3, h / 2), scale, p, h, w) == _scipy_regions(changed, (w / 3, h / 2), scale, p, h, w)
    if changed.any():
        cy, cx = _largest_centre(changed)
        want_y, want_x = _scipy_centre(changed)
        assert (cy, cx) == (float(want_y), float(want_x))  # exactly, not approximately


def test_changed_areas_and_centre_equal_scipys_on_the_sample_screens():
    cfg = PerceptionConfig()
    p = cfg.patch
    n_grids = 0
    for frames in RUNS:
        patches = frames_to_patches(frames, cfg.working_size, p)
        grey = _grey_patches(patches, p).astype(np.int16)
        masks = prune_patches(patches, cfg.prune).masks
        diff = np.abs(grey[1:] - grey[:-1]).mean(axis=(3, 4))
        h, w = frames[0].shape[:2]
        scale = masks.shape[1] * p / h
        for k in range(len(diff)):
            for level in (cfg.change_level, 1.0, 30.0):
                for changed in (diff[k] > level, (diff[k] > level) & masks[k + 1]):
                    _check_grid(changed, scale, p, h, w)
                    n_grids += changed.any()
    assert n_grids >= 50


@settings(max_examples=80, deadline=None)
@given(arrays(np.bool_, st.tuples(st.integers(1, 12), st.integers(1, 12))))
def test_changed_areas_and_centre_equal_scipys_on_random_grids(changed):
    _check_grid(changed, 0.5, 16, changed.shape[0] * 32, changed.shape[1] * 32)


# --- alignment: the sliding minimum ---------------------------------------------------------------------------------

def _scipy_sliding_min(row: np.ndarray, n: int) -> np.ndarray:
    padded = np.concatenate([row, np.full(n, np.inf)])
    return minimum_filter1d(padded, size=n, mode="constant", cval=np.inf, origin=-(n // 2))[: len(row)]


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.integers(1, 60), elements=st.floats(0, 2)), st.integers(1, 70))
def test_sliding_min_equals_scipys(row, n):
    n = min(n, len(row) + 5)
    assert np.array_equal(sliding_min(row, n), _scipy_sliding_min(row, n))
