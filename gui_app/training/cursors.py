"""Mouse pointers from the X cursor themes installed on this machine (Xcursor files), drawn onto frames.

Headless Chromium paints no pointer, so the recorder draws one; the reward model's pointer detector learns what
pointers look like from the same themes (a core module: both floors read it, neither owns it). A reward model that
met only one sprite learns that sprite (model v1 did); real recordings show whatever theme the desktop had, at the
size the desktop asked for, as an arrow, a hand over links or an I-beam over text. This module reads the real
themes from ``/usr/share/icons/<theme>/cursors/`` (Debian packages such as ``dmz-cursor-theme``,
``xcursor-themes``, ``breeze-cursor-theme``) and renders them with their own hotspots and alpha.

Xcursor file format (``man 3 Xcursor``): a header ``"Xcur"``, header size, version, ``ntoc``; ``ntoc`` table
entries ``(type, subtype, position)``; an image chunk (type ``0xfffd0002``, subtype = nominal size) holds
``header, type, subtype, version, width, height, xhot, yhot, delay`` then ``width*height`` premultiplied ARGB
pixels (little-endian uint32). Animated cursors have several images per size: the first frame is used.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gui_app.core.errors import RollscopeError

ICON_DIRS = (Path("/usr/share/icons"), Path.home() / ".icons")
IMAGE_TYPE = 0xFFFD0002
#: Cursor names per role, in order of preference (X core names first, then the CSS-style names newer themes use).
ROLE_NAMES = {
    "arrow": ("left_ptr", "default", "arrow", "top_left_arrow"),
    "hand": ("hand2", "pointer", "hand1", "hand"),
    "text": ("xterm", "text", "ibeam"),
}
MAX_SIDE = 256  # a sanity bound on one cursor image


class XcursorError(RollscopeError):
    """An Xcursor file cannot be read."""


@dataclass(frozen=True)
class CursorImage:
    """One cursor picture: straight (not premultiplied) RGBA, and the hotspot in its pixels."""

    rgba: np.ndarray  # (H, W, 4) uint8
    xhot: int
    yhot: int
    nominal: int


def read_xcursor(path: str | Path) -> list[CursorImage]:
    """All images of an Xcursor file (first animation frame per nominal size), sorted by nominal size.

    Raises:
        XcursorError: not an Xcursor file, or a table entry pointing outside the file.
    """
    path = Path(path)
    data = path.read_bytes()
    if len(data) < 16 or data[:4] != b"Xcur":
        raise XcursorError(f"{path}: not an Xcursor file (magic {data[:4]!r})")
    _magic, _hsize, _version, ntoc = struct.unpack_from("<4sIII", data, 0)
    if 16 + 12 * ntoc > len(data):
        raise XcursorError(f"{path}: table of contents ({ntoc} entries) runs past the end of the file")
    seen: dict[int, CursorImage] = {}
    for i in range(ntoc):
        typ, subtype, pos = struct.unpack_from("<III", data, 16 + 12 * i)
        if typ != IMAGE_TYPE or subtype in seen:
            continue
        if pos + 36 > len(data):
            raise XcursorError(f"{path}: image chunk {i} at {pos} runs past the end of the file")
        _h, _t, _s, _v, w, h, xhot, yhot, _delay = struct.unpack_from("<9I", data, pos)
        if not (0 < w <= MAX_SIDE and 0 < h <= MAX_SIDE) or pos + 36 + 4 * w * h > len(data):
            raise XcursorError(f"{path}: image chunk {i} has a bad size {w}x{h}")
        argb = np.frombuffer(data, dtype="<u4", count=w * h, offset=pos + 36).reshape(h, w)
        a = (argb >> 24).astype(np.float32)
        rgb = np.stack([(argb >> 16) & 255, (argb >> 8) & 255, argb & 255], axis=-1).astype(np.float32)
        # Premultiplied -> straight alpha.
        rgb = np.where(a[..., None] > 0, np.clip(rgb * 255.0 / np.maximum(a[..., None], 1), 0, 255), 0)
        rgba = np.dstack([rgb, a]).astype(np.uint8)
        seen[subtype] = CursorImage(rgba, int(xhot), int(yhot), int(subtype))
    if not seen:
        raise XcursorError(f"{path}: no image chunk")
    return [seen[k] for k in sorted(seen)]


def theme_dir(theme: str) -> Path | None:
    for base in ICON_DIRS:
        d = base / theme / "cursors"
        if d.is_dir():
            return d
    return None


def all_themes() -> list[str]:
    """Every installed theme folder name (candidates for :func:`installed_themes`), sorted."""
    names = {p.name for base in ICON_DIRS if base.is_dir() for p in base.iterdir() if (p / "cursors").is_dir()}
    return sorted(names)


def installed_themes(candidates: tuple[str, ...] | list[str] | None = None) -> list[str]:
    """The themes of ``candidates`` (default: every theme folder) installed with at least an arrow cursor."""
    out = []
    for t in all_themes() if candidates is None else candidates:
        d = theme_dir(t)
        if d is not None and any((d / n).exists() for n in ROLE_NAMES["arrow"]):
            out.append(t)
    return out


@functools.lru_cache(maxsize=256)
def _theme_images(theme: str, role: str) -> tuple[CursorImage, ...]:
    d = theme_dir(theme)
    if d is None:
        raise XcursorError(f"cursor theme {theme!r} is not installed (looked in {', '.join(map(str, ICON_DIRS))})")
    for name in ROLE_NAMES[role]:
        p = d / name
        if p.exists():
            return tuple(read_xcursor(p.resolve()))
    if role != "arrow":
        return _theme_images(theme, "arrow")  # a theme without a hand or I-beam shows its arrow
    raise XcursorError(f"cursor theme {theme!r} has no arrow cursor in {d}")


@functools.lru_cache(maxsize=512)
def cursor_image(theme: str, role: str, pixels: int) -> CursorImage:
    """The theme's cursor for ``role`` rendered ``pixels`` high (nominal size), from the closest size it ships.

    Like Xcursor itself, the best nominal size is picked; when it differs from the asked size it is resized (area
    interpolation when shrinking), the hotspot scaled with it.
    """
    import cv2

    images = _theme_images(theme, role)
    best = min(images, key=lambda im: (abs(im.nominal - pixels), -im.nominal))
    if best.nominal == pixels:
        return best
    f = pixels / best.nominal
    h, w = best.rgba.shape[:2]
    nw, nh = max(1, round(w * f)), max(1, round(h * f))
    interp = cv2.INTER_AREA if f < 1 else cv2.INTER_LINEAR
    rgba = cv2.resize(best.rgba, (nw, nh), interpolation=interp)
    return CursorImage(rgba, round(best.xhot * f), round(best.yhot * f), pixels)


def draw_image(frame: np.ndarray, img: CursorImage, x: float, y: float) -> np.ndarray:
    """Alpha-blend ``img`` onto ``frame`` (RGB uint8) with its hotspot at (x, y); clipped at the edges."""
    h, w = frame.shape[:2]
    ch, cw = img.rgba.shape[:2]
    x0, y0 = int(round(x)) - img.xhot, int(round(y)) - img.yhot
    fx0, fy0, fx1, fy1 = max(0, x0), max(0, y0), min(w, x0 + cw), min(h, y0 + ch)
    if fx0 >= fx1 or fy0 >= fy1:
        return frame
    sub = img.rgba[fy0 - y0:fy1 - y0, fx0 - x0:fx1 - x0].astype(np.float32)
    a = sub[..., 3:4] / 255.0
    region = frame[fy0:fy1, fx0:fx1].astype(np.float32)
    frame[fy0:fy1, fx0:fx1] = np.clip(region * (1 - a) + sub[..., :3] * a + 0.5, 0, 255).astype(np.uint8)
    return frame
