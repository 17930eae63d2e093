"""The arrow pointer that Rollscope's recorders draw on their frames: a published, versioned asset.

The MiniWoB recorder draws it at the agent's pointer (headless Chromium shows none), and the model's pointer
features have been trained against recordings that carry it; keeping the sprite here, in the core, means neither
side holds a private copy of what the other must see. Changing the sprite is a new ``POINTER_VERSION``.
"""

from __future__ import annotations

import numpy as np

POINTER_VERSION = 1

# A classic arrow pointer, 12x19 at 1x: 'X' outline (black), '.' fill (white); the hotspot is the top-left tip.
ARROW = (
    "X           ",
    "XX          ",
    "X.X         ",
    "X..X        ",
    "X...X       ",
    "X....X      ",
    "X.....X     ",
    "X......X    ",
    "X.......X   ",
    "X........X  ",
    "X.........X ",
    "X......XXXXX",
    "X...X..X    ",
    "X..XX..X    ",
    "X.X  X..X   ",
    "XX   X..X   ",
    "X     X..X  ",
    "      X..X  ",
    "       XX   ",
)


def cursor_sprite(scale: int) -> tuple[np.ndarray, np.ndarray]:
    """The arrow cursor at ``scale``: (outline mask, fill mask), both (H, W) bool, hotspot at (0, 0)."""
    grid = np.array([list(row) for row in ARROW])
    outline = np.kron(grid == "X", np.ones((scale, scale), dtype=bool))
    fill = np.kron(grid == ".", np.ones((scale, scale), dtype=bool))
    return outline, fill


def draw_cursor(frame: np.ndarray, x: float, y: float, scale: int) -> np.ndarray:
    """Draw the arrow cursor with its tip at frame pixel (x, y); clipped at the frame edges. Returns ``frame``."""
    outline, fill = cursor_sprite(scale)
    h, w = frame.shape[:2]
    x0, y0 = int(round(x)), int(round(y))
    sh, sw = outline.shape
    ys, xs = slice(max(0, y0), min(h, y0 + sh)), slice(max(0, x0), min(w, x0 + sw))
    if ys.start >= ys.stop or xs.start >= xs.stop:
        return frame
    oy, ox = ys.start - y0, xs.start - x0
    sub_o = outline[oy:oy + ys.stop - ys.start, ox:ox + xs.stop - xs.start]
    sub_f = fill[oy:oy + ys.stop - ys.start, ox:ox + xs.stop - xs.start]
    region = frame[ys, xs]
    region[sub_o] = (0, 0, 0)
    region[sub_f] = (255, 255, 255)
    return frame


