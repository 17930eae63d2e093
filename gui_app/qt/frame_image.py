"""numpy frames <-> Qt images, without copies where it is safe.

A decoded frame is an (H, W, 3) uint8 RGB array. ``QImage`` can wrap that buffer directly (no copy) as long as
the array outlives the image, so :func:`to_qimage` returns a :class:`FrameImage` that keeps the array alive.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage


class FrameImage(QImage):
    """A ``QImage`` over a numpy buffer that holds a reference to that buffer (QImage itself does not)."""

    def __init__(self, array: np.ndarray, fmt: QImage.Format):
        h, w = array.shape[:2]
        super().__init__(array.data, w, h, array.strides[0], fmt)
        self.array = array  # keeps the buffer alive as long as the image


def to_qimage(frame: np.ndarray) -> FrameImage:
    """Wrap an RGB (H, W, 3), RGBA (H, W, 4) or grey (H, W) uint8 array as a QImage, copying only if needed.

    Raises:
        ValueError: for another dtype or shape.
    """
    if frame.dtype != np.uint8:
        raise ValueError(f"frames must be uint8, got {frame.dtype}")
    if frame.ndim == 2:
        fmt = QImage.Format.Format_Grayscale8
    elif frame.ndim == 3 and frame.shape[2] == 3:
        fmt = QImage.Format.Format_RGB888
    elif frame.ndim == 3 and frame.shape[2] == 4:
        fmt = QImage.Format.Format_RGBA8888
    else:
        raise ValueError(f"frames must be (H, W), (H, W, 3) or (H, W, 4), got {frame.shape}")
    # QImage needs rows in one buffer with unit pixel stride; a sliced/transposed view is copied once.
    if not frame.flags.c_contiguous:
        frame = np.ascontiguousarray(frame)
    return FrameImage(frame, fmt)



def to_array(image: QImage) -> np.ndarray:
    """A QImage as an (H, W, 3) uint8 RGB array (a copy): used to read back what a view painted."""
    img = image.convertToFormat(QImage.Format.Format_RGB888)
    h, w, bpl = img.height(), img.width(), img.bytesPerLine()
    buf = np.frombuffer(img.constBits(), np.uint8, count=h * bpl).reshape(h, bpl)
    return buf[:, : w * 3].reshape(h, w, 3).copy()
