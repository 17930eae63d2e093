"""Spatiotemporal token pruning for GUI recordings (numpy, vectorised; runs before the network).

The method (``/work/shared/REWARD_MODEL.md``, after ExeVRM):

* frames are resized so the long side is at most the working size, cut into 16x16 patches, scaled to [-1, 1];
* **spatial**: 4-neighbour patches whose pixel vectors are closer than ``tau_s`` (L2) are connected; every patch
  of a connected component larger than ``max_component`` patches is dropped (backgrounds, empty panels);
* **temporal**: every token of the first frame is kept; a later token is dropped when its cosine similarity with
  the *last kept* token at the same position exceeds ``tau_t``, otherwise it is kept and becomes the new
  reference;
* keep = temporal AND (spatial OR large temporal change): the ablation warns that spatial pruning alone drops
  weak but decisive cues, so a patch that changed a lot (``1 - cos > protect_change``) survives even inside a
  flat region (a button that disappeared leaves flat background behind, and that is evidence);
* at least one token per frame (the one with the largest change) so every step stays visible;
* optionally 2x2 grouping: a group is kept when any of its patches is.

Kept tokens keep their (frame, row, col) positions for the network's position embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

_EPS = 1e-6


@dataclass
class PruneParams:
    """Pruning thresholds (the reference values of the method are the defaults)."""

    tau_s: float = 3.0
    max_component: int = 40
    tau_t: float = 0.9999
    protect_change: float = 0.02
    group2x2: bool = False


class MaskedTokens:
    """Token counts of anything holding ``masks``: a ``(T, R, C)`` bool array, True where a token is kept."""

    masks: np.ndarray

    @property
    def tokens_total(self) -> int:
        return int(self.masks.size)

    @property
    def tokens_kept(self) -> int:
        return int(self.masks.sum())


@dataclass
class PruneResult(MaskedTokens):
    """The outcome of pruning one trajectory's keyframes.

    Attributes:
        patches: ``(T, R, C, D)`` uint8 pixel values of every patch (D = patch*patch*3), before pruning.
        masks: ``(T, R, C)`` bool, True where the token is kept.
        change: ``(T, R, C)`` float32 temporal change ``1 - cos`` against the reference (patch std for frame 0).
    """

    patches: np.ndarray
    masks: np.ndarray
    change: np.ndarray

    @property
    def grid(self) -> tuple[int, int]:
        return int(self.masks.shape[1]), int(self.masks.shape[2])

    def positions(self) -> np.ndarray:
        """``(K, 3)`` int64 (frame, row, col) of the kept tokens, in frame-major raster order."""
        return np.argwhere(self.masks).astype(np.int64)

    def tokens(self) -> np.ndarray:
        """``(K, D)`` float32 kept tokens in [-1, 1], in the order of :meth:`positions`."""
        return to_float(self.patches[self.masks])


def target_size(height: int, width: int, working_size: int, patch: int = 16) -> tuple[int, int]:
    """(height, width) after scaling the long side to at most ``working_size``, each a multiple of ``patch``."""
    scale = min(1.0, working_size / max(height, width))
    h = max(patch, int(round(height * scale / patch)) * patch)
    w = max(patch, int(round(width * scale / patch)) * patch)
    return h, w



def patchify(frames: np.ndarray, patch: int = 16) -> np.ndarray:
    """``(T, H, W, 3)`` uint8 -> ``(T, H/p, W/p, p*p*3)`` uint8 patches (row-major pixels, RGB interleaved)."""
    t, h, w, c = frames.shape
    r, cc = h // patch, w // patch
    x = frames[:, : r * patch, : cc * patch].reshape(t, r, patch, cc, patch, c)
    return np.ascontiguousarray(x.transpose(0, 1, 3, 2, 4, 5).reshape(t, r, cc, patch * patch * c))


def unpatchify(patches: np.ndarray, patch: int = 16) -> np.ndarray:
    """The inverse of :func:`patchify`: ``(T, R, C, p*p*3)`` patches -> ``(T, R*p, C*p, 3)`` frames (a view
    where numpy can give one)."""
    t, r, c, _ = patches.shape
    return patches.reshape(t, r, c, patch, patch, 3).transpose(0, 1, 3, 2, 4, 5).reshape(t, r * patch, c * patch, 3)


def to_float(patches: np.ndarray) -> np.ndarray:
    """uint8 pixels -> float32 in [-1, 1] (same shape)."""
    out = np.multiply(patches, np.float32(2.0 / 255.0), dtype=np.float32)  # one pass, no float64 temporary
    out -= 1.0
    return out


def _row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot product of two ``(N, D)`` arrays (one pass, no temporary)."""
    return np.einsum("nd,nd->n", a, b)


