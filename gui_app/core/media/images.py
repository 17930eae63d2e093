"""Image files we did not write: the size they declare, read from their header before anything decodes them.

A PNG of 1.2 MB can declare 20000x20000 px, 1.2 GB of pixels once decoded (six of them made ``score`` take 55 s and
8.2 GB), and one declaring 60000x60000 px makes OpenCV fail an assertion. So nothing decodes an image file without
asking its header first:

- :func:`image_header` reads the kind and the declared size of PNG (``IHDR``), JPEG (the ``SOF`` segment, after
  whatever EXIF precedes it), GIF (the logical screen), WebP (``VP8``, ``VP8L``, ``VP8X``) and BMP, reading at
  most :data:`_HEADER_LIMIT` bytes and never a pixel.
- :func:`size_problem` says when a size is beyond :data:`gui_app.core.safety.MAX_IMAGE_PIXELS` or
  :data:`~gui_app.core.safety.MAX_IMAGE_SIDE`; :func:`image_problem` and :func:`data_problem` say it of a file and
  of bytes (an Inspect log's data URI). Importers drop such a screenshot with a warning naming the file and field.
- :func:`read_image` is the one decoder of image files (alignment, the viewer's frame source, the model's
  keyframes, conversion): it decodes only a regular file of a kind whose size it could read and accept, so a file
  that bypassed the importers (changed since it was loaded, opened directly) is refused too.
"""

from __future__ import annotations

import io
import os
import struct
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

import numpy as np

from gui_app.core.errors import VideoError
from gui_app.core.safety import MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE, open_regular

# How far into a JPEG its SOF segment may lie: EXIF, ICC profiles and thumbnails come first (each APPn segment is at
# most 64 KB; cameras write a few).
_HEADER_LIMIT = 1 << 20
# The largest image file read whole to be decoded: an uncompressed 50 Mpx BMP is 200 MB.
_FILE_LIMIT = 1 << 28


def _png(head: bytes) -> tuple[int, int] | None:
    # 8-byte signature, then the IHDR chunk: length, b"IHDR", width, height (big-endian).
    if len(head) < 24 or head[12:16] != b"IHDR":
        return None
    w, h = struct.unpack(">II", head[16:24])
    return int(w), int(h)


def _gif(head: bytes) -> tuple[int, int] | None:
    if len(head) < 10:
        return None
    w, h = struct.unpack("<HH", head[6:10])
    return int(w), int(h)


