"""gui_app.core.parquet: round trips, polars and pyarrow as independent oracles both ways (they are test-only),
hand-built files for the layouts they no longer write, and damaged files (each a TrajectoryFormatError naming the
file: never another exception, never a hang)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import re
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_app.core import parquet as P
from gui_app.core.errors import TrajectoryFormatError

try:  # the oracle of the property tests, where it is installed
    import pyarrow.parquet as _pq
except ImportError:  # pragma: no cover
    _pq = None

ROOT = Path(__file__).resolve().parents[1]
UTC = dt.timezone.utc


@pytest.fixture
def pl():
    return pytest.importorskip("polars")


@pytest.fixture
def pa():
    return pytest.importorskip("pyarrow")


@pytest.fixture
def pq(pa):
    import pyarrow.parquet as pq

    return pq


# --- sample data -----------------------------------------------------------------------------------------------------

SCHEMA = {
    "s": "string",
    "i": "int64",
    "f": "float64",
    "b": "bool",
    "bin": "binary",
    "tags": ("list", "string"),
    "st": ("struct", {"a": "int64", "names": ("list", "string")}),
    "spans": ("list", ("struct", {"start": "int64", "label": "string"})),
    "grid": ("list", ("list", "float64")),
}
UNICODE = ["", "plain", "naïve café", "日本語テキスト", "emoji 🎉👩‍👩‍👧", "rtl \u202eabc", "nul\x00inside", "\x00",
           "tab\tnew\nline", "\ufeffbom", "a" * 1000]


def sample(n: int) -> dict[str, list]:
    """``n`` rows of every type, with nulls at each level and empty lists."""
    rnd = random.Random(n)
    cols: dict[str, list] = {k: [] for k in SCHEMA}
    for r in range(n):
        cols["s"].append(None if r % 7 == 3 else UNICODE[r % len(UNICODE)])
        cols["i"].append(None if r % 5 == 1 else rnd.randrange(-(2**63), 2**63))
        cols["f"].append(None if r % 6 == 2 else rnd.choice([0.0, -0.0, 1.5, math.inf, -math.inf, 1e308, 5e-324,
                                                              rnd.random()]))
        cols["b"].append(None if r % 4 == 0 else r % 3 == 0)
        cols["bin"].append(None if r % 9 == 0 else bytes(rnd.randrange(256) for _ in range(r % 5)))
        cols["tags"].append(None if r % 8 == 0 else [] if r % 8 == 1 else
                            [None if j == 1 else UNICODE[(r + j) % len(UNICODE)] for j in range(r % 4)])
        cols["st"].append(None if r % 6 == 0 else {"a": None if r % 6 == 1 else r,
                                                   "names": None if r % 3 == 0 else ["x"] * (r % 3)})
        cols["spans"].append(None if r % 10 == 0 else [None if j == 2 else {"start": j, "label": None if j == 1 else
                                                                           f"l{j}"} for j in range(r % 4)])
        cols["grid"].append(None if r % 11 == 0 else [[float(j), None] if j % 2 else [] if j % 3 else None
                                                      for j in range(r % 5)])
    return cols


def rows_of(cols: dict[str, list]) -> list[dict]:
    names = list(cols)
    return [dict(zip(names, values)) for values in zip(*cols.values())]


# --- ours -> ours ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("row_group_rows", [1, 7, 100_000])
@pytest.mark.parametrize("compression", ["zstd", "gzip", "none"])
def test_round_trip_every_type(tmp_path, compression, row_group_rows):
    cols = sample(60)
    path = tmp_path / "t.parquet"
    assert P.write(path, cols, SCHEMA, compression=compression, row_group_rows=row_group_rows) == 60
    schema, got = P.read(path)
    assert schema == SCHEMA and list(schema) == list(SCHEMA) and list(got) == list(SCHEMA)
    assert got == cols
    assert P.read_schema(path) == SCHEMA


def test_special_floats_ints_and_python_lookalikes(tmp_path):
    path = tmp_path / "t.parquet"
    cols = {"f": [math.nan, 1, -0.0, None, np.float32(0.5), np.int64(7)],
            "i": [-(2**63), 2**63 - 1, 0, None, np.int32(-4), np.uint8(200)],
            "b": [np.bool_(True), False, None, True, False, True],
            "l": [("a", "b"), (), None, ["c"], [], ("",)],
            "bin": [bytearray(b"x"), memoryview(b"yz"), b"", None, b"\x00" * 3, b"\xff"]}
    schema = {"f": "float64", "i": "int64", "b": "bool", "l": ("list", "string"), "bin": "binary"}
    P.write(path, cols, schema)
    got = P.read(path)[1]
    assert math.isnan(got["f"][0]) and got["f"][1:] == [1.0, -0.0, None, 0.5, 7.0]
    assert type(got["f"][1]) is float and math.copysign(1, got["f"][2]) == -1
    assert got["i"] == [-(2**63), 2**63 - 1, 0, None, -4, 200] and type(got["i"][4]) is int
    assert got["b"] == [True, False, None, True, False, True]
    assert got["l"] == [["a", "b"], [], None, ["c"], [], [""]]
    assert got["bin"] == [b"x", b"yz", b"", None, b"\x00\x00\x00", b"\xff"]


def test_iter_rows_in_batches_across_row_groups(tmp_path):
    cols = sample(50)
    path = tmp_path / "t.parquet"
    P.write(path, cols, SCHEMA, row_group_rows=20)
    batches = list(P.iter_rows(path, batch_rows=8))
    assert [len(b) for b in batches] == [8, 8, 4, 8, 8, 4, 8, 2]
    assert [r for b in batches for r in b] == rows_of(cols)
    with pytest.raises(ValueError):
        P.iter_rows(path, batch_rows=0)


def test_read_named_columns(tmp_path):
    cols = sample(20)
    path = tmp_path / "t.parquet"
    P.write(path, cols, SCHEMA)
    schema, got = P.read(path, ["spans", "s"])
    assert list(schema) == list(got) == ["spans", "s"]
    assert schema == {"spans": SCHEMA["spans"], "s": "string"}
    assert got == {"spans": cols["spans"], "s": cols["s"]}
    with pytest.raises(TrajectoryFormatError, match=re.escape(f"{path}: field 'nope': the file has no such column")):
        P.read(path, ["s", "nope"])


def test_zero_rows(tmp_path, pl, pq):
    path = tmp_path / "t.parquet"
    assert P.write(path, {k: [] for k in SCHEMA}, SCHEMA) == 0
    assert P.read(path) == (SCHEMA, {k: [] for k in SCHEMA})
    assert list(P.iter_rows(path)) == []
    assert pl.read_parquet(path).shape == (0, len(SCHEMA))
    assert pq.read_table(path).num_rows == 0


def data_pages(path: Path, leaf: int) -> int:
    """How many data pages the column chunk of leaf ``leaf`` in the first row group holds."""
    with open(path, "rb") as fh:
        md = P._footer(fh).row_groups[0][1][leaf][3]
        fh.seek(md.get(11) or md[9])  # the chunk starts at its dictionary page, where it has one
        data = fh.read(md[7])
    pos = pages = 0
    while pos < len(data):
        header, pos = P._t_struct(data, pos)
        pos += header[3]
        pages += header[1] in (0, 3)
    return pages


def test_big_columns_are_cut_into_pages(tmp_path, pq):
    path = tmp_path / "t.parquet"
    cols = {"s": ["x" * 5000 + str(i) for i in range(1000)], "l": [[str(i) * 300] * 3 if i % 9 else None
                                                                   for i in range(1000)],
            "i": list(range(1000)), "b": [i % 3 == 0 for i in range(1000)]}
    schema = {"s": "string", "l": ("list", "string"), "i": "int64", "b": "bool"}
    P.write(path, cols, schema)
    assert data_pages(path, 0) >= 4 and data_pages(path, 1) >= 2 and data_pages(path, 2) == 1
    assert P.read(path)[1] == cols
    assert pq.read_table(path).to_pydict() == cols


def test_level_runs_around_the_rle_boundaries(tmp_path, pq):
    """Runs of nulls and values of every length near the bit-packed group (8) and the RLE bar (64)."""
    values: list = []
    for k, run in enumerate([1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200, 3, 128, 1, 1, 2, 70]):
        values += [None if k % 2 else k] * run
    path = tmp_path / "t.parquet"
    for rg in (1000, 100, 33):
        P.write(path, {"x": values, "l": [None if v is None else [v] * (v % 3) for v in values]},
                {"x": "int64", "l": ("list", "int64")}, row_group_rows=rg)
        got = P.read(path)[1]
        assert got["x"] == values == pq.read_table(path).column("x").to_pylist()
        assert got["l"] == pq.read_table(path).column("l").to_pylist()


@pytest.mark.parametrize("schema, columns, message", [
    ({"i": "int64"}, {"i": [1, True]}, "column 'i', row 1: expected int64, got bool True"),
    ({"i": "int64"}, {"i": [1, 2**63]}, "column 'i', row 1: expected int64, got int"),
    ({"i": "int64"}, {"i": [1.0]}, "column 'i', row 0: expected int64, got float"),
    ({"f": "float64"}, {"f": [1.0, "2"]}, "column 'f', row 1: expected float64, got str '2'"),
    ({"f": "float64"}, {"f": [False]}, "column 'f', row 0: expected float64, got bool"),
    ({"b": "bool"}, {"b": [None, 1]}, "column 'b', row 1: expected bool, got int"),
    ({"s": "string"}, {"s": [b"x"]}, "column 's', row 0: expected string, got bytes"),
    ({"x": "binary"}, {"x": ["x"]}, "column 'x', row 0: expected binary, got str"),
    ({"l": ("list", "int64")}, {"l": [[1], [2, "3"]]}, "column 'l', row 1: l.list.element: expected int64, got str"),
    ({"l": ("list", "int64")}, {"l": [[1], "12"]}, "column 'l', row 1: l: expected a list, got str"),
    ({"st": ("struct", {"a": "int64"})}, {"st": [{"a": 1}, {"b": 2}]}, "column 'st', row 1: st: unknown struct "
                                                                          "field(s) b"),
    ({"st": ("struct", {"a": "int64"})}, {"st": [[1]]}, "column 'st', row 0: st: expected a dict, got list"),
    ({"ls": ("list", ("struct", {"a": ("list", "string")}))}, {"ls": [None, [], [{"a": ["x"]}, {"a": [None, 5]}]]},
     "column 'ls', row 2: ls.list.element.a.list.element: expected string, got int"),
    ({"a": "int64", "b": "int64"}, {"a": [1, 2], "b": [1]}, "ragged columns: 'a' has 2, 'b' has 1 rows"),
    ({"a": "int64"}, {"b": [1]}, "the columns do not match the schema"),
    ({"a": "decimal"}, {"a": [1]}, "column 'a': unknown column type 'decimal'"),
    ({"a": ("list",)}, {"a": [1]}, "unknown column type"),
    ({"a": ("struct", {})}, {"a": [None]}, "unknown column type"),
    ({"a": ("list", "date")}, {"a": [None]}, "column 'a.element': unknown column type 'date'"),
    ({}, {}, "no columns"),
    ({"s": "string"}, {"s": ["ok", "\ud800"]}, "column 's' (row group from row 0): a string that is not valid Unicode"),
])
def test_write_rejects_wrong_values(tmp_path, schema, columns, message):
    path = tmp_path / "bad.parquet"
    with pytest.raises(ValueError, match=re.escape(message)):
        P.write(path, columns, schema, row_group_rows=2)
    assert not path.exists()  # no half-written file is left behind


def test_write_rejects_bad_options(tmp_path):
    with pytest.raises(ValueError, match="unknown compression 'snappy'"):
        P.write(tmp_path / "x.parquet", {"a": [1]}, {"a": "int64"}, compression="snappy")
    with pytest.raises(ValueError, match="row_group_rows"):
        P.write(tmp_path / "x.parquet", {"a": [1]}, {"a": "int64"}, row_group_rows=0)


NESTED = ("list", ("struct", {"n": "int64", "tags": ("list", "string"), "w": "float64"}))
nested_values = st.none() | st.lists(st.none() | st.fixed_dictionaries({
    "n": st.none() | st.integers(-(2**63), 2**63 - 1),
    "tags": st.none() | st.lists(st.none() | st.text(max_size=5), max_size=3),
    "w": st.none() | st.floats(allow_nan=False)}), max_size=4)


@given(rows=st.lists(nested_values, max_size=30), flags=st.lists(st.none() | st.booleans(), min_size=30,
                                                                   max_size=30), rg=st.integers(1, 10))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_round_trip_property(tmp_path, rows, flags, rg):
    path = tmp_path / "h.parquet"
    cols = {"c": rows, "k": flags[:len(rows)]}
    P.write(path, cols, {"c": NESTED, "k": "bool"}, row_group_rows=rg)
    assert P.read(path)[1] == cols
    if _pq is not None:
        assert _pq.read_table(path).to_pydict() == cols


# --- ours -> polars, pyarrow -----------------------------------------------------------------------------------------

def test_polars_reads_ours(tmp_path, pl):
    cols = sample(80)
    path = tmp_path / "t.parquet"
    P.write(path, cols, SCHEMA, row_group_rows=30)
    df = pl.read_parquet(path)
    assert dict(df.schema) == {
        "s": pl.String, "i": pl.Int64, "f": pl.Float64, "b": pl.Boolean, "bin": pl.Binary, "tags": pl.List(pl.String),
        "st": pl.Struct({"a": pl.Int64, "names": pl.List(pl.String)}),
        "spans": pl.List(pl.Struct({"start": pl.Int64, "label": pl.String})), "grid": pl.List(pl.List(pl.Float64))}
    assert df.to_dict(as_series=False) == cols


@pytest.mark.parametrize("compression", ["zstd", "gzip", "none"])
def test_pyarrow_reads_ours(tmp_path, pq, compression):
    cols = sample(80)
    path = tmp_path / "t.parquet"
    P.write(path, cols, SCHEMA, compression=compression, row_group_rows=30)
    table = pq.read_table(path)
    assert {f.name: str(f.type) for f in table.schema} == {
        "s": "string", "i": "int64", "f": "double", "b": "bool", "bin": "binary", "tags": "list<element: string>",
        "st": "struct<a: int64, names: list<element: string>>",
        "spans": "list<element: struct<start: int64, label: string>>",
        "grid": "list<element: list<element: double>>"}
    assert all(f.nullable for f in table.schema)
    assert table.to_pylist() == rows_of(cols)
    meta = pq.ParquetFile(path).metadata
    assert (meta.num_row_groups, meta.num_rows, meta.created_by) == (3, 80, "rollscope")
    assert meta.row_group(0).column(0).compression == {"none": "UNCOMPRESSED"}.get(compression, compression.upper())


# --- pyarrow, polars -> ours -----------------------------------------------------------------------------------------

def flat_table(pa, n: int = 400):
    return pa.table({
        "i": pa.array([i if i % 7 else None for i in range(n)], pa.int64()),
        "i32": pa.array([i * 3 - 700 for i in range(n)], pa.int32()),
        "f": pa.array([i / 3 if i % 5 else None for i in range(n)], pa.float64()),
        "f32": pa.array([i / 4 for i in range(n)], pa.float32()),
        "s": pa.array([f"str{i % 37}é" if i % 11 else None for i in range(n)], pa.string()),
        "b": pa.array([i % 3 == 0 if i % 4 else None for i in range(n)], pa.bool_()),
        "x": pa.array([i * 1000003 - 2**40 for i in range(n)], pa.int64()),
        "t": pa.array([f"prefix-{i // 10}-{i}" for i in range(n)], pa.string()),
        "fsb": pa.array([bytes([i % 256, 7, i % 13]) if i % 9 else None for i in range(n)], pa.binary(3)),
        "ls": pa.array([[f"a{j}" for j in range(i % 4)] if i % 6 else None for i in range(n)],
                       pa.list_(pa.string())),
    })


DELTA = {"x": "DELTA_BINARY_PACKED", "i32": "DELTA_BINARY_PACKED", "s": "DELTA_LENGTH_BYTE_ARRAY",
         "t": "DELTA_BYTE_ARRAY", "fsb": "DELTA_BYTE_ARRAY", "b": "RLE"}
PYARROW_OPTIONS = [
    {"compression": "none"}, {"compression": "snappy"}, {"compression": "gzip"}, {"compression": "zstd"},
    {"compression": "lz4"},
    {"use_dictionary": False}, {"use_dictionary": False, "compression": "snappy"},
    {"data_page_version": "1.0"}, {"data_page_version": "2.0"},
    {"data_page_version": "2.0", "use_dictionary": False, "compression": "gzip"},
    {"use_byte_stream_split": ["f", "f32", "i", "i32", "x", "fsb"], "use_dictionary": False},
    {"use_byte_stream_split": ["f", "f32", "i", "i32", "x", "fsb"], "use_dictionary": False,
     "data_page_version": "2.0", "compression": "zstd"},
    {"use_dictionary": False, "column_encoding": DELTA},
    {"use_dictionary": False, "column_encoding": DELTA, "data_page_version": "2.0", "compression": "snappy"},
    {"data_page_size": 64, "row_group_size": 37},
    {"data_page_size": 64, "row_group_size": 37, "data_page_version": "2.0", "use_dictionary": False},
    {"write_page_index": True, "write_page_checksum": True, "write_statistics": False},
]


@pytest.mark.parametrize("options", PYARROW_OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items())[:60])
def test_ours_reads_pyarrow(tmp_path, pa, pq, options):
    table = flat_table(pa)
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, **options)
    schema, got = P.read(path)
    assert got == table.to_pydict()
    assert schema == {"i": "int64", "i32": "int64", "f": "float64", "f32": "float64", "s": "string", "b": "bool",
                      "x": "int64", "t": "string", "fsb": "binary", "ls": ("list", "string")}
    assert [r for b in P.iter_rows(path, 50) for r in b] == table.to_pylist()


def nested_table(pa, n: int = 300):
    return pa.table({
        "ls": pa.array([[{"a": i, "b": f"s{i}"}, None, {"a": None, "b": None}] if i % 3 else ([] if i % 2 else None)
                        for i in range(n)], pa.list_(pa.struct([("a", pa.int64()), ("b", pa.string())]))),
        "sl": pa.array([{"x": [i, None] if i % 4 else [], "y": 1.5} if i % 5 else None for i in range(n)],
                       pa.struct([("x", pa.list_(pa.int32())), ("y", pa.float64())])),
        "m": pa.array([[("k1", i), ("k2", None)] if i % 3 else ([] if i % 2 else None) for i in range(n)],
                      pa.map_(pa.string(), pa.int64())),
        "ll": pa.array([[[i, None], [], None] if i % 3 else None for i in range(n)], pa.list_(pa.list_(pa.int64()))),
        "ns": pa.array([{"p": {"q": i}} if i % 3 else ({"p": None} if i % 2 else None) for i in range(n)],
                       pa.struct([("p", pa.struct([("q", pa.int16())]))])),
        "ts_ms": pa.array([dt.datetime(2020, 1, 1) + dt.timedelta(milliseconds=i * 12345) for i in range(n)],
                          pa.timestamp("ms")),
        "ts_us_tz": pa.array([dt.datetime(1960, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=i * 12345 ** 2)
                              for i in range(n)], pa.timestamp("us", tz="UTC")),
        "ts_ns": pa.array([dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=i * 7) for i in range(n)],
                          pa.timestamp("ns")),
        "d": pa.array([dt.date(1900, 1, 1) + dt.timedelta(days=i * 400) for i in range(n)], pa.date32()),
        "dec": pa.array([decimal.Decimal(f"{i}.{i % 100:02d}") if i % 9 else None for i in range(n)],
                        pa.decimal128(10, 2)),
        "dec38": pa.array([decimal.Decimal(f"-{i}123456789012345678.{i % 100:02d}") for i in range(n)],
                          pa.decimal128(38, 2)),
        "i8": pa.array([i % 128 - 64 for i in range(n)], pa.int8()),
        "u8": pa.array([255 - i % 256 for i in range(n)], pa.uint8()),
        "u32": pa.array([2**32 - 1 - i for i in range(n)], pa.uint32()),
        "u64": pa.array([2**64 - 1 - i for i in range(n)], pa.uint64()),
        "lstr": pa.array([f"large{i}" if i % 4 else None for i in range(n)], pa.large_string()),
        "lbin": pa.array([b"x" * (i % 5) for i in range(n)], pa.large_binary()),
        "fsb": pa.array([bytes([i % 256]) * 4 for i in range(n)], pa.binary(4)),
        "f16": pa.array(np.arange(n, dtype=np.float16) / 8, pa.float16()),
        "t64": pa.array([dt.time(1, 2, 3, i) for i in range(n)], pa.time64("us")),
        "t32": pa.array([dt.time(23, 59, i % 60) for i in range(n)], pa.time32("ms")),
        "uuid": pa.array([uuid.UUID(int=i * 99991).bytes for i in range(n)], pa.uuid()),
        "nul": pa.array([None] * n, pa.null()),
        "cat": pa.array([f"c{i % 3}" for i in range(n)]).dictionary_encode(),
    })


NESTED_TYPES = {
    "ls": ("list", ("struct", {"a": "int64", "b": "string"})),
    "sl": ("struct", {"x": ("list", "int64"), "y": "float64"}),
    "m": ("map", "string", "int64"), "ll": ("list", ("list", "int64")),
    "ns": ("struct", {"p": ("struct", {"q": "int64"})}),
    "ts_ms": "timestamp", "ts_us_tz": "timestamp", "ts_ns": "timestamp", "d": "date", "dec": "float64",
    "dec38": "float64", "i8": "int64", "u8": "int64", "u32": "int64", "u64": "int64", "lstr": "string",
    "lbin": "binary", "fsb": "binary", "f16": "float64", "t64": "time", "t32": "time", "uuid": "string",
    "nul": "string", "cat": "string",
}


def as_ours(name: str, value):
    """What our reader gives for a value pyarrow gives (its Decimal, UUID, map pairs, float16 are ours as float,
    str, dict, float)."""
    if value is None:
        return None
    if isinstance(value, decimal.Decimal):
        return float(value)
    if name == "uuid":
        return str(value)
    if name == "m":
        return dict(value)
    return value


@pytest.mark.parametrize("options", [{}, {"data_page_version": "2.0"}, {"use_dictionary": False},
                                     {"data_page_size": 64, "row_group_size": 50, "compression": "snappy"},
                                     {"use_compliant_nested_type": False}, {"store_schema": False}],
                         ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_ours_reads_pyarrow_nested_and_logical_types(tmp_path, pa, pq, options):
    table = nested_table(pa)
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, **options)
    schema, got = P.read(path)
    assert schema == NESTED_TYPES
    expected = {k: [as_ours(k, v) for v in table.column(k).to_pylist()] for k in table.column_names}
    assert got == expected
    assert got["ts_us_tz"][0] == dt.datetime(1960, 1, 1, tzinfo=UTC) and got["ts_ms"][0].tzinfo is None
    assert got["dec"][1] == 1.01 and got["f16"][1] == 0.125 and got["u64"][0] == 2**64 - 1


def paged_table(pa, n: int):
    """A table with nulls at each level, for one row group of many pages."""
    span = pa.struct([("start", pa.int64()), ("label", pa.string())])
    return pa.table({
        "id": pa.array([f"row-{i}-" + "x" * (i % 17) if i % 13 else None for i in range(n)], pa.string()),
        "cat": pa.array([f"c{i % 5}" if i % 7 else None for i in range(n)], pa.string()),
        "n": pa.array([i * 7919 if i % 4 else None for i in range(n)], pa.int64()),
        "f": pa.array([i / 8 for i in range(n)], pa.float64()),
        "tags": pa.array([None if i % 9 == 0 else [None if j == 2 else f"t{i}.{j}" for j in range(i % 6)]
                          for i in range(n)], pa.list_(pa.string())),
        "spans": pa.array([None if i % 11 == 0 else [None if j == 1 else {"start": i + j, "label": None if j == 3
                                                                         else f"l{j}"} for j in range(i % 5)]
                           for i in range(n)], pa.list_(span)),
    })


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_iter_rows_streams_one_row_group_of_many_pages(tmp_path, pa, pq, version):
    """A big table as pyarrow (and polars) write it, one row group cut into pages: iter_rows decodes it a batch at a
    time, and gives what read() gives in any batch size, never cutting a row."""
    n = 3000
    table = paged_table(pa, n)
    path = tmp_path / "one-group.parquet"
    pq.write_table(table, path, row_group_size=n, use_dictionary=["cat"], data_page_size=512, write_batch_size=50,
                   data_page_version=version)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1
    assert "RLE_DICTIONARY" in meta.row_group(0).column(1).encodings
    assert "RLE_DICTIONARY" not in meta.row_group(0).column(0).encodings
    assert all(data_pages(path, leaf) >= 4 for leaf in range(meta.num_columns))
    rows = rows_of(P.read(path)[1])
    assert rows == table.to_pylist()
    for batch_rows in (1, 7, 5000):
        batches = list(P.iter_rows(path, batch_rows))
        assert [len(b) for b in batches] == [min(batch_rows, n - start) for start in range(0, n, batch_rows)]
        assert [r for b in batches for r in b] == rows


def test_ours_reads_int96_timestamps(tmp_path, pa, pq):
    stamps = [dt.datetime(1850, 5, 6, 7, 8, 9, 123456), None, dt.datetime(2262, 1, 1), dt.datetime(1970, 1, 1)]
    path = tmp_path / "pa.parquet"
    pq.write_table(pa.table({"t": pa.array(stamps, pa.timestamp("us"))}), path, use_deprecated_int96_timestamps=True)
    assert P.read(path) == ({"t": "timestamp"}, {"t": stamps})


POLARS_COMPRESSIONS = ["uncompressed", "snappy", "gzip", "zstd", "lz4"]


@pytest.mark.parametrize("compression", POLARS_COMPRESSIONS)
def test_ours_reads_polars(tmp_path, pl, compression):
    n = 250
    df = pl.DataFrame({
        "s": [f"label {i % 13} ✓" if i % 5 else None for i in range(n)],
        "i": [i * 99991 - 10**9 if i % 6 else None for i in range(n)],
        "i8": pl.Series([i % 100 - 50 for i in range(n)], dtype=pl.Int8),
        "u32": pl.Series([2**32 - 1 - i for i in range(n)], dtype=pl.UInt32),
        "f": [i / 7 if i % 4 else None for i in range(n)],
        "f32": pl.Series([i / 8 for i in range(n)], dtype=pl.Float32),
        "b": [None if i % 3 == 0 else i % 2 == 0 for i in range(n)],
        "bin": [bytes([i % 256]) * (i % 3) for i in range(n)],
        "tags": [[f"t{j}" for j in range(i % 4)] if i % 7 else None for i in range(n)],
        "spans": [[{"start": j, "label": f"x{j}" if j else None} for j in range(i % 3)] if i % 5 else None
                  for i in range(n)],
        "st": [{"a": i, "names": ["n"] * (i % 3)} if i % 4 else None for i in range(n)],
        "nested": [[[i, None], []] if i % 3 else None for i in range(n)],
        "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)],
        "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i * 3.5) for i in range(n)],
        "cat": pl.Series([f"c{i % 3}" for i in range(n)], dtype=pl.Categorical),
    })
    path = tmp_path / "pl.parquet"
    df.write_parquet(path, compression=compression, row_group_size=100, data_page_size=512)
    schema, got = P.read(path)
    assert got == df.to_dict(as_series=False)
    assert schema["spans"] == ("list", ("struct", {"start": "int64", "label": "string"}))
    assert (schema["i8"], schema["u32"], schema["d"], schema["ts"], schema["cat"]) == (
        "int64", "int64", "date", "timestamp", "string")


def test_brotli_is_a_clear_error(tmp_path, pa, pq, pl):
    for path in (tmp_path / "pa.parquet", tmp_path / "pl.parquet"):
        if path.name == "pa.parquet":
            pq.write_table(pa.table({"x": [1, 2], "y": ["a", "b"]}), path, compression="brotli")
        else:
            pl.DataFrame({"x": [1, 2], "y": ["a", "b"]}).write_parquet(path, compression="brotli")
        with pytest.raises(TrajectoryFormatError) as err:
            P.read(path)
        assert str(err.value) == f"{path}: field 'x': the column is compressed with BROTLI, which is not supported"
        assert P.read_schema(path) == {"x": "int64", "y": "string"}


# --- hand-built files: the layouts and encodings today's writers leave out -------------------------------------------

OPTIONAL, REPEATED, REQUIRED = P._OPTIONAL, P._REPEATED, P._REQUIRED
INT32, INT64, BYTE_ARRAY = P._INT32, P._INT64, P._BYTE_ARRAY


def elem(name: str, rep: int | None, ptype: int | None = None, children: int | None = None,
         converted: int | None = None) -> list:
    return [(1, 5, ptype), (3, 5, rep), (4, 8, name), (5, 5, children), (6, 5, converted)]


def levels_rle(levels: list[int], max_level: int) -> bytes:
    data = P._hybrid(np.array(levels, dtype=np.int16), max_level.bit_length())
    return struct.pack("<I", len(data)) + data


def levels_bit_packed(levels: list[int], max_level: int) -> bytes:
    """The deprecated BIT_PACKED levels: most significant bit first, no length prefix."""
    bits = "".join(format(v, f"0{max_level.bit_length()}b") for v in levels)
    bits += "0" * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


def plain_i32(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


def plain_str(values: list[str]) -> bytes:
    return b"".join(struct.pack("<I", len(b)) + b for b in (v.encode() for v in values))


def page_v1(body: bytes, n: int, enc: int = 0, level_enc: int = 3, compressed: bytes | None = None) -> bytes:
    data = body if compressed is None else compressed
    return P._w_struct([(1, 5, 0), (2, 5, len(body)), (3, 5, len(data)),
                        (5, 12, [(1, 5, n), (2, 5, enc), (3, 5, level_enc), (4, 5, level_enc)])]) + data


def dict_page(body: bytes, n: int) -> bytes:
    return P._w_struct([(1, 5, 2), (2, 5, len(body)), (3, 5, len(body)), (7, 12, [(1, 5, n), (2, 5, 0)])]) + body


def chunk(path: list[str], ptype: int, pages: bytes, num_values: int, codec: int = 0, dict_end: int | None = None):
    """A column chunk: ``dict_end`` set, its pages start with a dictionary page ending there, and the metadata
    gives dictionary_page_offset."""
    return path, ptype, pages, num_values, codec, dict_end


def hand_file(path: Path, elements: list[list], chunks: list, num_rows: int, footer_extra: bytes = b"") -> Path:
    out = bytearray(P.MAGIC)
    metas = []
    for col_path, ptype, pages, num_values, codec, dict_end in chunks:
        start = len(out)
        out += pages
        metas.append([(2, 6, start), (3, 12, [
            (1, 5, ptype), (2, 9, (5, [0, 3, 8])), (3, 9, (8, col_path)), (4, 5, codec), (5, 6, num_values),
            (6, 6, len(pages)), (7, 6, len(pages)), (9, 6, start + (dict_end or 0)),
            (11, 6, start if dict_end else None)])])
    footer = P._w_struct([(1, 5, 1), (2, 9, (12, elements)), (3, 6, num_rows),
                          (4, 9, (12, [[(1, 9, (12, metas)), (2, 6, len(out)), (3, 6, num_rows)]])),
                          (6, 8, "hand-built")])
    footer = footer[:-1] + footer_extra + b"\x00"  # fields unknown to the reader go before the final stop
    out += footer + struct.pack("<I", len(footer)) + P.MAGIC
    path.write_bytes(out)
    return path


def column(col_path: list[str], ptype: int, reps: list[int] | None, defs: list[int], max_rep: int, max_def: int,
           values: bytes, level_enc: int = 3):
    encode = levels_rle if level_enc == 3 else levels_bit_packed
    body = (encode(reps, max_rep) if reps is not None else b"") + encode(defs, max_def) + values
    return chunk(col_path, ptype, page_v1(body, len(defs), level_enc=level_enc), len(defs))


@pytest.mark.parametrize("level_enc", [3, 4], ids=["RLE", "BIT_PACKED"])
def test_legacy_two_level_lists(tmp_path, pq, level_enc):
    elements = [
        [(4, 8, "schema"), (5, 5, 5)],
        elem("xs", REPEATED, INT32),  # repeated int32 xs: a list with no LIST group
        elem("l", OPTIONAL, children=1, converted=3), elem("element", REPEATED, INT32),
        elem("la", OPTIONAL, children=1, converted=3), elem("array", REPEATED, children=1),
        elem("s", OPTIONAL, BYTE_ARRAY, converted=0),
        elem("lt", OPTIONAL, children=1, converted=3), elem("lt_tuple", REPEATED, children=1),
        elem("v", REQUIRED, INT32),
        elem("o", OPTIONAL, INT32),
    ]
    path = hand_file(tmp_path / "legacy.parquet", elements, [
        column(["xs"], INT32, [0, 1, 0, 0], [1, 1, 0, 1], 1, 1, plain_i32([1, 2, 3]), level_enc),
        column(["l", "element"], INT32, [0, 1, 0, 0], [2, 2, 1, 0], 1, 2, plain_i32([4, 5]), level_enc),
        column(["la", "array", "s"], BYTE_ARRAY, [0, 1, 0, 0], [3, 2, 0, 1], 1, 3, plain_str(["a"]), level_enc),
        column(["lt", "lt_tuple", "v"], INT32, [0, 0, 0], [2, 1, 0], 1, 2, plain_i32([7]), level_enc),
        column(["o"], INT32, None, [1, 0, 1], 0, 1, plain_i32([8, 9]), level_enc),
    ], num_rows=3)
    expected = {"xs": [[1, 2], [], [3]], "l": [[4, 5], [], None], "la": [[{"s": "a"}, {"s": None}], None, []],
                "lt": [[{"v": 7}], [], None], "o": [8, None, 9]}
    schema, got = P.read(path)
    assert got == expected
    assert schema == {"xs": ("list", "int64"), "l": ("list", "int64"), "la": ("list", ("struct", {"s": "string"})),
                      "lt": ("list", ("struct", {"v": "int64"})), "o": "int64"}
    if level_enc == 3:  # Arrow reads BIT_PACKED levels least significant bit first (apache/arrow#42368)
        assert pq.read_table(path).to_pydict() == expected


@pytest.mark.parametrize("with_offset", [True, False], ids=["dictionary_page_offset", "no-dictionary_page_offset"])
def test_dictionary_page_with_and_without_its_offset(tmp_path, pq, with_offset):
    dictionary = dict_page(plain_str(["red", "green"]), 2)
    indices = P._hybrid(np.array([1, 0, 1]), 1)
    data = page_v1(levels_rle([1, 0, 1, 1], 1) + bytes([1]) + indices, 4, enc=8)
    path = hand_file(tmp_path / "dict.parquet", [[(4, 8, "schema"), (5, 5, 1)], elem("s", OPTIONAL, BYTE_ARRAY,
                                                                                   converted=0)],
                     [chunk(["s"], BYTE_ARRAY, dictionary + data, 4, dict_end=len(dictionary) if with_offset
                            else None)], num_rows=4)
    assert P.read(path)[1] == {"s": ["green", None, "red", "green"]} == pq.read_table(path).to_pydict()


def test_v2_pages_compressed_or_not_and_pages_to_skip(tmp_path, pq):
    import zstandard

    def v2(defs: list[int], values: bytes, compressed: bool) -> bytes:
        levels = P._hybrid(np.array(defs), 1)
        data = zstandard.ZstdCompressor().compress(values) if compressed else values
        return P._w_struct([(1, 5, 3), (2, 5, len(levels) + len(values)), (3, 5, len(levels) + len(data)), (8, 12, [
            (1, 5, len(defs)), (2, 5, defs.count(0)), (3, 5, len(defs)), (4, 5, 0), (5, 5, len(levels)), (6, 5, 0),
            (7, 1, compressed)])]) + levels + data

    pages = v2([1, 0, 1], struct.pack("<2q", 5, 6), False) + v2([0, 1], struct.pack("<q", 7), True)
    skipped = P._w_struct([(1, 5, 1), (2, 5, 3), (3, 5, 3)]) + b"idx"  # an INDEX_PAGE, and a type from the future
    skipped += P._w_struct([(1, 5, 9), (2, 5, 2), (3, 5, 2), (15, 12, [(1, 5, 1)])]) + b"??"
    elements = [[(4, 8, "schema"), (5, 5, 1)], elem("i", OPTIONAL, INT64)]
    path = hand_file(tmp_path / "v2.parquet", elements, [chunk(["i"], INT64, pages, 5, codec=6)], num_rows=5)
    assert P.read(path)[1] == {"i": [5, None, 6, None, 7]} == pq.read_table(path).to_pydict()
    pages = v2([1, 0, 1], struct.pack("<2q", 5, 6), False) + skipped + v2([0, 1], struct.pack("<q", 7), True)
    path = hand_file(tmp_path / "skip.parquet", elements, [chunk(["i"], INT64, pages, 5, codec=6)], num_rows=5)
    assert P.read(path)[1] == {"i": [5, None, 6, None, 7]}


def test_iter_rows_with_rows_across_pages(tmp_path, pq):
    """Data pages v1 may cut a row (pyarrow's do not): a batch takes a row whole, whichever pages it spans. A
    required column has no levels at all: its rows are its values."""
    elements = [[(4, 8, "schema"), (5, 5, 2)], elem("l", OPTIONAL, children=1, converted=3),
                elem("list", REPEATED, children=1), elem("element", OPTIONAL, INT32), elem("r", REQUIRED, INT32)]

    def page(reps: list[int], defs: list[int], values: list[int]) -> bytes:
        return page_v1(levels_rle(reps, 1) + levels_rle(defs, 3) + plain_i32(values), len(defs))

    # rows [1, 2 | 3], [], None, [4, None | 5, 6], [7], with | the page breaks
    pages = (page([0, 1], [3, 3], [1, 2]) + page([1, 0, 0, 0, 1], [3, 1, 0, 3, 2], [3, 4])
             + page([1, 1, 0], [3, 3, 3], [5, 6, 7]))
    required = page_v1(plain_i32([10, 11]), 2) + page_v1(plain_i32([12, 13, 14]), 3)
    path = hand_file(tmp_path / "cut.parquet", elements, [chunk(["l", "list", "element"], INT32, pages, 10),
                                                          chunk(["r"], INT32, required, 5)], num_rows=5)
    cols = {"l": [[1, 2, 3], [], None, [4, None, 5, 6], [7]], "r": [10, 11, 12, 13, 14]}
    assert P.read(path)[1] == cols == pq.read_table(path).to_pydict()
    for batch_rows in (1, 2, 3, 4, 5, 6):
        batches = list(P.iter_rows(path, batch_rows))
        assert [len(b) for b in batches] == [min(batch_rows, 5 - start) for start in range(0, 5, batch_rows)]
        assert [r for b in batches for r in b] == rows_of(cols)


@pytest.mark.parametrize("num_rows", [2, 3, 5, 0, -1])
def test_iter_rows_and_read_agree_on_a_wrong_row_count(tmp_path, num_rows):
    """A column chunk holding more or fewer rows than its row group: the same error from both, iter_rows's after
    the whole batches it could fill (it decodes a batch at a time, so it finds out no sooner)."""
    elements = [[(4, 8, "schema"), (5, 5, 2)], elem("o", OPTIONAL, INT32),
                elem("l", OPTIONAL, children=1, converted=3), elem("list", REPEATED, children=1),
                elem("element", OPTIONAL, INT32)]
    path = hand_file(tmp_path / "count.parquet", elements, [
        column(["o"], INT32, None, [1, 0, 1, 1], 0, 1, plain_i32([8, 9, 10])),
        column(["l", "list", "element"], INT32, [0, 1, 0, 0, 0], [3, 3, 1, 0, 3], 1, 3, plain_i32([1, 2, 3]))],
        num_rows=num_rows)
    rows = [{"o": 8, "l": [1, 2]}, {"o": None, "l": []}, {"o": 9, "l": None}, {"o": 10, "l": [3]}]
    message = f"{path}: field 'o': holds 4 values in a row group of {num_rows} rows"
    with pytest.raises(TrajectoryFormatError) as err:
        P.read(path)
    assert str(err.value) == message
    for batch_rows in (1, 2, 3, 10):
        got = []
        with pytest.raises(TrajectoryFormatError) as err:
            for batch in P.iter_rows(path, batch_rows):
                got += batch
        assert str(err.value) == message
        assert got == rows[:max(num_rows, 0) if num_rows <= 4 else 4 // batch_rows * batch_rows]


@pytest.mark.parametrize("framing", ["hadoop", "raw"])
def test_deprecated_lz4_codec(tmp_path, pa, pq, framing):
    values = ["abcabcabcabc", "abcabcabcabc", "xyz" * 40, "abcabcabcabc"] * 20
    body = levels_rle([1] * len(values), 1) + plain_str(values)
    block = pa.compress(body, codec="lz4_raw", asbytes=True)
    data = struct.pack(">II", len(body), len(block)) + block if framing == "hadoop" else block
    path = hand_file(tmp_path / "lz4.parquet", [[(4, 8, "schema"), (5, 5, 1)], elem("s", OPTIONAL, BYTE_ARRAY,
                                                                                  converted=0)],
                     [chunk(["s"], BYTE_ARRAY, page_v1(body, len(values), compressed=data), len(values), codec=5)],
                     num_rows=len(values))
    assert P.read(path)[1] == {"s": values}
    if framing == "hadoop":
        assert pq.read_table(path).to_pydict() == {"s": values}


def test_codecs_against_pyarrow_blocks(pa):
    rnd = random.Random(3)
    data = b"".join(rnd.choice([b"abc", b"abcd" * 20, bytes([rnd.randrange(256)]), b"\x00" * 300])
                    for _ in range(3000))
    assert P._snappy(pa.compress(data, codec="snappy", asbytes=True), len(data)) == data
    assert P._lz4_block(pa.compress(data, codec="lz4_raw", asbytes=True), len(data)) == data
    assert P._decompress(2, pa.compress(data, codec="gzip", asbytes=True), len(data)) == data
    with pytest.raises(P._Bad, match="SNAPPY data holds"):
        P._decompress(1, pa.compress(data, codec="snappy", asbytes=True), len(data) - 1)


def unknown_fields() -> bytes:
    """Thrift fields of every type, nested, under ids the reader does not know (field headers in the long form)."""
    out = bytearray()

    def field(fid: int, ctype: int) -> None:
        out.append(ctype)
        out.extend(P._uvarint(fid << 1))

    inner = P._w_struct([(1, 5, -7), (2, 6, 2**40), (3, 8, "x"), (4, 1, True), (5, 9, (12, [[(1, 4, 3)], []])),
                         (6, 12, [(1, 12, [(1, 9, (8, ["deep"]))])])])
    field(40, 12)
    out += inner
    field(41, 11)  # map<string, struct>, two entries
    out += P._uvarint(2) + bytes([8 << 4 | 12])
    for key in (b"k1", b"k2"):
        out += P._uvarint(len(key)) + key + inner
    field(42, 10)  # set<bool>
    out += bytes([3 << 4 | 1, 1, 2, 1])
    field(43, 7)
    out += struct.pack("<d", 1.5)
    field(44, 3)
    out += b"\xff"
    field(45, 11)  # an empty map
    out += b"\x00"
    field(46, 9)  # a list of 20 i64 (the long list header)
    out += bytes([0xF0 | 6]) + P._uvarint(20) + b"\x02" * 20
    return bytes(out)


def test_unknown_metadata_fields_are_skipped(tmp_path, pq):
    path = hand_file(tmp_path / "extra.parquet", [[(4, 8, "schema"), (5, 5, 1)], elem("o", OPTIONAL, INT32)],
                     [column(["o"], INT32, None, [1, 0, 1], 0, 1, plain_i32([8, 9]))], num_rows=3,
                     footer_extra=unknown_fields())
    assert P.read(path)[1] == {"o": [8, None, 9]} == pq.read_table(path).to_pydict()


def test_an_unsupported_encoding_names_the_column(tmp_path):
    elements = [[(4, 8, "schema"), (5, 5, 1)], elem("labels", OPTIONAL, children=1, converted=3),
                elem("list", REPEATED, children=1), elem("element", OPTIONAL, BYTE_ARRAY, converted=0)]
    body = levels_rle([0], 1) + levels_rle([3], 3) + plain_str(["x"])
    path = hand_file(tmp_path / "x.parquet", elements,
                     [chunk(["labels", "list", "element"], BYTE_ARRAY, page_v1(body, 1, enc=9), 1)], num_rows=1)
    with pytest.raises(TrajectoryFormatError) as err:
        P.read(path)
    assert str(err.value) == (f"{path}: field 'labels.list.element': page uses encoding BYTE_STREAM_SPLIT on "
                              "BYTE_ARRAY, which is not supported")
    assert err.value.field == "labels.list.element"


# --- damaged and hostile files ---------------------------------------------------------------------------------------

def outcome(path: Path, every_function: bool = True) -> str:
    """'ok', or the text of the TrajectoryFormatError every public function raises; anything else fails the test."""
    try:
        P.read(path)
        if every_function:
            P.read_schema(path)
            for _ in P.iter_rows(path, 7):
                pass
        return "ok"
    except TrajectoryFormatError as exc:
        text = str(exc)
        assert text.startswith(f"{path}: ") and "\n" not in text
        return text


@pytest.fixture(scope="module")
def good_files(tmp_path_factory) -> dict[str, bytes]:
    """Small real files: ours (uncompressed and zstd) and, where pyarrow is installed, pyarrow's (dictionary,
    snappy, v2 pages; and delta encodings)."""
    folder = tmp_path_factory.mktemp("good")
    out = {}
    for comp in ("none", "zstd"):
        P.write(folder / comp, sample(40), SCHEMA, compression=comp, row_group_rows=15)
        out[f"ours-{comp}"] = (folder / comp).read_bytes()
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover
        return out
    pq.write_table(flat_table(pa, 60), folder / "pa", compression="snappy", data_page_version="2.0",
                   data_page_size=100)
    out["pyarrow-snappy"] = (folder / "pa").read_bytes()
    pq.write_table(flat_table(pa, 60), folder / "pd", compression="lz4", use_dictionary=False,
                   column_encoding=DELTA)
    out["pyarrow-delta"] = (folder / "pd").read_bytes()
    return out


@pytest.mark.parametrize("data", [b"", b"PAR1", b"PAR1PAR1", b"PAR1\x00\x00\x00\x00PAR1", b"PAR1\x01\x00\x00\x00PAR1",
                                  b"\x89PNG\r\n\x1a\n" + bytes(100), b"PAR1" + bytes(range(256)) + b"PARE",
                                  random.Random(1).randbytes(1000),
                                  b"PAR1" + random.Random(2).randbytes(1000) + b"PAR1"],
                         ids=["empty", "magic", "two-magics", "empty-footer", "one-byte-footer", "png", "encrypted",
                              "random", "random-in-magics"])
def test_not_parquet(tmp_path, data):
    path = tmp_path / "bad.parquet"
    path.write_bytes(data)
    assert outcome(path) != "ok"
    with pytest.raises(TrajectoryFormatError):
        P.iter_rows(path)  # the footer is read at once, not at the first batch


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        P.read(tmp_path / "missing.parquet")


@pytest.mark.timeout(120)
def test_truncated_files(tmp_path, good_files):
    path = tmp_path / "cut.parquet"
    for name, data in good_files.items():
        cuts = sorted(set(range(0, len(data), 11)) | set(range(max(0, len(data) - 300), len(data))))
        for cut in cuts:
            path.write_bytes(data[:cut])
            assert outcome(path) != "ok", (name, cut)


def test_footer_length_outside_the_file(tmp_path, good_files):
    data = good_files["ours-none"]
    path = tmp_path / "long.parquet"
    for length in (len(data) - 11, len(data), 2**31, 2**32 - 1):
        path.write_bytes(data[:-8] + struct.pack("<I", length) + b"PAR1")
        assert "reaches beyond the start of the file" in outcome(path)


@pytest.mark.timeout(120)
def test_every_footer_byte_flipped(tmp_path, good_files):
    path = tmp_path / "flip.parquet"
    for name in ("ours-zstd", "pyarrow-snappy"):
        data = good_files.get(name)
        if data is None:  # pragma: no cover (no pyarrow)
            continue
        footer_len = struct.unpack("<I", data[-8:-4])[0]
        errors = 0
        for at in range(len(data) - 8 - footer_len, len(data) - 8):
            damaged = bytearray(data)
            damaged[at] ^= (0xFF, 0x01, 0x80, 0x10)[at % 4]  # the whole byte, a varint's low bit, its high bit
            path.write_bytes(damaged)
            errors += outcome(path, every_function=False) != "ok"
        assert errors > footer_len // 4, name


@pytest.mark.timeout(120)
@given(st.data())
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_damaged_bytes_anywhere(tmp_path, good_files, data):
    name = data.draw(st.sampled_from(sorted(good_files)))
    damaged = bytearray(good_files[name])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] = data.draw(st.integers(0, 255))
    path = tmp_path / "fuzz.parquet"
    path.write_bytes(damaged)
    outcome(path)


def test_declared_sizes_are_bounded(tmp_path):
    """Headers asking for gigabytes are errors before any allocation."""
    elements = [[(4, 8, "schema"), (5, 5, 1)], elem("i", OPTIONAL, INT64)]
    body = levels_rle([1], 1) + struct.pack("<q", 5)
    header = P._w_struct([(1, 5, 0), (2, 5, 2**30), (3, 5, len(body)), (5, 12, [(1, 5, 1), (2, 5, 0)])])
    path = hand_file(tmp_path / "big.parquet", elements, [chunk(["i"], INT64, header + body, 1, codec=6)], 1)
    assert "claims 1,073,741,824 bytes uncompressed" in outcome(path)
    path = hand_file(tmp_path / "many.parquet", elements, [chunk(["i"], INT64, page_v1(body, 1), 2**40)], 1)
    assert "claims 1,099,511,627,776 values" in outcome(path)
    # a DELTA_BINARY_PACKED header claiming 2**40 values in a page of one
    delta = P._uvarint(128) + P._uvarint(4) + P._uvarint(2**40) + P._uvarint(0)
    path = hand_file(tmp_path / "delta.parquet", elements,
                     [chunk(["i"], INT64, page_v1(levels_rle([1], 1) + delta, 1, enc=5), 1)], 1)
    assert "DELTA_BINARY_PACKED data claims" in outcome(path)


def test_the_module_imports_no_polars_pyarrow_or_zstandard(tmp_path):
    code = ("import sys\nfrom gui_app.core import parquet\n"
            f"parquet.write({str(tmp_path / 'x.parquet')!r}, {{'a': [1]}}, {{'a': 'int64'}}, compression='none')\n"
            f"parquet.read({str(tmp_path / 'x.parquet')!r})\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'polars', 'pyarrow', 'pandas', 'zstandard'}))")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]"