def spatial_keep(p: np.ndarray, tau_s: float, max_component: int, sq_norms: np.ndarray | None = None
                 ) -> np.ndarray:
    """``(T, R, C, D)`` float patches -> ``(T, R, C)`` bool: False for patches of large homogeneous components.

    Neighbour distances come from ``|a|^2 + |b|^2 - 2 a.b`` on the flat ``(T*R*C, D)`` array shifted by one
    (right neighbour) and by ``C`` (neighbour below): one pass over the pixels per direction, no difference
    array; the pairs that wrap across a row or a frame are masked out. ``sq_norms`` (``T*R*C`` squared patch
    norms) can be passed when already computed.

    The components of that graph come from one OpenCV labelling of all frames at once: each frame is drawn at
    twice its grid size, a patch at ``(2i, 2j)``, an edge to its right neighbour at ``(2i, 2j + 1)`` and one to
    the patch below at ``(2i + 1, 2j)``; the odd-odd cells and each frame's last row stay empty, so two patches
    are 4-connected in the drawing exactly when the graph joins them (the same components as SciPy's
    ``connected_components`` on the sparse graph; the desktop bundle carries no SciPy).
    """
    t, r, c, d = p.shape
    n = t * r * c
    flat = p.reshape(n, d)
    sq = _row_dot(flat, flat) if sq_norms is None else sq_norms.reshape(n)
    idx = np.arange(n)
    img = np.zeros((t, 2 * r, 2 * c), np.uint8)
    img[:, 0::2, 0::2] = 1
    for shift, valid, cells in ((1, (idx % c) < c - 1, img[:, 0::2, 1::2]),
                                (c, (idx % (r * c)) < (r - 1) * c, img[:, 1::2, 0::2])):
        if n <= shift:
            continue
        dist2 = sq[shift:] + sq[:-shift] - 2.0 * _row_dot(flat[shift:], flat[:-shift])
        edge = np.zeros(n, bool)
        edge[:-shift] = (dist2 < tau_s * tau_s) & valid[:-shift]  # edge[k]: patch k joined to patch k + shift
        cells[edge.reshape(t, r, c)] = 1
    _, lab = cv2.connectedComponents(img.reshape(t * 2 * r, 2 * c), connectivity=4, ltype=cv2.CV_32S)
    labels = lab.reshape(t, 2 * r, 2 * c)[:, 0::2, 0::2]
    sizes = np.bincount(labels.ravel())
    return sizes[labels] <= max_component


