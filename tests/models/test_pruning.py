"""Pruning: constructed frames with known answers, and properties that hold for any input."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from models.pruning import (PruneParams, group_masks, patchify, prune, prune_patches, spatial_keep, target_size,
                            to_float)

P = 16


def _blank(height: int, width: int, color: tuple[int, int, int] = (255, 255, 255)) -> np.ndarray:
    f = np.empty((height, width, 3), dtype=np.uint8)
    f[:] = color
    return f


def _text(frame: np.ndarray, y: int, x: int, n_chars: int, rng: np.random.Generator,
          color: tuple[int, int, int] = (20, 20, 20)) -> None:
    """Glyph-like text: random 5x7 dot glyphs, scaled 2x."""
    for i in range(n_chars):
        glyph = np.kron(rng.random((7, 5)) < 0.45, np.ones((2, 2), dtype=bool))
        region = frame[y: y + 14, x + i * 12: x + i * 12 + 10]
        region[glyph[: region.shape[0], : region.shape[1]]] = color


def _gui_frame(rng: np.random.Generator, height: int, width: int, button: tuple[int, int] | None = None) -> np.ndarray:
    """A GUI-like screen: a header bar with text, a panel with lines of text and, optionally, a button."""
    f = _blank(height, width)
    f[:40] = (60, 90, 160)
    _text(f, 14, 10, 8, rng, color=(240, 240, 240))
    f[60: height - 20, 10: width - 10] = (235, 235, 235)
    for line in range(4):
        _text(f, 80 + line * 24, 20, int(rng.integers(6, 20)), rng)
    if button is not None:
        by, bx = button
        f[by: by + 32, bx: bx + 96] = (70, 160, 90)
        _text(f, by + 9, bx + 10, 6, np.random.default_rng(7), color=(255, 255, 255))
    return f


def test_target_size_rounds_to_patch_multiples():
    assert target_size(420, 320, 224) == (224, 176)
    assert target_size(720, 1280, 224) == (128, 224)
    assert target_size(100, 60, 224) == (96, 64)  # never upscaled, still multiples of 16


def test_patchify_round_trip():
    f = np.random.default_rng(0).integers(0, 256, (2, 32, 48, 3), dtype=np.uint8)
    p = patchify(f)
    assert p.shape == (2, 2, 3, 768)
    assert np.array_equal(p[1, 1, 2].reshape(16, 16, 3), f[1, 16:32, 32:48])


def test_flat_frame_keeps_one_token():
    frames = [_blank(128, 128, (200, 200, 200))]
    res = prune(frames, working_size=128)
    assert res.tokens_total == 64
    assert res.tokens_kept == 1  # spatially all one component, the forced token remains


def test_unchanged_frame_keeps_one_token():
    f = _gui_frame(np.random.default_rng(1), 256, 256, button=(120, 60))
    res = prune([f, f.copy()], working_size=256)
    assert res.masks[0].sum() > 1
    assert res.masks[1].sum() == 1


def test_text_survives_flat_background_goes():
    f = _gui_frame(np.random.default_rng(2), 256, 256)
    res = prune([f], working_size=256)
    m = res.masks[0]
    assert m[1, 1]  # header text (rows 14..28 px, x from 10 px) sits in patch row 0/1
    assert not m[-1, -1]  # bottom-right corner is white background
    assert res.tokens_kept < 0.5 * res.tokens_total


def test_moved_button_keeps_the_tokens_it_crossed():
    a = _blank(128, 128)
    b = _blank(128, 128)
    a[32:48, 32:48] = (0, 120, 0)  # a one-patch "button" at patch (2, 2)
    b[32:48, 80:96] = (0, 120, 0)  # moved to patch (2, 5)
    res = prune([a, b], working_size=128)
    kept = {tuple(x) for x in np.argwhere(res.masks[1])}
    assert kept == {(2, 2), (2, 5)}  # where it was (now flat: protected by its change) and where it is


def test_spatial_only_pruning_without_protection_loses_the_vacated_patch():
    a = _blank(128, 128)
    b = _blank(128, 128)
    a[32:48, 32:48] = (0, 120, 0)
    b[100:108, 100:104] = 0  # something else appears, so the forced token is not the vacated patch
    res = prune_patches(patchify(np.stack([a, b])), PruneParams(protect_change=2.0))  # protection off
    assert not res.masks[1, 2, 2]  # the ablation's failure: the cue of the button vanishing is dropped


def test_temporal_reference_is_last_kept_token():
    # A patch drifting a little per frame: each step is below tau_t against its predecessor, but against the
    # last *kept* patch the drift accumulates and it is kept again.
    base = np.full((4, 16, 16, 3), 120, dtype=np.uint8)
    base[:, :8] = 30
    frames = []
    for i in range(4):
        f = base[i].copy()
        f[8:, :] = 120 + 3 * i
        frames.append(np.tile(f, (1, 1, 1)))
    res = prune_patches(patchify(np.stack(frames)), PruneParams(tau_t=0.99999, max_component=1000))
    assert res.masks[:, 0, 0].sum() >= 2


def test_group2x2_keeps_whole_groups():
    m = np.zeros((1, 3, 5), dtype=bool)
    m[0, 0, 0] = True
    m[0, 2, 4] = True
    g = group_masks(m)
    assert g[0, :2, :2].all() and g[0, 2, 4] and g.sum() == 5


frames_st = st.integers(1, 4).flatmap(
    lambda t: st.tuples(st.integers(1, 4), st.integers(1, 4)).flatmap(
        lambda rc: arrays(np.uint8, (t, rc[0] * P, rc[1] * P, 3),
                          elements=st.sampled_from([0, 40, 128, 200, 255]))))


@settings(max_examples=40, deadline=None)
@given(frames_st, st.booleans())
def test_properties(frames, group):
    res = prune_patches(patchify(frames), PruneParams(group2x2=group))
    t, r, c = frames.shape[0], frames.shape[1] // P, frames.shape[2] // P
    assert res.masks.shape == (t, r, c) and res.masks.dtype == bool
    assert (res.masks.reshape(t, -1).sum(axis=1) >= 1).all()
    pos = res.positions()
    assert pos.shape == (res.tokens_kept, 3)
    assert (pos >= 0).all() and (pos[:, 0] < t).all() and (pos[:, 1] < r).all() and (pos[:, 2] < c).all()
    assert res.tokens_kept <= res.tokens_total
    assert np.allclose(res.tokens(), res.patches[res.masks] / 127.5 - 1.0, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(frames_st)
def test_causal_later_frames_do_not_change_earlier_masks(frames):
    full = prune_patches(patchify(frames), PruneParams()).masks
    for k in range(1, frames.shape[0]):
        head = prune_patches(patchify(frames[:k]), PruneParams()).masks
        assert np.array_equal(head, full[:k])


@settings(max_examples=30, deadline=None)
@given(frames_st)
def test_repeating_the_last_frame_adds_exactly_one_token(frames):
    a = prune_patches(patchify(frames), PruneParams())
    b = prune_patches(patchify(np.concatenate([frames, frames[-1:]])), PruneParams())
    assert b.tokens_kept == a.tokens_kept + 1


def _spatial_reference(p: np.ndarray, tau_s: float, max_component: int) -> np.ndarray:
    """The spatial rule written plainly: per frame, 4-neighbour graph on patch distance, label, size test."""
    t, r, c, _ = p.shape
    out = np.zeros((t, r, c), bool)
    for f in range(t):
        parent = list(range(r * c))

        def find(i: int) -> int:
            while parent[i] != i:
                i = parent[i]
            return i

        for i in range(r):
            for j in range(c):
                for di, dj in ((0, 1), (1, 0)):
                    if i + di < r and j + dj < c and np.linalg.norm(p[f, i, j] - p[f, i + di, j + dj]) < tau_s:
                        parent[find(i * c + j)] = find((i + di) * c + j + dj)
        roots = np.array([find(k) for k in range(r * c)])
        sizes = np.bincount(roots, minlength=r * c)
        out[f] = (sizes[roots] <= max_component).reshape(r, c)
    return out


@settings(max_examples=40, deadline=None)
@given(frames_st, st.integers(1, 6))
def test_spatial_keep_equals_the_plain_rule(frames, max_component):
    # The fast version shifts a flat array by one patch and by one row: pairs that wrap across a row end or a
    # frame boundary must never be joined.
    p = to_float(patchify(frames))
    assert np.array_equal(spatial_keep(p, 3.0, max_component), _spatial_reference(p, 3.0, max_component))


def test_unpatchify_inverts_patchify():
    from models.pruning import patchify, unpatchify

    frames = np.random.default_rng(0).integers(0, 256, (3, 48, 32, 3), dtype=np.uint8)
    patches = patchify(frames, 16)
    assert patches.shape == (3, 3, 2, 768)
    assert np.array_equal(unpatchify(patches, 16), frames)
