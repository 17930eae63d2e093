"""A self-contained Parquet reader and writer: plain Python and numpy, plus ``zstandard`` for ZSTD pages.

The app reads and writes label tables, exports and dataset manifests as Parquet. polars did this, at 132 MB of the
packaged app; this module does what the app needs in a fraction of that.

Column types (:data:`ColumnType`) are ``"string"``, ``"int64"``, ``"float64"``, ``"bool"``, ``"binary"``,
``("list", T)`` and ``("struct", {"name": T, ...})``; a reader also reports ``"date"``, ``"timestamp"``, ``"time"``
and ``("map", K, V)`` for what other writers store. Values are Python objects; ``None`` is a null at any level.

Reading follows the Parquet format: Thrift compact metadata, data pages v1 and v2, dictionary pages, the PLAIN,
dictionary, RLE/bit-packed, DELTA_* and BYTE_STREAM_SPLIT encodings, the codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD,
LZ4 and LZ4_RAW, and record assembly (Dremel) for any nesting, with the older list layouts. Anything wrong with a
file is a :class:`~gui_app.core.errors.TrajectoryFormatError` that names it (and the column, when one is at fault).

Writing produces one PLAIN data page v1 per ~1 MB of a column, every field optional, lists in the standard 3-level
layout, compressed with ZSTD (default), GZIP or nothing.
"""

from __future__ import annotations

import datetime as dt
import itertools
import struct
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from gui_app.core.errors import TrajectoryFormatError

ColumnType = str | tuple

MAGIC = b"PAR1"
# Bounds on what a file's headers may ask for: a few hostile bytes must not become gigabytes. A label table holds a
# few hundred thousand rows; these are far above any real page or column chunk the app meets.
MAX_PAGE_BYTES = 1 << 29
MAX_CHUNK_VALUES = 1 << 25
_MAX_DEPTH = 64  # nesting of Thrift structs and of schema groups
_PAGE_TARGET = 1 << 20  # the writer starts a new page after about this many value bytes