def _webp(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30 and head[23:26] == b"\x9d\x01\x2a":  # after the start code, 14 bits each
        w, h = struct.unpack("<HH", head[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25 and head[20] == 0x2F:  # lossless: 14 bits each, minus one
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:  # extended: the canvas, 24 bits each, minus one
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    return None


# The sizes of the BMP info headers (core, info, v2 to v5): what tells a bitmap from any file starting with "BM".
_BMP_HEADERS = frozenset({12, 40, 52, 56, 64, 108, 124})


def _bmp(head: bytes) -> tuple[int, int] | None:
    if len(head) < 26 or int.from_bytes(head[14:18], "little") not in _BMP_HEADERS:
        return None
    if int.from_bytes(head[14:18], "little") == 12:  # BITMAPCOREHEADER: 16-bit sizes
        w, h = struct.unpack("<HH", head[18:22])
        return int(w), int(h)
    w, h = struct.unpack("<ii", head[18:26])
    return abs(int(w)), abs(int(h))  # a negative height is a top-down bitmap


# Markers of JPEG frame headers (baseline, progressive, lossless; Huffman or arithmetic): not DHT (C4), JPG (C8),
# DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(fh: BinaryIO) -> tuple[int, int] | None:
    """Walk the segments from the start of the file to the first SOF: its height and width."""
    fh.seek(2)
    while fh.tell() < _HEADER_LIMIT:
        byte = fh.read(1)
        if byte != b"\xff":
            return None
        marker = fh.read(1)
        while marker == b"\xff" and fh.tell() < _HEADER_LIMIT:  # fill bytes
            marker = fh.read(1)
        if not marker:
            return None
        m = marker[0]
        if m == 0x01 or 0xD0 <= m <= 0xD7:  # no length
            continue
        if m in (0xD9, 0xDA):  # end of image, start of scan: no frame header before them
            return None
        raw = fh.read(2)
        if len(raw) < 2:
            return None
        length = int.from_bytes(raw, "big")
        if m in _SOF:
            body = fh.read(5)
            if len(body) < 5:
                return None
            h, w = struct.unpack(">HH", body[1:5])
            return int(w), int(h)
        if length < 2:
            return None
        fh.seek(length - 2, os.SEEK_CUR)
    return None


def image_header(fh: BinaryIO) -> tuple[str, int, int] | None:
    """``(kind, width, height)`` that a seekable image stream declares (kind: png, jpeg, gif, webp or bmp), or None
    when it is none of these or its header is cut short. Reads the header only."""
    head = fh.read(32)
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        kind, size = "png", _png(head)
    elif head.startswith(b"\xff\xd8\xff"):
        kind, size = "jpeg", _jpeg(fh)
    elif head[:6] in (b"GIF87a", b"GIF89a"):
        kind, size = "gif", _gif(head)
    elif head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        kind, size = "webp", _webp(head)
    elif head[:2] == b"BM":
        kind, size = "bmp", _bmp(head)
    else:
        return None
    return None if size is None else (kind, *size)


def size_problem(width: int, height: int, what: str = "image") -> str | None:
    """Why an image (or a video's frame: ``what``) of this size must not be decoded, or None."""
    if width * height > MAX_IMAGE_PIXELS or max(width, height) > MAX_IMAGE_SIDE:
        return (f"{what} of {width}×{height} px is too large (more than {MAX_IMAGE_PIXELS:,} px or "
                f"{MAX_IMAGE_SIDE:,} px a side)")
    return None


def data_problem(data: bytes) -> str | None:
    """Why the image in ``data`` must not be decoded (too large by its header), or None. Bytes of no known kind are
    not judged here: whoever decodes them finds out."""
    found = image_header(io.BytesIO(data))
    return None if found is None else size_problem(found[1], found[2])


@lru_cache(maxsize=4096)
def _header_of(path: str, size: int, mtime_ns: int, ino: int) -> tuple[str, int, int] | None:
    try:
        with open_regular(path) as fh:
            return image_header(fh)
    except OSError:
        return None


def declared(path: str | Path) -> tuple[str, int, int] | None:
    """``(kind, width, height)`` from the header of the regular file ``path``, or None (not a regular file, unreadable,
    of no known kind). Remembered per file version (path, size, mtime, inode): a run of 100,000 steps that all name
    one screenshot reads its header once."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return _header_of(os.fspath(path), st.st_size, st.st_mtime_ns, st.st_ino)


def image_problem(path: str | Path) -> str | None:
    """Why the image file ``path`` must not be decoded (too large by its header), or None; see :func:`data_problem`."""
    found = declared(path)
    return None if found is None else size_problem(found[1], found[2])


def read_image(path: str | Path, gray: bool = False) -> np.ndarray:
    """Decode an image file: RGB ``(H, W, 3)`` uint8, or ``(H, W)`` with ``gray``.

    The file is read once and its bytes are both measured and decoded, so nothing can swap it in between.

    Raises:
        VideoError: naming the file when it is not a regular file, not a PNG/JPEG/GIF/WebP/BMP whose header gives
            its size, too large (:func:`size_problem`), or not decodable.
    """
    import cv2  # lazy: importers that only check headers do not load OpenCV

    try:
        with open_regular(path) as fh:  # a FIFO is refused, not waited on
            size = os.fstat(fh.fileno()).st_size
            if size > _FILE_LIMIT:
                raise VideoError(path, f"cannot read image (a file of {size:,} bytes, more than an image holds)")
            data = fh.read(size)  # its size, not the limit: read(limit) would allocate the limit
    except OSError as exc:
        raise VideoError(path, f"cannot read image ({exc.strerror or exc})") from None
    found = image_header(io.BytesIO(data))
    if found is None:
        raise VideoError(path, "cannot read image (not a PNG, JPEG, GIF, WebP or BMP file with a readable header)")
    problem = size_problem(found[1], found[2])
    if problem is not None:
        raise VideoError(path, problem)
    try:
        img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE if gray else cv2.IMREAD_COLOR)
    except cv2.error as exc:  # the header passed, the data did not: one line, not an internal error
        raise VideoError(path, f"cannot decode image ({str(exc).strip().splitlines()[-1][:200]})") from None
    if img is None:
        raise VideoError(path, "cannot read image (empty, damaged or not an image)")
    return img if gray else cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