def temporal_keep(p: np.ndarray, tau_t: float, sq_norms: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(T, R, C, D)`` float patches -> (keep ``(T, R, C)`` bool, change ``(T, R, C)`` float32).

    Frame 0 is kept whole. Later tokens compare with the last *kept* token at the same position (so a slow
    drift cannot hide behind a chain of nearly equal neighbours). ``change`` is ``1 - cos`` against that
    reference; for frame 0, where there is no reference, it is the patch's standard deviation (how much is
    drawn in it), used only to pick the forced token of a frame. ``sq_norms`` as in :func:`spatial_keep`.
    """
    t, r, c, d = p.shape
    flat = p.reshape(t, r * c, d)
    sq = _row_dot(p.reshape(-1, d), p.reshape(-1, d)) if sq_norms is None else sq_norms
    norms = np.sqrt(sq).reshape(t, r * c)
    keep = np.zeros((t, r * c), dtype=bool)
    change = np.zeros((t, r * c), dtype=np.float32)
    keep[0] = True
    change[0] = flat[0].std(axis=-1)
    ref = flat[0].copy()  # (R*C, D) last kept token per position
    ref_norm = norms[0].copy()
    for i in range(1, t):
        cos = _row_dot(flat[i], ref) / (norms[i] * ref_norm + _EPS)
        k = cos <= tau_t
        keep[i] = k
        change[i] = 1.0 - cos
        ref[k] = flat[i][k]
        ref_norm[k] = norms[i][k]
    return keep.reshape(t, r, c), change.reshape(t, r, c)


def group_masks(masks: np.ndarray) -> np.ndarray:
    """Expand kept patches to their whole 2x2 group (a group is kept when any patch in it is)."""
    t, r, c = masks.shape
    pr, pc = r + r % 2, c + c % 2
    m = np.zeros((t, pr, pc), dtype=bool)
    m[:, :r, :c] = masks
    g = m.reshape(t, pr // 2, 2, pc // 2, 2).any(axis=(2, 4))
    return np.repeat(np.repeat(g, 2, axis=1), 2, axis=2)[:, :r, :c]


def prune_patches(patches: np.ndarray, params: PruneParams) -> PruneResult:
    """Prune ``(T, R, C, D)`` uint8 patches; see the module docstring for the rule."""
    p = to_float(patches)
    sq = _row_dot(p.reshape(-1, p.shape[-1]), p.reshape(-1, p.shape[-1]))  # squared norms, shared by both rules
    spatial = spatial_keep(p, params.tau_s, params.max_component, sq)
    temporal, change = temporal_keep(p, params.tau_t, sq)
    protected = change > params.protect_change
    protected[0] = False  # frame 0's "change" is patch std, not a temporal change
    masks = temporal & (spatial | protected)
    empty = ~masks.any(axis=(1, 2))
    if empty.any():
        t, r, c = masks.shape
        best = change.reshape(t, r * c).argmax(axis=1)  # (T,) the largest change of each frame
        for i in np.flatnonzero(empty):
            masks[i, best[i] // c, best[i] % c] = True
    if params.group2x2:
        masks = group_masks(masks)
    return PruneResult(patches=patches, masks=masks, change=change)


def keep_all(patches: np.ndarray) -> PruneResult:
    """The unpruned counterpart of :func:`prune_patches`: every token kept."""
    t, r, c, _ = patches.shape
    return PruneResult(patches=patches, masks=np.ones((t, r, c), dtype=bool),
                       change=np.zeros((t, r, c), dtype=np.float32))


def frames_to_patches(frames: list[np.ndarray] | np.ndarray, working_size: int, patch: int = 16) -> np.ndarray:
    """Resize RGB frames to the working grid and cut them into uint8 patches ``(T, R, C, D)``.

    Frames of different sizes are all resized to the first frame's grid (a recording does not change size;
    screenshots occasionally differ by a few pixels).
    """
    if len(frames) == 0:
        raise ValueError("no frames to patchify")
    h, w = target_size(frames[0].shape[0], frames[0].shape[1], working_size, patch)
    out = np.empty((len(frames), h, w, 3), dtype=np.uint8)
    for i, f in enumerate(frames):
        out[i] = f if f.shape[:2] == (h, w) else cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA)
    return patchify(out, patch)


def prune(frames: list[np.ndarray] | np.ndarray, working_size: int = 224, patch: int = 16,
          params: PruneParams | None = None, enabled: bool = True) -> PruneResult:
    """Resize, patchify and prune a sequence of RGB keyframes.

    Args:
        frames: ``T`` frames ``(H, W, 3)`` uint8 RGB, in time order.
        working_size: long side after resizing.
        patch: patch side in pixels.
        params: thresholds (reference values when None).
        enabled: False keeps every token (the unpruned baseline), with the same resize and patching.

    Returns:
        A :class:`PruneResult` (kept tokens, their positions and the per-frame masks).
    """
    patches = frames_to_patches(frames, working_size, patch)
    return prune_patches(patches, params or PruneParams()) if enabled else keep_all(patches)