_BOOLEAN, _INT32, _INT64, _INT96, _FLOAT, _DOUBLE, _BYTE_ARRAY, _FLBA = range(8)
_PHYSICAL = ("BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
_REQUIRED, _OPTIONAL, _REPEATED = range(3)
_ENCODINGS = {0: "PLAIN", 1: "GROUP_VAR_INT", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED",
              5: "DELTA_BINARY_PACKED", 6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY",
              9: "BYTE_STREAM_SPLIT"}
_CODECS = {0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD", 7: "LZ4_RAW"}
_NUMPY = {_INT32: "<i4", _INT64: "<i8", _FLOAT: "<f4", _DOUBLE: "<f8"}
_U32 = struct.Struct("<I")
_EMPTY = np.empty(0, dtype=object)
_UTC = dt.timezone.utc
# datetime's range (years 1 to 9999) in microseconds and days from the Unix epoch
_MIN_US, _MAX_US = -62_135_596_800_000_000, 253_402_300_799_999_999
_MIN_DAY, _MAX_DAY = -719_162, 2_932_896
_JULIAN_EPOCH = 2_440_588  # the Julian day of 1970-01-01 (INT96 timestamps count Julian days)


# --- errors ----------------------------------------------------------------------------------------------------------

class _Bad(Exception):
    """Something wrong with the file; the public functions turn it into a TrajectoryFormatError naming the path."""

    def __init__(self, reason: str, field: str | None = None):
        super().__init__(reason)
        self.reason, self.field = reason, field


# What decoding damaged bytes can raise (a short buffer, an impossible length, a bad UTF-8 sequence, ...): each is
# reported as a damaged file, never let out as it is.
_DAMAGE = (struct.error, IndexError, KeyError, ValueError, TypeError, OverflowError, AttributeError, zlib.error,
           RecursionError, EOFError)


def _what(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _guard(path: str | Path, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except _Bad as exc:
        raise TrajectoryFormatError(path, exc.field, exc.reason) from exc
    except _DAMAGE as exc:
        raise TrajectoryFormatError(path, None, f"damaged Parquet file ({_what(exc)})") from exc


# --- Thrift compact protocol -----------------------------------------------------------------------------------------

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Bad("damaged varint (more than 10 bytes)")


def _zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    n, pos = _varint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def _t_value(buf: bytes, pos: int, ctype: int, depth: int) -> tuple[Any, int]:
    if ctype in (1, 2):  # a bool inside a list or map is one byte; in a field header it is the type itself
        return buf[pos] == 1, pos + 1
    if ctype == 3:
        return (buf[pos] ^ 0x80) - 0x80, pos + 1
    if ctype in (4, 5, 6):
        return _zigzag(buf, pos)
    if ctype == 7:
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if ctype == 8:
        n, pos = _varint(buf, pos)
        if n > len(buf) - pos:
            raise _Bad("damaged metadata (a string runs past its end)")
        return buf[pos:pos + n], pos + n
    if depth > _MAX_DEPTH:
        raise _Bad("damaged metadata (nested too deeply)")
    if ctype in (9, 10):
        head = buf[pos]
        pos += 1
        size, etype = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint(buf, pos)
        if size > len(buf) - pos:  # every element takes at least a byte
            raise _Bad("damaged metadata (a list longer than the data)")
        items = []
        for _ in range(size):
            item, pos = _t_value(buf, pos, etype, depth + 1)
            items.append(item)
        return items, pos
    if ctype == 11:
        size, pos = _varint(buf, pos)
        if size == 0:
            return [], pos
        kv = buf[pos]
        pos += 1
        if size > len(buf) - pos:
            raise _Bad("damaged metadata (a map longer than the data)")
        pairs = []
        for _ in range(size):
            k, pos = _t_value(buf, pos, kv >> 4, depth + 1)
            v, pos = _t_value(buf, pos, kv & 0x0F, depth + 1)
            pairs.append((k, v))
        return pairs, pos
    if ctype == 12:
        return _t_struct(buf, pos, depth + 1)
    raise _Bad(f"damaged metadata (unknown Thrift type {ctype})")


def _t_struct(buf: bytes, pos: int, depth: int = 0) -> tuple[dict[int, Any], int]:
    """A Thrift compact struct at ``pos`` as {field id: value} (unknown fields are kept, and ignored by callers)."""
    fields: dict[int, Any] = {}
    last = 0
    while True:
        b = buf[pos]
        pos += 1
        if b == 0:
            return fields, pos
        ctype, delta = b & 0x0F, b >> 4
        if delta:
            fid = last + delta
        else:
            fid, pos = _zigzag(buf, pos)
        last = fid
        if ctype in (1, 2):
            fields[fid] = ctype == 1
        else:
            fields[fid], pos = _t_value(buf, pos, ctype, depth)


def _int(d: dict[int, Any], fid: int, default: int | None = None) -> int:
    v = d.get(fid, default)
    if not isinstance(v, int):
        raise _Bad(f"damaged metadata (field {fid} is {'missing' if v is None else 'not a number'})")
    return v


def _opt_int(d: dict[int, Any], fid: int) -> int | None:
    return None if d.get(fid) is None else _int(d, fid)


def _sub(d: dict[int, Any], fid: int, optional: bool = False) -> dict[int, Any]:
    v = d.get(fid)
    if isinstance(v, dict) or (v is None and optional):
        return v or {}
    raise _Bad(f"damaged metadata (field {fid} is {'missing' if v is None else 'not a struct'})")


def _seq(d: dict[int, Any], fid: int) -> list[Any]:
    v = d.get(fid, [])
    if not isinstance(v, list):
        raise _Bad(f"damaged metadata (field {fid} is not a list)")
    return v


def _text(v: Any) -> str:
    if not isinstance(v, bytes):
        raise _Bad("damaged metadata (a name is not a string)")
    return v.decode("utf-8", "replace")


# Writing: a struct is a list of (field id, compact type, value); None values are left out.
def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _w_value(out: bytearray, ctype: int, value: Any) -> None:
    if ctype in (4, 5, 6):
        out += _uvarint((value << 1) ^ (value >> 63))
    elif ctype == 8:
        data = value.encode() if isinstance(value, str) else value
        out += _uvarint(len(data)) + data
    elif ctype == 9:
        etype, items = value
        out.append((len(items) << 4 | etype) if len(items) < 15 else (0xF0 | etype))
        if len(items) >= 15:
            out += _uvarint(len(items))
        for item in items:
            _w_value(out, etype, item)
    elif ctype == 12:
        out += _w_struct(value)
    else:
        raise AssertionError(ctype)


def _w_struct(fields: list[tuple[int, int, Any]]) -> bytes:
    out, last = bytearray(), 0
    for fid, ctype, value in fields:
        if value is None:
            continue
        if ctype == 1:  # a bool field is all in its header
            ctype = 1 if value else 2
        out += bytes([(fid - last) << 4 | ctype]) if 0 < fid - last <= 15 else bytes([ctype]) + _uvarint(fid << 1)
        last = fid
        if ctype not in (1, 2):
            _w_value(out, ctype, value)
    out.append(0)
    return bytes(out)


# --- bit unpacking, RLE, delta ---------------------------------------------------------------------------------------

def _unpack(buf: bytes, pos: int, count: int, width: int, msb_first: bool = False) -> np.ndarray:
    """``count`` unsigned ``width``-bit values packed from ``buf[pos]`` (LSB first, or MSB first for BIT_PACKED)."""
    if width == 0 or count == 0:
        return np.zeros(count, dtype=np.uint8)
    nbytes = (count * width + 7) // 8
    if pos + nbytes > len(buf):
        raise _Bad("bit-packed data ends early")
    raw = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=pos)
    if width == 8:
        return raw
    bits = np.unpackbits(raw, bitorder="big" if msb_first else "little")[: count * width]
    if width == 1:
        return bits
    size = 8 if width <= 8 else 16 if width <= 16 else 32 if width <= 32 else 64
    padded = np.zeros((count, size), dtype=np.uint8)
    # widen each value to a whole machine word and let packbits build the integers, with no loop over bits
    if msb_first:
        padded[:, size - width:] = bits.reshape(count, width)
        return np.packbits(padded, axis=1, bitorder="big").view(f">u{size // 8}").reshape(count)
    padded[:, :width] = bits.reshape(count, width)
    return np.packbits(padded, axis=1, bitorder="little").view(f"<u{size // 8}").reshape(count)


def _rle(buf: bytes, pos: int, end: int, width: int, count: int) -> np.ndarray:
    """``count`` values of the RLE/bit-packed hybrid in ``buf[pos:end]`` (no length prefix), as int64."""
    if width > 32:
        raise _Bad(f"RLE bit width {width} is over 32")
    counts: list[int] = []
    values: list[int] = []  # -1: a bit-packed run
    packed: list[bytes] = []
    got, vbytes, npacked = 0, (width + 7) // 8, 0
    while got < count:
        if pos >= end:
            raise _Bad(f"RLE data ends after {got} of {count} values")
        header, pos = _varint(buf, pos)
        if header & 1:
            take = min((header >> 1) * 8, count - got)
            if pos + (take * width + 7) // 8 > end:
                raise _Bad("RLE data ends inside a bit-packed run")
            packed.append(buf[pos:pos + (header >> 1) * width])
            pos += (header >> 1) * width
            npacked += take
            values.append(-1)
        else:
            take = min(header >> 1, count - got)
            if pos + vbytes > end:
                raise _Bad("RLE data ends inside a run")
            values.append(int.from_bytes(buf[pos:pos + vbytes], "little"))
            pos += vbytes
        counts.append(take)
        got += take
    if not packed:
        return np.repeat(np.array(values, dtype=np.int64), counts)
    # All bit-packed runs share the bit width and hold whole bytes: unpack them in one go. Only the last run can
    # be cut short (by the count), so the values wanted are the first ``npacked``.
    data = b"".join(packed)
    data += bytes(max(0, -(-npacked * width // 8) - len(data)))
    bits = _unpack(data, 0, npacked, width).astype(np.int64)
    if len(packed) == len(counts):
        return bits
    out = np.repeat(np.array(values, dtype=np.int64), counts)
    out[out < 0] = bits
    return out


def _delta_binary(buf: bytes, pos: int) -> tuple[np.ndarray, int]:
    """DELTA_BINARY_PACKED integers at ``pos`` (as int64, wrapping as the format does) and where they end."""
    block, pos = _varint(buf, pos)
    minis, pos = _varint(buf, pos)
    total, pos = _varint(buf, pos)
    first, pos = _zigzag(buf, pos)
    if block <= 0 or block % 128 or minis <= 0 or block % minis or (block // minis) % 32:
        raise _Bad("damaged DELTA_BINARY_PACKED header")
    if total > MAX_CHUNK_VALUES:
        raise _Bad(f"DELTA_BINARY_PACKED data claims {total:,} values")
    if total == 0:
        return np.zeros(0, dtype=np.int64), pos
    per = block // minis
    parts = [np.array([first & 0xFFFF_FFFF_FFFF_FFFF], dtype=np.uint64)]
    got = 1
    while got < total:
        min_delta, pos = _zigzag(buf, pos)
        widths = buf[pos:pos + minis]
        if len(widths) < minis:
            raise _Bad("DELTA_BINARY_PACKED data ends early")
        pos += minis
        for width in widths:
            if got >= total:
                break  # the unneeded miniblocks of the last block are not stored
            if width > 64:
                raise _Bad(f"DELTA_BINARY_PACKED bit width {width} is over 64")
            take = min(per, total - got)
            deltas = _unpack(buf, pos, take, width).astype(np.uint64)
            parts.append(deltas + np.uint64(min_delta & 0xFFFF_FFFF_FFFF_FFFF))
            pos += per * width // 8
            got += take
    return np.cumsum(np.concatenate(parts), dtype=np.uint64).view(np.int64), pos


# --- codecs ----------------------------------------------------------------------------------------------------------

def _copy_back(out: bytearray, offset: int, length: int) -> None:
    """Append ``length`` bytes copied from ``offset`` bytes back (the copy may overlap what it appends)."""
    if offset <= 0 or offset > len(out):
        raise _Bad("compressed data refers to bytes before its start")
    start = len(out) - offset
    if length <= offset:
        out += out[start:start + length]
    else:
        out += (out[start:] * (length // offset + 1))[:length]


def _snappy(data: bytes, expected: int) -> bytes:
    size, pos = _varint(data, 0)
    if size != expected:
        raise _Bad(f"SNAPPY data holds {size} bytes, not the {expected} the page header gives")
    out, end = bytearray(), len(data)
    # The hot loop of a SNAPPY page (one pass per element), so the copy is inlined. An element adds at most 64
    # bytes, or a literal of the input's own: the output cannot grow past 64 times the input before the check.
    while pos < end:
        tag = data[pos]
        kind = tag & 3
        if kind == 0:
            length = (tag >> 2) + 1
            pos += 1
            if length > 60:
                nb = length - 60
                length = int.from_bytes(data[pos:pos + nb], "little") + 1
                pos += nb
            out += data[pos:pos + length]
            pos += length
            continue
        if kind == 1:
            length, offset = ((tag >> 2) & 7) + 4, (tag >> 5) << 8 | data[pos + 1]
            pos += 2
        elif kind == 2:
            length, offset = (tag >> 2) + 1, data[pos + 1] | data[pos + 2] << 8
            pos += 3
        else:
            length, offset = (tag >> 2) + 1, int.from_bytes(data[pos + 1:pos + 5], "little")
            pos += 5
        start = len(out) - offset
        if offset <= 0 or start < 0:
            raise _Bad("SNAPPY data refers to bytes before its start")
        if length <= offset:
            out += out[start:start + length]
        else:  # the copy overlaps what it appends: a repeated pattern
            out += (out[start:] * (length // offset + 1))[:length]
    if pos > end:
        raise _Bad("SNAPPY data ends inside an element")
    return bytes(out)


def _lz4_length(data: bytes, pos: int, length: int) -> tuple[int, int]:
    """A length from an LZ4 token's four bits, extended by the bytes that follow while they are 255 (the
    format's length coding); returns (length, position after it)."""
    if length == 15:
        while True:
            b = data[pos]
            pos += 1
            length += b
            if b != 255:
                break
    return length, pos


def _lz4_block(data: bytes, limit: int) -> bytes:
    out, pos, end = bytearray(), 0, len(data)
    while pos < end:
        token = data[pos]
        pos += 1
        length, pos = _lz4_length(data, pos, token >> 4)
        if pos + length > end or len(out) + length > limit:
            raise _Bad("LZ4 literal runs past the data")
        out += data[pos:pos + length]
        pos += length
        if pos >= end:
            break  # the last sequence has literals only
        offset = data[pos] | data[pos + 1] << 8
        pos += 2
        length, pos = _lz4_length(data, pos, token & 15)
        length += 4
        if len(out) + length > limit:
            raise _Bad("LZ4 data decompresses to more than the page holds")
        _copy_back(out, offset, length)
    return bytes(out)


def _lz4_hadoop(data: bytes, expected: int) -> bytes:
    """The deprecated LZ4 codec as Hadoop writes it: blocks each prefixed by big-endian sizes."""
    out, pos = bytearray(), 0
    while pos < len(data):
        usize, csize = struct.unpack_from(">II", data, pos)
        pos += 8
        if pos + csize > len(data) or len(out) + usize > expected:
            raise _Bad("not Hadoop LZ4 framing")
        block = _lz4_block(data[pos:pos + csize], usize)
        if len(block) != usize:
            raise _Bad("not Hadoop LZ4 framing")
        out += block
        pos += csize
    return bytes(out)


def _decompress(codec: int, data: bytes, expected: int) -> bytes:
    if codec == 0:
        return data
    name = _CODECS.get(codec, f"codec {codec}")
    if codec not in (1, 2, 5, 6, 7):
        raise _Bad(f"the column is compressed with {name}, which is not supported")
    if expected > MAX_PAGE_BYTES or expected < 0:
        raise _Bad(f"a page claims {expected:,} bytes uncompressed")
    if expected == 0:
        return b""
    try:
        if codec == 1:
            out = _snappy(data, expected)
        elif codec == 2:
            # wbits 47: a gzip or a zlib header, found by zlib; a page may hold several gzip members
            out, rest = b"", data
            while rest and len(out) < expected:
                d = zlib.decompressobj(wbits=47)
                out += d.decompress(rest, expected + 1 - len(out))
                rest = d.unused_data
        elif codec == 6:
            out = _zstd(data, expected)
        elif codec == 7:
            out = _lz4_block(data, expected)
        else:
            try:  # as pyarrow does: Hadoop's framing first, then a bare block (older parquet-cpp)
                out = _lz4_hadoop(data, expected)
            except (_Bad, *_DAMAGE):
                out = _lz4_block(data, expected)
    except _Bad as exc:
        raise _Bad(f"{name} decompression failed ({exc.reason})") from exc
    except _DAMAGE as exc:
        raise _Bad(f"{name} decompression failed ({_what(exc)})") from exc
    if len(out) != expected:
        raise _Bad(f"{name} data decompresses to {len(out):,} bytes, not the {expected:,} the page header gives")
    return out


def _zstd(data: bytes, expected: int) -> bytes:
    try:
        import zstandard
    except ImportError as exc:
        raise _Bad("the column is compressed with ZSTD, which needs the 'zstandard' package") from exc
    try:
        declared = zstandard.frame_content_size(data)
        if declared not in (-1, expected):  # -1: the frame does not say
            raise _Bad(f"the frame holds {declared:,} bytes, not {expected:,}")
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=expected)
    except zstandard.ZstdError as exc:
        raise _Bad(str(exc) or "ZstdError") from exc


# --- schema ----------------------------------------------------------------------------------------------------------

@dataclass
class _Elem:
    """One SchemaElement, with its children."""

    name: str
    repetition: int
    ptype: int | None
    type_length: int
    converted: int | None
    logical: dict[int, Any]
    scale: int
    children: list[_Elem] | None  # None for a leaf


@dataclass
class _Leaf:
    """A column of values (a leaf of the schema), in the order of the column chunks."""

    index: int
    dotted: str
    elem: _Elem
    max_def: int
    max_rep: int
    text: bool = False  # BYTE_ARRAY decoded straight to str
    convert: Callable[[np.ndarray], np.ndarray] | None = None  # physical values to Python values


@dataclass
class _Node:
    """A field as the reader returns it. Its values sit at the level entries of its first leaf where rep <= r and
    def >= d of the enclosing list (the slots); it is non-null where def >= ``d_valid``; a list's items are the
    entries where rep <= ``r_item`` and def >= ``d_item``."""

    kind: str  # "leaf" | "struct" | "list" | "map"
    name: str
    ctype: ColumnType
    d_valid: int
    first: _Leaf
    children: list[_Node] = field(default_factory=list)
    d_item: int = 0
    r_item: int = 0

    def leaves(self) -> Iterator[_Leaf]:
        if self.kind == "leaf":
            yield self.first
        for child in self.children:
            yield from child.leaves()


def _elements(raw: list[Any]) -> _Elem:
    pos = 0

    def take(depth: int) -> _Elem:
        nonlocal pos
        if pos >= len(raw):
            raise _Bad("damaged schema (a group lists more fields than the schema holds)")
        if depth > _MAX_DEPTH:
            raise _Bad("damaged schema (nested too deeply)")
        d = raw[pos]
        if not isinstance(d, dict):
            raise _Bad("damaged schema")
        pos += 1
        n = _int(d, 5, 0)
        if n < 0 or n > len(raw):
            raise _Bad("damaged schema (impossible number of fields)")
        ptype = _opt_int(d, 1)
        leaf = ptype is not None and n == 0
        logical = _sub(d, 10, optional=True)
        e = _Elem(_text(d.get(4, b"")), _int(d, 3, _REQUIRED), ptype, _int(d, 2, 0), _opt_int(d, 6), logical,
                  _int(d, 7, 0), None if leaf else [take(depth + 1) for _ in range(n)])
        return e

    root = take(0)
    if pos != len(raw):
        raise _Bad(f"damaged schema ({len(raw) - pos} elements outside the root group)")
    if root.children is None:
        raise _Bad("damaged schema (the root is not a group)")
    return root


def _leaf_type(e: _Elem) -> str:
    lt, ct, p = e.logical, e.converted, e.ptype
    if 1 in lt or 4 in lt or 12 in lt or 14 in lt or ct in (0, 4, 19):
        return "string"
    if 5 in lt or ct == 5 or 15 in lt:
        return "float64"
    if 6 in lt or ct == 6:
        return "date"
    if 8 in lt or ct in (9, 10) or p == _INT96:
        return "timestamp"
    if 7 in lt or ct in (7, 8):
        return "time"
    if 11 in lt:
        return "string"  # UNKNOWN: a column of nulls only
    return {_BOOLEAN: "bool", _INT32: "int64", _INT64: "int64", _FLOAT: "float64", _DOUBLE: "float64"}.get(
        p if p is not None else -1, "binary")


def _is_list(e: _Elem) -> bool:
    return e.converted == 3 or 3 in e.logical


def _is_map(e: _Elem) -> bool:
    return e.converted in (1, 2) or 2 in e.logical


def _build(e: _Elem, d: int, r: int, leaves: list[_Leaf], path: tuple[str, ...], as_item: bool = False) -> _Node:
    """The field of element ``e`` under a parent defined at level ``d`` with ``r`` repeated ancestors. ``as_item``:
    ``e`` is a repeated element standing for the items of its own list (its levels are already counted)."""
    if e.repetition == _REPEATED and not as_item:
        # a repeated field outside a LIST group (the older 2-level layout): a list never null, of required items
        item = _build(e, d + 1, r + 1, leaves, path, as_item=True)
        return _Node("list", e.name, ("list", item.ctype), 0, item.first, [item], d + 1, r + 1)
    path = path + (e.name,)
    if e.repetition == _OPTIONAL and not as_item:
        d += 1
    if e.children is None:
        if e.ptype not in range(8):
            raise _Bad(f"damaged schema (unknown physical type {e.ptype})", ".".join(path))
        leaf = _Leaf(len(leaves), ".".join(path), e, d, r)
        leaves.append(leaf)
        return _Node("leaf", e.name, _leaf_type(e), d, leaf)
    if not e.children:
        raise _Bad("damaged schema (a group with no fields)", ".".join(path))
    rep = e.children[0]
    if len(e.children) == 1 and rep.repetition == _REPEATED and not as_item:
        if _is_list(e):
            if rep.children is None or len(rep.children) > 1 or rep.name in ("array", f"{e.name}_tuple"):
                item = _build(rep, d + 1, r + 1, leaves, path, as_item=True)  # the repeated group is the item
            else:
                item = _build(rep.children[0], d + 1, r + 1, leaves, path + (rep.name,))
            return _Node("list", e.name, ("list", item.ctype), d, item.first, [item], d + 1, r + 1)
        if _is_map(e) and rep.children is not None and len(rep.children) == 2:
            key, value = (_build(c, d + 1, r + 1, leaves, path + (rep.name,)) for c in rep.children)
            return _Node("map", e.name, ("map", key.ctype, value.ctype), d, key.first, [key, value], d + 1, r + 1)
    kids = [_build(c, d, r, leaves, path) for c in e.children]
    fields = {k.name: k.ctype for k in kids}
    if len(fields) != len(kids):
        raise _Bad("damaged schema (two fields of a group share a name)", ".".join(path))
    return _Node("struct", e.name, ("struct", fields), d, kids[0].first, kids)


def _to_datetime(us: np.ndarray, utc: bool) -> np.ndarray:
    if us.size and (us.min() < _MIN_US or us.max() > _MAX_US):
        raise _Bad("a timestamp lies outside the years 1 to 9999")
    out = us.astype("datetime64[us]").astype(object)
    return _objects([v.replace(tzinfo=_UTC) for v in out]) if utc else out


def _converter(e: _Elem) -> tuple[bool, Callable[[np.ndarray], np.ndarray] | None]:
    """(decode BYTE_ARRAY to str, function from physical to Python values) for a leaf."""
    lt, ct, p = e.logical, e.converted, e.ptype
    if _leaf_type(e) == "string" and p == _BYTE_ARRAY:
        return True, None
    if 14 in lt and p == _FLBA:
        return False, lambda a: _objects([str(uuid.UUID(bytes=row.tobytes())) for row in a])
    if 5 in lt or ct == 5:
        scale = _int(lt[5], 1, e.scale) if isinstance(lt.get(5), dict) else e.scale
        div = 10 ** scale
        if p in (_INT32, _INT64):
            return False, lambda a: _objects([v / div for v in a.tolist()])
        if p == _FLBA:
            return False, lambda a: _objects([int.from_bytes(row.tobytes(), "big", signed=True) / div for row in a])
        return False, lambda a: _objects([int.from_bytes(v, "big", signed=True) / div for v in a])
    if 15 in lt and p == _FLBA and e.type_length == 2:
        return False, lambda a: np.ascontiguousarray(a).view("<f2").reshape(-1).astype(np.float64)
    if p == _INT96:
        def int96(a: np.ndarray) -> np.ndarray:
            a = np.ascontiguousarray(a)
            nanos, days = a[:, :8].copy().view("<i8").reshape(-1), a[:, 8:].copy().view("<i4").reshape(-1)
            days = days.astype(np.int64) - _JULIAN_EPOCH
            if days.size and (days.min() < _MIN_DAY or days.max() > _MAX_DAY):
                raise _Bad("a timestamp lies outside the years 1 to 9999")
            return _to_datetime(days * 86_400_000_000 + nanos // 1000, False)
        return False, int96
    unit, utc = 1, False
    if 8 in lt or 7 in lt:
        spec = _sub(lt, 8 if 8 in lt else 7)
        units = _sub(spec, 2)
        unit = 1000 if 1 in units else 1 if 2 in units else -1000  # -1000: nanoseconds
        utc = bool(spec.get(1, False))
    elif ct in (9, 7):
        unit, utc = 1000, True
    elif ct in (10, 8):
        unit, utc = 1, True

    def micros(a: np.ndarray) -> np.ndarray:
        a = a.astype(np.int64)
        if unit == 1000 and a.size and (a.min() < _MIN_US // 1000 or a.max() > _MAX_US // 1000):
            raise _Bad("a time value lies outside the years 1 to 9999")
        return a // 1000 if unit == -1000 else a * unit

    if 8 in lt or ct in (9, 10):
        return False, lambda a: _to_datetime(micros(a), utc)
    if 7 in lt or ct in (7, 8):
        def times(a: np.ndarray) -> np.ndarray:
            us = micros(a)
            if us.size and (us.min() < 0 or us.max() >= 86_400_000_000):
                raise _Bad("a time of day lies outside 00:00 to 24:00")
            return _objects([(dt.datetime.min + dt.timedelta(microseconds=v)).time() for v in us.tolist()])
        return False, times
    if 6 in lt or ct == 6:
        def dates(a: np.ndarray) -> np.ndarray:
            if a.size and (a.min() < _MIN_DAY or a.max() > _MAX_DAY):
                raise _Bad("a date lies outside the years 1 to 9999")
            return a.astype("datetime64[D]").astype(object)
        return False, dates
    unsigned = (10 in lt and isinstance(lt[10], dict) and lt[10].get(2) is False) or ct in (11, 12, 13, 14)
    if unsigned and p in (_INT32, _INT64):
        return False, lambda a: a.view(np.uint32 if p == _INT32 else np.uint64)
    if p == _FLBA and _leaf_type(e) == "string":
        return False, lambda a: _objects([row.tobytes().decode() for row in a])
    if p == _FLBA:
        return False, lambda a: _objects([row.tobytes() for row in a])
    return False, None


# --- pages -----------------------------------------------------------------------------------------------------------

def _objects(values: Any) -> np.ndarray:
    """An object array of ``values`` (never a numpy string or nested array: each value stays one Python object)."""
    if isinstance(values, np.ndarray):
        return values if values.dtype == object else values.astype(object)
    return np.fromiter(values, dtype=object, count=len(values))


def _need(buf: bytes, pos: int, size: int) -> None:
    if size < 0 or pos + size > len(buf):
        raise _Bad(f"page data ends early ({len(buf) - pos:,} bytes left where {size:,} are needed)")


def _byte_arrays(buf: bytes, pos: int, n: int, text: bool) -> np.ndarray:
    out: list[Any] = [None] * n
    end, unpack = len(buf), _U32.unpack_from
    # the lengths sit between the values: one pass, kept tight (this is most of the time of a string column); text
    # is decoded after it, a list comprehension being cheaper than a converter called in the loop
    for i in range(n):
        (size,) = unpack(buf, pos)
        pos += 4
        stop = pos + size
        if stop > end:
            raise _Bad("a BYTE_ARRAY value runs past the end of its page")
        out[i] = buf[pos:stop]
        pos = stop
    return _objects([v.decode() for v in out] if text else out)


def _plain(leaf: _Leaf, buf: bytes, pos: int, n: int) -> np.ndarray:
    p = leaf.elem.ptype
    if p in _NUMPY:
        dtype = np.dtype(_NUMPY[p])
        _need(buf, pos, dtype.itemsize * n)
        return np.frombuffer(buf, dtype=dtype, count=n, offset=pos)
    if p == _BOOLEAN:
        _need(buf, pos, (n + 7) // 8)
        raw = np.frombuffer(buf, dtype=np.uint8, count=(n + 7) // 8, offset=pos)
        return np.unpackbits(raw, bitorder="little")[:n].astype(bool)
    if p in (_INT96, _FLBA):
        k = 12 if p == _INT96 else leaf.elem.type_length
        if k <= 0:
            raise _Bad(f"FIXED_LEN_BYTE_ARRAY of length {k}")
        _need(buf, pos, k * n)
        return np.frombuffer(buf, dtype=np.uint8, count=k * n, offset=pos).reshape(n, k)
    return _byte_arrays(buf, pos, n, leaf.text)


def _slices(buf: bytes, pos: int, lengths: np.ndarray, text: bool) -> list[Any]:
    if lengths.size and (lengths.min() < 0 or lengths.max() > len(buf)):
        raise _Bad("a value length beyond its page")
    ends = (np.cumsum(lengths) + pos).tolist()
    if ends and ends[-1] > len(buf):
        raise _Bad("DELTA_LENGTH_BYTE_ARRAY data ends early")
    starts = [pos, *ends[:-1]]
    if text:
        return [buf[a:b].decode() for a, b in zip(starts, ends)]
    return [buf[a:b] for a, b in zip(starts, ends)]


def _values(leaf: _Leaf, enc: int, buf: bytes, pos: int, n: int, dictionary: np.ndarray | None) -> np.ndarray:
    """The ``n`` non-null values of a page, as Python-ready values (converted with the leaf's logical type)."""
    p = leaf.elem.ptype
    if enc in (2, 8):
        if dictionary is None:
            raise _Bad("a page refers to a dictionary, but the column chunk has none")
        if n == 0:
            return dictionary[:0]
        idx = _rle(buf, pos + 1, len(buf), buf[pos], n)
        if idx.size and idx.max() >= len(dictionary):
            raise _Bad(f"a dictionary index is beyond the {len(dictionary)} entries of the dictionary")
        return dictionary[idx]
    if n == 0:
        return _EMPTY
    if enc == 0:
        values = _plain(leaf, buf, pos, n)
    elif enc == 3 and p == _BOOLEAN:
        (size,) = _U32.unpack_from(buf, pos)
        values = _rle(buf, pos + 4, min(len(buf), pos + 4 + size), 1, n).astype(bool)
    elif enc == 5 and p in (_INT32, _INT64):
        values = _delta_binary(buf, pos)[0]
        values = values.astype(np.int32) if p == _INT32 else values
    elif enc == 6 and p == _BYTE_ARRAY:
        lengths, pos = _delta_binary(buf, pos)
        values = _objects(_slices(buf, pos, lengths[:n], leaf.text))
    elif enc == 7 and p in (_BYTE_ARRAY, _FLBA):
        prefixes, pos = _delta_binary(buf, pos)
        lengths, pos = _delta_binary(buf, pos)
        if len(prefixes) != len(lengths):
            raise _Bad("DELTA_BYTE_ARRAY prefixes and suffixes differ in number")
        out, prev = [], b""
        for size, suffix in zip(prefixes.tolist(), _slices(buf, pos, lengths, False)):
            if size < 0 or size > len(prev):
                raise _Bad("a DELTA_BYTE_ARRAY prefix is longer than the value before it")
            prev = prev[:size] + suffix
            out.append(prev)
        if p == _FLBA:
            k = leaf.elem.type_length
            if any(len(v) != k for v in out) or k <= 0:
                raise _Bad(f"a value is not {k} bytes long")
            values = np.frombuffer(b"".join(out), dtype=np.uint8).reshape(-1, k)
        else:
            values = _objects([v.decode() for v in out] if leaf.text else out)
    elif enc == 9 and p in (_FLOAT, _DOUBLE, _INT32, _INT64, _FLBA):
        k = leaf.elem.type_length if p == _FLBA else np.dtype(_NUMPY[p]).itemsize
        if k <= 0:
            raise _Bad(f"FIXED_LEN_BYTE_ARRAY of length {k}")
        _need(buf, pos, k * n)
        # byte i of every value is stored together: transpose the k streams back into values
        split = np.frombuffer(buf, dtype=np.uint8, count=k * n, offset=pos).reshape(k, n).T.copy()
        values = split if p == _FLBA else split.view(_NUMPY[p]).reshape(n)
    else:
        raise _Bad(f"page uses encoding {_ENCODINGS.get(enc, enc)} on {_PHYSICAL[p or 0]}, which is not supported")
    if len(values) < n:
        raise _Bad(f"a page holds {len(values)} values where its levels need {n}")
    return leaf.convert(values[:n]) if leaf.convert else values[:n]


def _levels(buf: bytes, pos: int, enc: int, max_level: int, n: int) -> tuple[np.ndarray, int]:
    """The levels of a data page v1 at ``pos`` (RLE with a length prefix, or the old BIT_PACKED) and their end."""
    width = max_level.bit_length()
    if enc == 3:
        (size,) = _U32.unpack_from(buf, pos)
        pos += 4
        if pos + size > len(buf):
            raise _Bad("levels run past the end of the page")
        levels, pos = _rle(buf, pos, pos + size, width, n), pos + size
    elif enc == 4:
        levels, pos = _unpack(buf, pos, n, width, msb_first=True), pos + (n * width + 7) // 8
    else:
        raise _Bad(f"levels use encoding {_ENCODINGS.get(enc, enc)}, which is not supported")
    return _checked(levels, max_level), pos


def _checked(levels: np.ndarray, max_level: int) -> np.ndarray:
    if levels.size and levels.max() > max_level:
        raise _Bad(f"a level is above the column's maximum of {max_level}")
    return levels.astype(np.int16)


_Levels = tuple[np.ndarray | None, np.ndarray | None, np.ndarray]  # definition levels, repetition levels, values


def _read_chunk(fh: BinaryIO, size: int, leaf: _Leaf, cc: Any) -> _Levels:
    """Levels and non-null values of one column chunk."""
    defs: list[np.ndarray] = []
    reps: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for dfn, rep, values in _pages(leaf, *_chunk_bytes(fh, size, cc)):
        vals.append(values)
        if rep is not None:
            reps.append(rep)
        if dfn is not None:
            defs.append(dfn)
    values = (np.concatenate(vals) if len(vals) > 1 else vals[0]) if vals else _EMPTY
    return _joined(defs, leaf.max_def), _joined(reps, leaf.max_rep), values


def _chunk_bytes(fh: BinaryIO, size: int, cc: Any) -> tuple[bytes, int, int]:
    """The (compressed) bytes of one column chunk, its codec and its number of level entries."""
    if not isinstance(cc, dict):
        raise _Bad("damaged metadata (a column chunk is not a struct)")
    if cc.get(1) is not None:
        raise _Bad("the column's data lies in another file, which is not supported")
    md = _sub(cc, 3)
    codec, num_values, total = _int(md, 4), _int(md, 5), _int(md, 7)
    start, dict_start = _int(md, 9), _opt_int(md, 11)
    if dict_start is not None and 0 < dict_start < start:
        start = dict_start
    if codec not in _CODECS or codec in (3, 4):
        raise _Bad(f"the column is compressed with {_CODECS.get(codec, f'codec {codec}')}, which is not supported")
    if num_values < 0 or num_values > MAX_CHUNK_VALUES:
        raise _Bad(f"a column chunk claims {num_values:,} values")
    if start < 4 or total < 0 or start + total > size - 8:
        raise _Bad("a column chunk lies outside the file")
    fh.seek(start)
    data = fh.read(total)
    if len(data) != total:
        raise _Bad("the file ends inside a column chunk")
    return data, codec, num_values


def _pages(leaf: _Leaf, data: bytes, codec: int, num_values: int) -> Iterator[_Levels]:
    """The levels and non-null values of each data page of a column chunk, decoded as they are asked for."""
    pos = got = 0
    dictionary: np.ndarray | None = None
    rep_width = leaf.max_rep.bit_length()
    def_width = leaf.max_def.bit_length()
    while got < num_values:
        if pos >= len(data):
            raise _Bad(f"the column chunk ends after {got:,} of its {num_values:,} values")
        try:
            header, pos = _t_struct(data, pos)
        except IndexError:
            raise _Bad("damaged page header") from None
        kind, usize, csize = _int(header, 1), _int(header, 2), _int(header, 3)
        if csize < 0 or pos + csize > len(data):
            raise _Bad("a page runs past the end of its column chunk")
        body = data[pos:pos + csize]
        pos += csize
        if kind == 2:
            dh = _sub(header, 7)
            n = _int(dh, 1)
            if n < 0 or n > MAX_CHUNK_VALUES:
                raise _Bad(f"a dictionary claims {n:,} values")
            raw = _decompress(codec, body, usize)
            plain = _plain(leaf, raw, 0, n)
            dictionary = leaf.convert(plain) if leaf.convert else plain
            continue
        if kind not in (0, 3):
            continue  # index pages, and page types added since
        h = _sub(header, 5 if kind == 0 else 8)
        n = _int(h, 1)
        if n < 0 or got + n > num_values:
            raise _Bad(f"the pages hold more than the {num_values:,} values of the column chunk")
        if kind == 0:
            raw, at = _decompress(codec, body, usize), 0
            enc = _int(h, 2)
            rep = None
            if leaf.max_rep:
                rep, at = _levels(raw, at, _int(h, 4, 3), leaf.max_rep, n)
            dfn = None
            if leaf.max_def:
                dfn, at = _levels(raw, at, _int(h, 3, 3), leaf.max_def, n)
        else:
            enc, dlen, rlen = _int(h, 4), _int(h, 5, 0), _int(h, 6, 0)
            if dlen < 0 or rlen < 0 or dlen + rlen > len(body):
                raise _Bad("the levels of a page run past its end")
            # v2 keeps the levels uncompressed ahead of the (maybe compressed) values
            rep = _checked(_rle(body, 0, rlen, rep_width, n), leaf.max_rep) if leaf.max_rep else None
            dfn = _checked(_rle(body, rlen, rlen + dlen, def_width, n), leaf.max_def) if leaf.max_def else None
            raw, at = body[rlen + dlen:], 0
            if h.get(7, True):
                raw = _decompress(codec, raw, usize - rlen - dlen)
        present = n if dfn is None else int(np.count_nonzero(dfn == leaf.max_def))
        values = _values(leaf, enc, raw, at, present, dictionary)
        got += n
        yield dfn, rep, values


def _joined(parts: list[np.ndarray], max_level: int) -> np.ndarray | None:
    if not max_level:
        return None  # a level that is always 0 is not stored
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int16)


# --- record assembly -------------------------------------------------------------------------------------------------

def _slot_mask(lv: _Levels, r: int, d: int) -> np.ndarray | None:
    """Entries of a leaf's levels that hold a value at a list depth ``r`` (``None``: every entry)."""
    defs, reps, _ = lv
    mask = None if reps is None else reps <= r
    if d > 0 and defs is not None:
        mask = defs >= d if mask is None else mask & (defs >= d)
    return mask


def _assemble(node: _Node, lvs: dict[int, _Levels], r: int, d: int) -> np.ndarray:
    """The values of ``node`` at each of its slots in a list at depth (``r``, ``d``), as an object array."""
    lv = lvs[node.first.index]
    defs, _, values = lv
    mask = _slot_mask(lv, r, d)
    sdefs = None if defs is None else defs if mask is None else defs[mask]
    if node.kind == "leaf":
        if sdefs is None or node.d_valid == 0:
            return _objects(values)
        out = np.full(len(sdefs), None, dtype=object)
        present = sdefs == node.d_valid
        out[present] = _objects(values)
        return out
    invalid = None if sdefs is None or node.d_valid == 0 else np.flatnonzero(sdefs < node.d_valid).tolist()
    if node.kind == "struct":
        kids = [_assemble(c, lvs, r, d) for c in node.children]
        if len({len(k) for k in kids}) != 1:
            raise _Bad("the columns of a group disagree on the number of values")
        names = [c.name for c in node.children]
        rows: list[Any] = [dict(zip(names, t)) for t in zip(*kids)]
    else:
        item_mask = _slot_mask(lv, node.r_item, node.d_item)
        if item_mask is None:
            raise _Bad("damaged levels of a list")
        counts = np.cumsum(item_mask)
        slots = np.arange(len(item_mask)) if mask is None else np.flatnonzero(mask)
        starts = (counts[slots] - item_mask[slots]).tolist()
        ends = starts[1:] + [int(counts[-1]) if len(counts) else 0]
        kids = [_assemble(c, lvs, node.r_item, node.d_item).tolist() for c in node.children]
        if any(len(k) != (ends[-1] if ends else 0) for k in kids):
            raise _Bad("the items of a list disagree with its levels")
        if node.kind == "list":
            items = kids[0]
            rows = [items[a:b] for a, b in zip(starts, ends)]
        else:
            keys, vals = kids
            rows = [dict(zip(keys[a:b], vals[a:b])) for a, b in zip(starts, ends)]
    for i in invalid or ():
        rows[i] = None
    return _objects(rows)


def _column(node: _Node, lvs: dict[int, _Levels]) -> list[Any]:
    defs, reps, values = lvs[node.first.index]
    if node.kind == "leaf" and reps is None and (defs is None or len(values) == len(defs)):
        return values.tolist()  # a flat column without nulls: straight from numpy
    return _assemble(node, lvs, 0, 0).tolist()


# --- reading ---------------------------------------------------------------------------------------------------------

@dataclass
class _File:
    size: int
    nodes: list[_Node]
    leaves: list[_Leaf]
    row_groups: list[dict[int, Any]]


def _footer(fh: BinaryIO) -> _File:
    fh.seek(0, 2)
    size = fh.tell()
    if size < 12:
        raise _Bad(f"not a Parquet file ({size} bytes; even an empty one has 12)")
    fh.seek(0)
    head = fh.read(4)
    fh.seek(size - 8)
    tail = fh.read(8)
    if tail[4:] == b"PARE":
        raise _Bad("the file is encrypted, which is not supported")
    if head != MAGIC or tail[4:] != MAGIC:
        raise _Bad("not a Parquet file (no PAR1 magic at its start and end)")
    length = _U32.unpack(tail[:4])[0]
    if length > size - 12:
        raise _Bad(f"damaged footer: its length ({length:,} bytes) reaches beyond the start of the file")
    fh.seek(size - 8 - length)
    buf = fh.read(length)
    try:
        meta, _ = _t_struct(buf, 0)
    except IndexError:
        raise _Bad("damaged footer (its metadata ends early)") from None
    leaves: list[_Leaf] = []
    root = _elements(_seq(meta, 2))
    nodes = [_build(e, 0, 0, leaves, ()) for e in root.children or ()]
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise _Bad("damaged schema (two columns share a name)")
    for leaf in leaves:
        leaf.text, leaf.convert = _converter(leaf.elem)
    groups = _seq(meta, 4)
    if not all(isinstance(g, dict) for g in groups):
        raise _Bad("damaged metadata (a row group is not a struct)")
    return _File(size, nodes, leaves, groups)


@contextmanager
def _in_leaf(leaf: _Leaf) -> Iterator[None]:
    """Name ``leaf`` in whatever goes wrong decoding its column chunk (a damaged file, never another exception)."""
    try:
        yield
    except _Bad as exc:
        raise _Bad(exc.reason, exc.field or leaf.dotted) from exc
    except UnicodeDecodeError as exc:
        raise _Bad(f"a string is not valid UTF-8 ({exc.reason})", leaf.dotted) from exc
    except _DAMAGE as exc:
        raise _Bad(f"damaged column data ({_what(exc)})", leaf.dotted) from exc


@contextmanager
def _in_node(node: _Node) -> Iterator[None]:
    """Name ``node`` in whatever goes wrong assembling its values from the levels of its leaves."""
    try:
        yield
    except _Bad as exc:
        raise _Bad(exc.reason, node.name) from exc
    except _DAMAGE as exc:
        raise _Bad(f"damaged levels ({_what(exc)})", node.name) from exc


def _group_chunks(f: _File, rg: dict[int, Any]) -> tuple[list[Any], int]:
    """The column chunks (one per leaf) and the number of rows of a row group."""
    chunks = _seq(rg, 1)
    if len(chunks) != len(f.leaves):
        raise _Bad(f"a row group has {len(chunks)} column chunks for {len(f.leaves)} columns")
    return chunks, _int(rg, 3)


def _wrong_count(node: _Node, count: int, num_rows: int) -> _Bad:
    return _Bad(f"holds {count:,} values in a row group of {num_rows:,} rows", node.name)


def _read_group(fh: BinaryIO, f: _File, rg: dict[int, Any], nodes: list[_Node]) -> dict[str, list[Any]]:
    chunks, num_rows = _group_chunks(f, rg)
    lvs: dict[int, _Levels] = {}
    out: dict[str, list[Any]] = {}
    for node in nodes:
        for leaf in node.leaves():
            with _in_leaf(leaf):
                lvs[leaf.index] = _read_chunk(fh, f.size, leaf, chunks[leaf.index])
        with _in_node(node):
            column = _column(node, lvs)
        if len(column) != num_rows:
            raise _wrong_count(node, len(column), num_rows)
        out[node.name] = column
    return out


class _Records:
    """The column chunk of one leaf, decoded a page at a time as records are taken from its front.

    iter_rows keeps one per leaf rather than whole decoded chunks: a row group of a million rows, decoded at once,
    is hundreds of megabytes of Python objects (700 MiB for nine columns of labels), whereas what is decoded here at
    any time is the pages the batch in hand reaches into (the rest of the chunk stays compressed until then).
    """

    def __init__(self, leaf: _Leaf, pages: Iterator[_Levels]):
        self.leaf = leaf
        self.pages = pages
        self.parts: list[_Levels] = []  # decoded pages not yet taken (the first maybe in part), in order
        self.entries = 0  # level entries in parts
        self.starts = 0  # records starting in parts: entries at repetition level 0

    def _pull(self) -> bool:
        """Decode the next data page onto ``parts``; False at the end of the chunk."""
        page = next(self.pages, None)
        if page is None:
            return False
        dfn, rep, values = page
        self.parts.append(page)
        # a leaf with neither level (required, outside any list) has one entry per value
        self.entries += len(rep) if rep is not None else len(dfn) if dfn is not None else len(values)
        if rep is not None:
            self.starts += int(np.count_nonzero(rep == 0))
        return True

    def _joined(self) -> _Levels:
        """``parts`` as one page (the same arrays _read_chunk would give for them)."""
        if len(self.parts) == 1:
            return self.parts[0]
        leaf, parts = self.leaf, self.parts
        vals = [p[2] for p in parts]
        return (_joined([p[0] for p in parts if p[0] is not None], leaf.max_def),
                _joined([p[1] for p in parts if p[1] is not None], leaf.max_rep),
                (np.concatenate(vals) if len(vals) > 1 else vals[0]) if vals else _EMPTY)

    def take(self, n: int) -> _Levels:
        """The levels and values of the next ``n`` records (fewer where the chunk ends first).

        Args:
            n: how many records (rows of the file) to take.

        Returns:
            (definition levels, repetition levels, non-null values), as _read_chunk gives them for a whole chunk.
        """
        if self.leaf.max_rep:
            # a record runs on to where the next one starts: its end is known at the start of record n + 1 (or at
            # the chunk's end), which may lie pages further on
            while self.starts <= n and self._pull():
                pass
        else:
            while self.entries < n and self._pull():
                pass
        defs, reps, values = self._joined()
        if reps is not None:
            starts = np.flatnonzero(reps == 0)
            # entries before the first start (a damaged chunk) go with the first record, where _assemble drops them
            # as it does for a whole chunk
            end = int(starts[n]) if len(starts) > n else len(reps)
            self.starts = max(0, len(starts) - n)
        else:
            end = min(n, self.entries)
        taken = end if defs is None else int(np.count_nonzero(defs[:end] == self.leaf.max_def))
        # views, not copies: a page's arrays are freed once all of it is taken
        self.parts = [(None if defs is None else defs[end:], None if reps is None else reps[end:], values[taken:])]
        self.entries -= end
        return (None if defs is None else defs[:end], None if reps is None else reps[:end], values[:taken])

    def left(self) -> int:
        """How many records are left in the chunk (decoding what is left of it)."""
        while self._pull():
            pass
        return self.starts if self.leaf.max_rep else self.entries


def _row_batches(path: str | Path, f: _File, batch_rows: int) -> Iterator[list[dict[str, Any]]]:
    """The rows of the file in batches, each assembled from the pages it needs.

    This is what _read_group does for a whole row group, a batch at a time, with the same values and the same errors
    but one: where damaged levels leave the leaves of a group (a list of structs, a map) in step over the row group
    but not row by row, read() pairs up the wrong values, and a batch boundary inside the damage shows it ("the
    columns of a group disagree").
    """
    names = [n.name for n in f.nodes]
    for rg in f.row_groups:
        chunks, num_rows = _group_chunks(f, rg)
        # The compressed chunks are read at once (a fraction of the decoded size), so that the file is not held open
        # while the caller works through the rows.
        cursors: list[_Records] = []
        with open(path, "rb") as fh:
            for leaf in f.leaves:
                with _in_leaf(leaf):
                    cursors.append(_Records(leaf, _pages(leaf, *_chunk_bytes(fh, f.size, chunks[leaf.index]))))
        for start in range(0, num_rows, batch_rows):
            n = min(batch_rows, num_rows - start)
            lvs: dict[int, _Levels] = {}
            for leaf in f.leaves:
                with _in_leaf(leaf):
                    lvs[leaf.index] = cursors[leaf.index].take(n)
            cols = []
            for node in f.nodes:
                with _in_node(node):
                    column = _column(node, lvs)
                if len(column) != n:  # the chunk ended early: the count read() gives is the chunk's whole count
                    raise _wrong_count(node, start + len(column), num_rows)
                cols.append(column)
            del lvs  # the pages taken: not kept while the caller holds the batch
            rows = [dict(zip(names, values)) for values in zip(*cols)]
            del cols
            if rows:  # (a file with no columns has no rows to give)
                yield rows
        for node in f.nodes:
            for leaf in node.leaves():
                with _in_leaf(leaf):
                    count = max(num_rows, 0) + cursors[leaf.index].left()
                if count != num_rows:
                    raise _wrong_count(node, count, num_rows)


def _pick(f: _File, columns: list[str] | None) -> list[_Node]:
    if columns is None:
        return f.nodes
    by_name = {n.name: n for n in f.nodes}
    for name in columns:
        if name not in by_name:
            raise _Bad("the file has no such column", name)
    return [by_name[name] for name in columns]


def read_schema(path: str | Path) -> dict[str, ColumnType]:
    """The columns of a Parquet file and their types (see the module's docstring), in the file's order."""
    def run() -> dict[str, ColumnType]:
        with open(path, "rb") as fh:
            return {n.name: n.ctype for n in _footer(fh).nodes}
    return _guard(path, run)


def read(path: str | Path, columns: list[str] | None = None) -> tuple[dict[str, ColumnType], dict[str, list]]:
    """(schema, columns as Python lists) of the whole file, or of the named columns (in the order named).

    Raises:
        TrajectoryFormatError: the file is not Parquet, is damaged, or uses something this reader does not support.
    """
    def run() -> tuple[dict[str, ColumnType], dict[str, list]]:
        with open(path, "rb") as fh:
            f = _footer(fh)
            nodes = _pick(f, columns)
            out: dict[str, list[Any]] = {n.name: [] for n in nodes}
            for rg in f.row_groups:
                for name, values in _read_group(fh, f, rg, nodes).items():
                    out[name].extend(values)
            return {n.name: n.ctype for n in nodes}, out
    return _guard(path, run)


def iter_rows(path: str | Path, batch_rows: int = 10_000) -> Iterator[list[dict[str, Any]]]:
    """The rows of a Parquet file as dicts, in batches of at most ``batch_rows``.

    A batch is decoded when it is asked for, from the pages it needs: memory holds the compressed column chunks of
    one row group, a page or so of decoded values per column and the batch, however large the row group. The footer
    is read at once: a file that is not Parquet fails here, not at the first batch; a damaged page fails at the batch
    that reaches it.

    Raises:
        ValueError: ``batch_rows`` is below 1.
        TrajectoryFormatError: the file is not Parquet, is damaged, or uses something this reader does not support
            (from the iterator, for what lies past the footer).
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")

    def footer() -> _File:
        with open(path, "rb") as fh:
            return _footer(fh)

    f: _File = _guard(path, footer)

    def batches() -> Iterator[list[dict[str, Any]]]:
        rows = _row_batches(path, f, batch_rows)
        while True:
            batch = _guard(path, next, rows, None)
            if batch is None:
                return
            yield batch

    return batches()


# --- writing ---------------------------------------------------------------------------------------------------------

_FLAT = {"string": _BYTE_ARRAY, "int64": _INT64, "float64": _DOUBLE, "bool": _BOOLEAN, "binary": _BYTE_ARRAY}
_WRITE_CODECS = {"zstd": 6, "gzip": 2, "none": 0, "uncompressed": 0}


def _is_int(v: Any) -> bool:
    return bool(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            and -(1 << 63) <= v < (1 << 63))


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "int64": _is_int,
    "float64": lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)),
    "bool": lambda v: isinstance(v, (bool, np.bool_)),
    "binary": lambda v: isinstance(v, (bytes, bytearray, memoryview)),
}


# The types each column type takes without a closer look; anything else is checked value by value.
_EXACT: dict[str, set[type]] = {"string": {str}, "int64": {int}, "float64": {int, float}, "bool": {bool},
                                "binary": {bytes}}


def _first_bad(ctype: str, vals: list[Any]) -> int | None:
    """The index of the first value that ``ctype`` does not take, or None (fast when the types are the usual)."""
    if set(map(type, vals)) <= _EXACT[ctype] and (
            ctype != "int64" or not vals or (min(vals) >= -(1 << 63) and max(vals) < (1 << 63))):
        return None
    check = _CHECKS[ctype]
    return next((i for i, v in enumerate(vals) if not check(v)), None)


class _WrongValue(Exception):
    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")


def _describe(v: Any) -> str:
    text = repr(v)
    return f"{type(v).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


@dataclass
class _WLeaf:
    """A column the writer fills: its path, type, levels and values for the row group in hand."""

    path: list[str]
    ctype: str
    max_def: int
    max_rep: int
    defs: list[int] = field(default_factory=list)
    reps: list[int] = field(default_factory=list)
    vals: list[Any] = field(default_factory=list)


def _schema_type(t: Any, where: str) -> None:
    if isinstance(t, str) and t in _FLAT:
        return
    if isinstance(t, tuple) and len(t) == 2 and t[0] == "list":
        return _schema_type(t[1], f"{where}.element")
    if isinstance(t, tuple) and len(t) == 2 and t[0] == "struct" and isinstance(t[1], dict) and t[1]:
        for name, sub in t[1].items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"column {where!r}: struct field names must be non-empty strings, not {name!r}")
            _schema_type(sub, f"{where}.{name}")
        return
    raise ValueError(f"column {where!r}: unknown column type {t!r} (use one of {', '.join(_FLAT)}, "
                     "('list', T) or ('struct', {name: T}))")


def _compile(name: str, t: ColumnType, d: int, rl: int, path: list[str], elems: list[list[tuple[int, int, Any]]],
             leaves: list[_WLeaf]) -> Callable[[Any, int], None]:
    """Append the schema elements of an optional field ``name`` of type ``t`` (its parent defined at ``d``, under
    ``rl`` lists) and return the function that shreds one value of it into the leaves' levels and values."""
    path = path + [name]
    if isinstance(t, str):
        ptype = _FLAT[t]
        text = t == "string"
        elems.append([(1, 5, ptype), (3, 5, _OPTIONAL), (4, 8, name), (6, 5, 0 if text else None),
                      (10, 12, [(1, 12, [])] if text else None)])
        leaf = _WLeaf(path, t, d + 1, rl)
        leaves.append(leaf)
        add_d, add_r, add_v = leaf.defs.append, leaf.reps.append, leaf.vals.append

        def shred_leaf(v: Any, r: int) -> None:  # the values' types are checked in bulk afterwards (_first_bad)
            if v is None:
                add_d(d)
            else:
                add_d(d + 1)
                add_v(v)
            add_r(r)
        return shred_leaf
    mine_start = len(leaves)
    if t[0] == "list":
        elems.append([(3, 5, _OPTIONAL), (4, 8, name), (5, 5, 1), (6, 5, 3), (10, 12, [(3, 12, [])])])
        elems.append([(3, 5, _REPEATED), (4, 8, "list"), (5, 5, 1)])
        item = _compile("element", t[1], d + 2, rl + 1, path + ["list"], elems, leaves)
        mine = leaves[mine_start:]

        def shred_list(v: Any, r: int) -> None:
            if v is None or (isinstance(v, (list, tuple)) and not v):
                level = d if v is None else d + 1
                for leaf in mine:
                    leaf.defs.append(level)
                    leaf.reps.append(r)
            elif isinstance(v, (list, tuple)):
                item(v[0], r)
                for x in itertools.islice(v, 1, None):
                    item(x, rl + 1)
            else:
                raise _WrongValue(".".join(path), f"expected a list, got {_describe(v)}")
        return shred_list
    fields_ = t[1]
    elems.append([(3, 5, _OPTIONAL), (4, 8, name), (5, 5, len(fields_))])
    subs = [(fname, _compile(fname, ft, d + 1, rl, path, elems, leaves)) for fname, ft in fields_.items()]
    mine = leaves[mine_start:]

    def shred_struct(v: Any, r: int) -> None:
        if v is None:
            for leaf in mine:
                leaf.defs.append(d)
                leaf.reps.append(r)
        elif isinstance(v, dict):
            if not fields_.keys() >= v.keys():
                extra = sorted(map(str, v.keys() - fields_.keys()))
                raise _WrongValue(".".join(path), f"unknown struct field(s) {', '.join(extra)}")
            for fname, fn in subs:
                fn(v.get(fname), r)
        else:
            raise _WrongValue(".".join(path), f"expected a dict, got {_describe(v)}")
    return shred_struct


def _hybrid(levels: np.ndarray, width: int) -> bytes:
    """Levels in the RLE/bit-packed hybrid: runs of 64 or more as RLE, the stretches between them bit-packed (a
    lower bar would cut a column with scattered nulls into thousands of little runs, slow to write and to read)."""
    out = bytearray()
    n = len(levels)
    if n == 0:
        return b""
    vbytes = (width + 7) // 8
    change = (np.flatnonzero(levels[1:] != levels[:-1]) + 1).tolist()
    literal: int | None = None

    def pack(values: np.ndarray) -> None:
        groups = (len(values) + 7) // 8
        padded = np.zeros(groups * 8, dtype=np.uint16)
        padded[:len(values)] = values
        bits = ((padded[:, None] >> np.arange(width, dtype=np.uint16)) & 1).astype(np.uint8)
        out.extend(_uvarint(groups << 1 | 1) + np.packbits(bits.ravel(), bitorder="little").tobytes())

    for start, stop in zip([0, *change], [*change, n]):
        if stop - start >= 64:
            if literal is not None:
                # a bit-packed run holds whole groups of 8: borrow the rest from this run
                cut = literal + -(-(start - literal) // 8) * 8
                pack(levels[literal:cut])
                start, literal = cut, None
            out += _uvarint((stop - start) << 1) + int(levels[start]).to_bytes(vbytes, "little")
        elif literal is None:
            literal = start
    if literal is not None:
        pack(levels[literal:])
    return bytes(out)


def _encode(ctype: str, vals: list[Any], path: str, first_row: int) -> tuple[bytes, np.ndarray | None]:
    """PLAIN bytes of the values and, for byte arrays, the end offset of each value (to cut pages)."""
    if ctype == "int64":
        return np.array(vals, dtype="<i8").tobytes(), None
    if ctype == "float64":
        try:
            return np.array(vals, dtype="<f8").tobytes(), None
        except OverflowError:
            raise ValueError(f"column {path!r}: an int too large for float64") from None
    if ctype == "bool":
        return np.packbits(np.array(vals, dtype=bool), bitorder="little").tobytes(), None
    if ctype == "string":
        try:
            parts = [s.encode() for s in vals]
        except UnicodeEncodeError as exc:
            raise ValueError(f"column {path!r} (row group from row {first_row}): a string that is not valid "
                             f"Unicode ({exc.reason})") from None
    else:
        parts = [bytes(b) for b in vals]
    pack = _U32.pack
    ends = np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)) + 4)
    return b"".join(itertools.chain.from_iterable(zip(map(pack, map(len, parts)), parts))), ends


class _Compressor:
    def __init__(self, codec: int):
        self.codec = codec
        if codec == 6:
            import zstandard
            self._zstd = zstandard.ZstdCompressor(level=3)

    def __call__(self, data: bytes) -> bytes:
        if self.codec == 6:
            return self._zstd.compress(data)
        if self.codec == 2:
            z = zlib.compressobj(6, zlib.DEFLATED, 31)
            return z.compress(data) + z.flush()
        return data


def _chunk(leaf: _WLeaf, defs: np.ndarray, reps: np.ndarray | None, num_rows: int, first_row: int,
           compress: _Compressor, offset: int) -> tuple[list[bytes], list[tuple[int, int, Any]], int, int]:
    """The pages of one column chunk, its ColumnMetaData, and its compressed and uncompressed sizes."""
    dotted = ".".join(leaf.path)
    data, ends = _encode(leaf.ctype, leaf.vals, dotted, first_row)
    pages = max(1, min(num_rows, -(-len(data) // _PAGE_TARGET)))
    row_starts = np.flatnonzero(reps == 0) if reps is not None else None
    value_counts = np.concatenate(([0], np.cumsum(defs == leaf.max_def)))
    out: list[bytes] = []
    csize = usize = 0
    for p in range(pages):
        ra, rb = p * num_rows // pages, (p + 1) * num_rows // pages
        if row_starts is None:
            ea, eb = ra, rb
        else:
            ea = int(row_starts[ra]) if ra < len(row_starts) else len(defs)
            eb = int(row_starts[rb]) if rb < len(row_starts) else len(defs)
        va, vb = int(value_counts[ea]), int(value_counts[eb])
        if leaf.ctype == "bool":  # bit-packed: a page's values are packed afresh from its first
            values = data if pages == 1 else np.packbits(np.array(leaf.vals[va:vb], dtype=bool),
                                                         bitorder="little").tobytes()
        elif ends is None:
            values = data[va * 8:vb * 8]
        else:
            values = data[(int(ends[va - 1]) if va else 0):(int(ends[vb - 1]) if vb else 0)]
        body = bytearray()
        if leaf.max_rep and reps is not None:
            levels = _hybrid(reps[ea:eb], leaf.max_rep.bit_length())
            body += _U32.pack(len(levels)) + levels
        levels = _hybrid(defs[ea:eb], leaf.max_def.bit_length())
        body += _U32.pack(len(levels)) + levels + values
        packed = compress(bytes(body))
        header = _w_struct([(1, 5, 0), (2, 5, len(body)), (3, 5, len(packed)),
                            (5, 12, [(1, 5, eb - ea), (2, 5, 0), (3, 5, 3), (4, 5, 3)])])
        out += [header, packed]
        csize += len(header) + len(packed)
        usize += len(header) + len(body)
    meta = [(1, 5, _FLAT[leaf.ctype]), (2, 9, (5, [0, 3])), (3, 9, (8, leaf.path)), (4, 5, compress.codec),
            (5, 6, len(defs)), (6, 6, usize), (7, 6, csize), (9, 6, offset)]
    return out, meta, csize, usize


def write(path: str | Path, columns: dict[str, list], schema: dict[str, ColumnType], *,
          compression: str = "zstd", row_group_rows: int = 100_000) -> int:
    """Write the columns as one Parquet file; return the number of rows.

    Args:
        path: the file to write (written in place: the caller renames a temporary file if it wants atomicity).
        columns: column name -> values, every list the same length; ``None`` is a null at any level (an empty
            list is an empty list, not a null).
        schema: column name -> :data:`ColumnType`, in the order of the file's columns.
        compression: ``"zstd"``, ``"gzip"`` or ``"none"``.
        row_group_rows: rows per row group.

    Raises:
        ValueError: ragged or missing columns, an unknown type, or a value of the wrong type (naming the column and
            the row). The partly written file is removed.
    """
    codec = _WRITE_CODECS.get(str(compression).lower())
    if codec is None:
        raise ValueError(f"unknown compression {compression!r} (use zstd, gzip or none)")
    if row_group_rows < 1:
        raise ValueError(f"row_group_rows must be at least 1, not {row_group_rows}")
    if not schema:
        raise ValueError("no columns to write")
    if set(columns) != set(schema):
        missing, extra = sorted(set(schema) - set(columns)), sorted(set(columns) - set(schema))
        raise ValueError(f"the columns do not match the schema (missing: {missing}, not in the schema: {extra})")
    lengths = {name: len(columns[name]) for name in schema}
    num_rows = next(iter(lengths.values()))
    if any(n != num_rows for n in lengths.values()):
        raise ValueError(f"ragged columns: {', '.join(f'{k!r} has {v}' for k, v in lengths.items())} rows")
    elems: list[list[tuple[int, int, Any]]] = [[(4, 8, "schema"), (5, 5, len(schema))]]
    plans = []
    for name, t in schema.items():
        _schema_type(t, name)
        leaves: list[_WLeaf] = []
        plans.append((name, t, _compile(name, t, 0, 0, [], elems, leaves), leaves))
    compress = _Compressor(codec)
    try:
        with open(path, "wb") as fh:
            fh.write(MAGIC)
            offset = 4
            groups: list[list[tuple[int, int, Any]]] = []
            for first in range(0, num_rows, row_group_rows):
                last = min(num_rows, first + row_group_rows)
                chunks, total_c, total_u = [], 0, 0
                for name, t, shred, leaves in plans:
                    for leaf, defs, reps in _shred(name, t, columns[name], first, last, shred, leaves):
                        pages, meta, csize, usize = _chunk(leaf, defs, reps, last - first, first, compress, offset)
                        fh.writelines(pages)
                        chunks.append([(2, 6, offset), (3, 12, meta)])
                        offset += csize
                        total_c += csize
                        total_u += usize
                groups.append([(1, 9, (12, chunks)), (2, 6, total_u), (3, 6, last - first),
                               (5, 6, chunks[0][0][2]), (6, 6, total_c), (7, 4, len(groups))])
            footer = _w_struct([(1, 5, 1), (2, 9, (12, elems)), (3, 6, num_rows), (4, 9, (12, groups)),
                                (6, 8, "rollscope")])
            fh.write(footer + _U32.pack(len(footer)) + MAGIC)
    except BaseException:
        Path(path).unlink(missing_ok=True)
        raise
    return num_rows


def _shred(name: str, t: ColumnType, column: Any, first: int, last: int, shred: Callable[[Any, int], None],
           leaves: list[_WLeaf]) -> Iterator[tuple[_WLeaf, np.ndarray, np.ndarray | None]]:
    """The leaves of one column for rows [first, last), with their levels (and values on the leaf)."""
    rows = column[first:last]
    if isinstance(t, str):
        # a flat column (most of them): its levels in bulk rather than value by value
        leaf = leaves[0]
        leaf.vals = [v for v in rows if v is not None]
        defs = np.fromiter((v is not None for v in rows), dtype=bool, count=len(rows)).astype(np.int16)
        bad = _first_bad(t, leaf.vals)
        if bad is not None:
            row = int(np.flatnonzero(defs)[bad])
            raise ValueError(f"column {name!r}, row {first + row}: expected {t}, got {_describe(rows[row])}")
        yield leaf, defs, None
        return
    for leaf in leaves:  # emptied in place: the shredding functions hold their append methods
        leaf.defs.clear()
        leaf.reps.clear()
        leaf.vals.clear()
    for i, v in enumerate(rows):
        try:
            shred(v, 0)
        except _WrongValue as exc:
            raise ValueError(f"column {name!r}, row {first + i}: {exc}") from None
        except RecursionError:
            raise ValueError(f"column {name!r}, row {first + i}: nested too deeply") from None
    for leaf in leaves:
        defs, reps = np.array(leaf.defs, dtype=np.int16), np.array(leaf.reps, dtype=np.int16)
        bad = _first_bad(leaf.ctype, leaf.vals)
        if bad is not None:
            entry = int(np.flatnonzero(defs == leaf.max_def)[bad])
            row = first + int(np.count_nonzero(reps[:entry + 1] == 0)) - 1
            raise ValueError(f"column {name!r}, row {row}: {'.'.join(leaf.path)}: expected {leaf.ctype}, "
                             f"got {_describe(leaf.vals[bad])}")
        yield leaf, defs, reps
