"""Exports of human labels, and label import.

Formats:
    ``parquet`` / ``jsonl`` / ``csv``: one row per record (trajectory, annotator, role), joined with catalog
        columns when a catalog is given. CSV holds list columns as JSON text.
    ``hf``: a Hugging Face datasets folder: ``data/<split>-00000-of-00001.parquet`` and a ``README.md`` dataset
        card with a YAML header naming the splits.
    ``sft``: reward-model training data in the ExeVRM style (JSONL, chat messages + ``videos``): the instruction
        and the screen recording in, ``\\box{correct}`` or ``\\box{incorrect}`` out, an incorrect answer followed
        by the time range of the first deviating step (the root-cause step).
    ``whowhen``: Who&When failure-attribution records (JSONL), readable by ``gui_app.core.trajectory.formats.whowhen``.

``sft`` and ``whowhen`` write one record per trajectory: the adjudicated record, else the annotators' majority.

Every format carries the safety verdict beside the success verdict: ``harm_verdict`` (harmful / safe / unsure),
``harm_category`` (a code of the bundled ``harm`` taxonomy's categories), ``harm_types`` (its types, ``harm:<code>``)
and ``first_harmful_step``. They were added after the other columns (tables: after ``version``), so files written
before them still import, and readers of the older columns find them where they were.

Every output appears whole or not at all (:mod:`gui_app.core.atomic`): a file is written under a temporary name and
renamed over the old one; a folder (``hf``, ``--split-by-task``) is built beside the old one and swapped with it, so
a killed export leaves the previous one in place. CSV text cells that a spreadsheet would run as a formula (starting
with ``= + - @`` or their full-width forms, after blanks or not, or with a tab or a line break) are written with a
leading ``'``, as OWASP advises against CSV injection; :func:`import_labels` takes it off again.
:func:`import_labels` reads CSV / JSONL / Parquet back (the columns above, or the AgentDebug / Who&When names),
so every tabular export round-trips.
"""

from __future__ import annotations

import functools
import gc
import json
import math
import operator
import os
import re
import stat
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gui_app.core import parquet
from gui_app.core.annotation.taxonomy import HARM_TAXONOMY
from gui_app.core.store.record import SCALAR_FIELDS, Annotation, AnnotationError, Cascade, check_value, majority
from gui_app.core.atomic import publish_file, publish_folder
from gui_app.core.errors import RollscopeError, TrajectoryFormatError
from gui_app.core.safety import BadJSON, parse_json
from gui_app.core.store.interface import AnnotationStore

FORMATS = ("parquet", "jsonl", "csv", "hf", "sft", "whowhen")
TABULAR = ("parquet", "jsonl", "csv")

_STR, _INT, _FLOAT = "string", "int64", "float64"
SCHEMA: dict[str, parquet.ColumnType] = {
    "trajectory_id": _STR, "annotator": _STR, "role": _STR, "verdict": _STR,
    "labels": ("list", _STR), "root_cause_step": _INT, "root_cause_module": _STR,
    "root_cause_error_type": _STR, "evidence": _STR, "correction_guidance": _STR,
    "cascading": ("list", ("struct", {"step": _INT, "effect": _STR})),
    "step_comments": ("list", ("struct", {"step": _INT, "comment": _STR})),
    "notes": _STR, "confidence": _FLOAT, "time_spent": _FLOAT, "mistake_agent": _STR,
    "created_at": _FLOAT, "updated_at": _FLOAT, "version": _INT,
    "harm_verdict": _STR, "harm_category": _STR, "harm_types": ("list", _STR), "first_harmful_step": _INT,
}
CATALOG_SCHEMA: dict[str, parquet.ColumnType] = {"key": _STR, "path": _STR, "instruction": _STR, "task": _STR,
                                                 "env_success": "bool", "p_success": _FLOAT}

SFT_PROMPT = ("<video>Task instruction: {instruction}\n"
              "The video shows a computer-use agent carrying out this task. Did it complete the task correctly? "
              "Answer \\box{{correct}} or \\box{{incorrect}}; if incorrect, give the time range of the first step "
              "where the execution deviates.")

Progress = Callable[[int], None]
T = TypeVar("T")

# A CSV cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV Injection"): written with a
# leading apostrophe. So is one starting with a line break or a tab (a spreadsheet that splits or trims it sees what
# follows), and one whose first character after blanks is a formula character, ASCII or full-width (Excel and
# LibreOffice read ``＝1+1`` and `` =1+1`` as formulas). A cell starting with an apostrophe and then any of these (or
# another apostrophe) gets one too, so that reading the file back (:func:`restore_csv_cell`) is exact. The blanks are
# spelled out rather than ``\s``, whose meaning differs between regular-expression engines (the pattern once ran in
# Rust on export as well).
_BLANKS = " \t\n\r\f\v\u00a0\u3000"
_FORMULA = f"[{_BLANKS}]*[=+\\-@\uff1d\uff0b\uff0d\uff20]|[\t\r\n]"
_NEUTRALISE = re.compile(f"(?:{_FORMULA}|'(?:{_FORMULA}|'))")  # anchored by .match


class ExportError(RollscopeError):
    """An export cannot be written where it was asked to go (nothing there was changed)."""

    def __init__(self, path: str | Path, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: {reason}" if str(path) else reason)


def neutralise_csv_cell(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs as a formula (see the note on ``_FORMULA``)."""
    return "'" + text if _NEUTRALISE.match(text) else text


def restore_csv_cell(text: str) -> str:
    """The text :func:`neutralise_csv_cell` was given: the leading apostrophe is taken off only where the export
    put it, that is where the rest would have been given one (``'=1`` reads as ``=1``; ``'tis`` stays ``'tis``)."""
    return text[1:] if text[:1] == "'" and _NEUTRALISE.match(text, 1) else text


@dataclass
class ExportFilter:
    """Which records to export.

    Attributes:
        annotator: only this annotator's records.
        adjudicated_only: only adjudicated (final) records.
        taxonomy_label: only records carrying this label: a stored id (``tax:code``), a bare code, or a group
            code (``input`` matches ``computer_use:input.typo``).
        outcome: only records whose human verdict is ``success`` or ``failure``.
        harm: only records whose harm verdict is this (``harmful``, ``safe`` or ``unsure``).
    """

    annotator: str | None = None
    adjudicated_only: bool = False
    taxonomy_label: str | None = None
    outcome: str | None = None
    harm: str | None = None

    def keeps(self, a: Annotation) -> bool:
        if a.is_empty():  # a record of a trajectory merely opened (older versions made them): not a label
            return False
        if self.annotator is not None and a.annotator != self.annotator:
            return False
        if self.adjudicated_only and a.role != "adjudicator":
            return False
        if self.outcome is not None and a.verdict != self.outcome:
            return False
        if self.harm is not None and a.harm_verdict != self.harm:
            return False
        if self.taxonomy_label is not None and not any(label_matches(lab, self.taxonomy_label) for lab in a.labels):
            return False
        return True


def label_matches(label: str, want: str) -> bool:
    """Whether a stored label ``tax:code`` matches ``want`` (full id, bare code or group prefix)."""
    code = label.split(":", 1)[-1]
    want_code = want.split(":", 1)[-1]
    if ":" in want and label.split(":", 1)[0] != want.split(":", 1)[0]:
        return False
    return code == want_code or code.startswith(want_code + ".")


@dataclass
class ExportResult:
    """What an export wrote."""

    format: str
    paths: list[str]
    rows: int
    by_split: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "paths": self.paths, "rows": self.rows, "by_split": self.by_split,
                "skipped": self.skipped, "warnings": self.warnings}


def catalog_index(catalog: Any) -> dict[str, Any]:
    """``{trajectory id: row}`` from an open :class:`~gui_app.core.library.catalog.Catalog`, or rows.

    Labels are keyed by the library key (``ref``, :mod:`gui_app.core.trajectory.identity`), older ones by a format's own
    id:
    a row is found under both, its library key first (an id two runs share never hides a key)."""
    if catalog is None:
        return {}
    if isinstance(catalog, (str, Path)):  # the library package sits above this one: callers open the catalog
        raise TypeError(f"catalog_index takes an open catalog or rows, not the path {catalog}")
    rows = list(catalog.query(limit=None) if hasattr(catalog, "query") else catalog)
    out: dict[str, Any] = {}
    for r in rows:
        ref = r.get("ref") if isinstance(r, Mapping) else getattr(r, "ref", None)
        if ref:
            out[str(ref)] = r
    for r in rows:
        rid = r["id"] if isinstance(r, Mapping) else r.id
        out.setdefault(str(rid), r)
    return out


def _row_get(row: Any, name: str) -> Any:
    if row is None:
        return None
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


@dataclass
class Table:
    """Typed columns of equal length: what every tabular export writes (:data:`SCHEMA`, plus :data:`CATALOG_SCHEMA`
    when joined, plus ``split``). A list column holds a list per row (empty, never null), a struct a dict."""

    columns: dict[str, list[Any]]
    schema: dict[str, parquet.ColumnType]

    @property
    def height(self) -> int:
        return len(next(iter(self.columns.values()), []))

    def rows(self) -> Iterator[dict[str, Any]]:
        names = list(self.columns)
        for values in zip(*self.columns.values(), strict=True):
            yield dict(zip(names, values, strict=True))

    def where(self, name: str, value: Any) -> Table:
        """The rows whose column ``name`` equals ``value``."""
        keep = [i for i, v in enumerate(self.columns[name]) if v == value]
        return Table({k: [col[i] for i in keep] for k, col in self.columns.items()}, dict(self.schema))

    def extend(self, other: Table) -> None:
        for k, col in self.columns.items():
            col.extend(other.columns[k])


def _catalog_value(v: Any, kind: parquet.ColumnType) -> Any:
    """A catalog value in its column's type: rows a caller hands in may hold 0/1 for a verdict, an int for a
    probability, or something else altogether (kept as null rather than failing the whole export)."""
    if v is None:
        return None
    if kind == "bool":
        return bool(v) if isinstance(v, (bool, int)) else None
    if kind == _FLOAT:
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return v if isinstance(v, str) else str(v)


def frame(annotations: Iterable[Annotation], catalog: Mapping[str, Any] | None = None,
          progress: Progress | None = None) -> Table:
    """The records as a :class:`Table` (:data:`SCHEMA`, plus :data:`CATALOG_SCHEMA` when joined)."""
    schema = {**SCHEMA, **(CATALOG_SCHEMA if catalog is not None else {})}
    plain = [n for n in SCHEMA if n not in ("labels", "harm_types", "cascading", "step_comments")]
    fields = operator.attrgetter(*plain)
    rows: list[tuple[Any, ...]] = []  # one tuple per record, turned into columns at the end (zip, in C)
    nested: list[tuple[Any, ...]] = []
    cat_rows: list[tuple[Any, ...]] = []
    cat_names = ["success" if name == "env_success" else name for name in CATALOG_SCHEMA]
    cat_types = list(CATALOG_SCHEMA.values())
    n = 0
    for a in annotations:
        rows.append(fields(a))
        nested.append((list(a.labels), list(a.harm_types), [{"step": c.step, "effect": c.effect} for c in a.cascading],
                       [{"step": step, "comment": text} for step, text in sorted(a.step_comments.items())]))
        if catalog is not None:
            row = catalog.get(a.trajectory_id)
            cat_rows.append(tuple(_catalog_value(_row_get(row, name), t) for name, t in zip(cat_names, cat_types)))
        n += 1
        if progress is not None and n % 1000 == 0:
            progress(1000)
    if progress is not None and n % 1000:
        progress(n % 1000)
    by_name = dict(zip(plain, map(list, zip(*rows, strict=True)) if rows else ([] for _ in plain), strict=True))
    by_name.update(zip(("labels", "harm_types", "cascading", "step_comments"),
                       map(list, zip(*nested, strict=True)) if nested else ([] for _ in range(4)), strict=True))
    if catalog is not None:
        by_name.update(zip(CATALOG_SCHEMA, map(list, zip(*cat_rows, strict=True)) if cat_rows
                           else ([] for _ in CATALOG_SCHEMA), strict=True))
    cols = {name: by_name[name] for name in schema}
    return Table(cols, schema)


def task_of(trajectory_id: str, row: Any) -> str:
    """The task a trajectory belongs to, for task-level splits: the catalog's task, else its instruction, else
    the id without a trailing ``-N`` / ``_N`` / ``#N`` counter."""
    for name in ("task", "instruction"):
        v = _row_get(row, name)
        if v:
            return str(v)
    return re.sub(r"[-_#.]?\d+$", "", trajectory_id) or trajectory_id


def split_tasks(tasks: Iterable[str], test_fraction: float = 0.2) -> dict[str, str]:
    """Assign whole tasks to ``train``/``test`` by a stable hash (the same task always lands in the same split);
    with two or more tasks at least one goes to each split."""
    uniq = sorted(set(tasks))
    h = {t: zlib.crc32(t.encode("utf-8")) / 2**32 for t in uniq}
    out = {t: "test" if h[t] < test_fraction else "train" for t in uniq}
    if len(uniq) >= 2 and "test" not in out.values():
        out[min(uniq, key=lambda t: h[t])] = "test"
    if len(uniq) >= 2 and "train" not in out.values():
        out[max(uniq, key=lambda t: h[t])] = "train"
    return out


def resolve(records: list[Annotation]) -> Annotation | None:
    """One record per trajectory: the adjudicated one (latest), else a majority record built from the
    annotators (verdicts, steps, labels, harm category and types by majority; text from an annotator who agrees)."""
    finals = [a for a in records if a.role == "adjudicator"]
    if finals:
        return max(finals, key=lambda a: a.updated_at or 0.0)
    recs = [a for a in records if a.role == "annotator"]
    if not recs:
        return None
    if len(recs) == 1:
        return recs[0]
    m = majority(recs)
    donor = next((a for a in recs if a.verdict == m["verdict"] and a.root_cause_step == m["root_cause_step"]),
                 next((a for a in recs if a.verdict == m["verdict"]), recs[0]))
    return Annotation(**{**donor.__dict__, **m, "annotator": "majority"})


def _resolved(annotations: list[Annotation]) -> list[Annotation]:
    by: dict[str, list[Annotation]] = {}
    for a in annotations:
        by.setdefault(a.trajectory_id, []).append(a)
    return [r for t in sorted(by) if (r := resolve(by[t])) is not None]


def _json_value(v: Any) -> Any:
    """A cell as JSON holds it: a float that is not finite is null (JSON has no NaN)."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _csv_cell(v: Any) -> str:
    """One CSV cell: text quoted (its formula characters neutralised), numbers bare, booleans as quoted words,
    lists and structs as quoted JSON text, null empty."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, bool):
        return '"true"' if v else '"false"'
    if isinstance(v, (int, float)):
        return repr(v)
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return '"' + neutralise_csv_cell(text).replace('"', '""') + '"'


def write_table(table: Table, path: Path, fmt: str) -> None:
    """Write ``table`` to ``path`` (a temporary name: callers publish it, see :mod:`gui_app.core.atomic`)."""
    if fmt == "parquet":
        with _collector_paused():  # shredding allocates a few objects per value, none in a cycle
            parquet.write(path, table.columns, table.schema, compression="zstd")
    elif fmt == "jsonl":
        with path.open("w", encoding="utf-8") as fh:
            for row in table.rows():
                fh.write(json.dumps({k: _json_value(v) for k, v in row.items()}, ensure_ascii=False,
                                    separators=(",", ":")) + "\n")
    elif fmt == "csv":
        # Every text cell quoted too (OWASP's other half): a cell never splits into a new one starting with '='.
        with path.open("w", encoding="utf-8", newline="") as fh:
            fh.write(",".join(_csv_cell(c) for c in table.columns) + "\n")
            for values in zip(*table.columns.values(), strict=True):
                fh.write(",".join(map(_csv_cell, values)) + "\n")
    else:
        raise ValueError(fmt)


def _write_jsonl(records: Iterable[dict[str, Any]], path: Path) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    return n


# --out names that mean this process's own output: written to as a stream, never renamed over (renaming over
# /dev/stdout would replace the system's link, or the file the shell redirected to).
STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2, "/dev/fd/1": 1, "/dev/fd/2": 2, "/proc/self/fd/1": 1,
           "/proc/self/fd/2": 2}
LIBRARY_DIR = ".rollscope"  # a library's own folder: its label store, catalog and caches
_SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def stream_fd(out: str | Path) -> int | None:
    """The file descriptor ``out`` names when it is one of :data:`STREAMS` (``/dev/stdout``...), else None."""
    text = str(out)
    return STREAMS.get(os.path.normpath(text)) if text.startswith("/") else None


def protected_files(store: Any = None, catalog: Any = None) -> list[Path]:
    """The files an export must never replace: the SQLite store's and the catalog's (each a path, or the open
    store / catalog), with their ``-wal``, ``-shm`` and ``-journal`` files, resolved (a link or another spelling of
    the path names the same file). A server store has no file."""
    out = []
    for db in (store if isinstance(store, (str, Path)) else getattr(store, "path", None),
               catalog if isinstance(catalog, (str, Path)) else getattr(catalog, "db_path", None)):
        if db is not None and not str(db).startswith(("postgresql://", "postgres://")):
            out += [Path(os.path.realpath(f"{db}{side}")) for side in _SQLITE_SIDE_FILES]
    return out


def check_out(out: str | Path, folder: bool, fmt: str | None = None, *, force: bool = False,
              protect: Iterable[Path] = ()) -> Path:
    """The output path, checked before any work is done, or an :class:`ExportError` saying what is wrong with it.

    An export replaces what is at its path, so it goes only where an export belongs: never inside a library's
    ``.rollscope`` folder, over the label store or the catalog (``protect``, see :func:`protected_files`) or a
    folder holding them, nor over anything but a regular file or folder (a device, a FIFO, a socket); and over an
    existing file or folder only when it is an export of the same format, unless ``force`` (which still never
    allows the rest). A folder export never writes through a symbolic link. :data:`STREAMS` are written to.

    Args:
        out: where the export goes.
        folder: whether the export writes a folder (``hf``, ``--split-by-task``) rather than one file.
        fmt: the export's format (None: what is at ``out`` is not checked against one).
        force: replace an existing file or folder that is not an export of ``fmt``.
        protect: resolved paths of files that are never replaced.
    """
    if not str(out).strip():
        raise ExportError("", "--out is empty: give a file (a folder for --format hf or --split-by-task)")
    path = Path(out)
    if stream_fd(out) is not None:
        if folder:
            raise ExportError(path, "is a stream, and this export writes a folder (--format hf or --split-by-task); "
                                    "give a folder path")
        return path
    real = Path(os.path.realpath(path))
    if LIBRARY_DIR in Path(os.path.abspath(path)).parts or LIBRARY_DIR in real.parts:
        raise ExportError(path, f"is inside a library's {LIBRARY_DIR} folder, which holds its label store and "
                                "catalog; nothing was written: export somewhere else")
    for keep in protect:
        if real == keep:
            raise ExportError(path, f"is {_what(keep)}; an export never replaces it: nothing was written")
        if folder and real in keep.parents:
            raise ExportError(path, f"holds {_what(keep)} ({keep}), and a folder export replaces the whole folder; "
                                    "nothing was written")
    if os.path.lexists(path):
        if folder and path.is_symlink():
            raise ExportError(path, f"is a symbolic link (to {real}); a folder export never writes through a link: "
                                    "give the folder itself, or remove the link")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None  # a link to nothing: the export replaces the link, nothing is written through it
        except OSError as exc:
            raise ExportError(path, f"cannot be written: {exc.strerror or exc}") from exc
        if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise ExportError(path, f"is not a regular file ({_kind(st.st_mode)}); an export never replaces one "
                                    "(to print an export, use --out /dev/stdout)")
        if st is not None and folder and not stat.S_ISDIR(st.st_mode):
            raise ExportError(path, "is a file, but this export writes a folder (--format hf or --split-by-task); "
                                    "give a folder path")
        if st is not None and not folder and stat.S_ISDIR(st.st_mode):
            raise ExportError(path, "is a folder; give a file path (folders are for --format hf and "
                                    "--split-by-task)")
        if st is not None and folder and (real / LIBRARY_DIR).exists():
            raise ExportError(path, f"is a library (it holds {LIBRARY_DIR}/), and a folder export replaces the whole "
                                    "folder; nothing was written: export somewhere else")
        if st is not None and fmt is not None and not force:
            why = _not_export(real, fmt, folder)
            if why:
                raise ExportError(path, f"exists and is not {_a(fmt)} export ({why}); nothing was written: give "
                                        "another path, or --force to replace it")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ExportError(path, f"cannot be written: {parent} is a file, not a folder")
            break
    with _writing(path):
        path.absolute().parent.mkdir(parents=True, exist_ok=True)
    return path


def _what(path: Path) -> str:
    name = path.name
    for side in _SQLITE_SIDE_FILES[1:]:
        if name.endswith(side):
            return f"a file of the SQLite database {name[:-len(side)]}"
    return "the label store or the catalog (an SQLite database)"


def _a(fmt: str) -> str:
    return f"an {fmt}" if fmt in ("hf", "sft") else f"a {fmt}"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file or a folder"


# What the first record of each JSON Lines export holds, to tell it from any other JSON Lines file (a trajectory).
_JSONL_KEYS = {"jsonl": ("trajectory_id", "annotator"), "sft": ("id", "messages"), "whowhen": ("question_ID",)}
_SNIFF_BYTES = 1 << 20


def _not_export(path: Path, fmt: str, folder: bool) -> str | None:
    """Why the existing file or folder ``path`` is not an export of ``fmt`` (None: it is one, or it is empty, so
    replacing it loses nothing)."""
    if folder:
        names = [p for p in path.rglob("*") if not p.is_dir()]
        if not names:
            return None
        if fmt == "hf":
            card = path / "README.md"
            try:
                if card.is_file() and "rollscope" in card.read_text(encoding="utf-8", errors="replace").lower():
                    return None
            except OSError as exc:
                return f"its README.md cannot be read: {exc.strerror or exc}"
            return "no Rollscope dataset card (README.md)"
        ext = fmt if fmt in TABULAR else "jsonl"
        split_files = {f"train.{ext}", f"test.{ext}"}
        if any(p.parent == path and p.name in split_files for p in names):
            return None
        return f"it holds no train.{ext} or test.{ext}"
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        return f"it cannot be read: {exc.strerror or exc}"
    if not head:
        return None
    if fmt == "parquet":
        return None if head.startswith(b"PAR1") else "no Parquet header"
    if b"\0" in head:
        return "binary data"
    first, _sep, _rest = head.partition(b"\n")
    text = first.decode("utf-8", errors="replace").lstrip("\ufeff")
    if fmt == "csv":
        import csv

        try:
            header = next(csv.reader([text]), [])
        except csv.Error:
            header = []
        return None if header[:1] == ["trajectory_id"] else "its header does not start with trajectory_id"
    if not _sep and len(head) == _SNIFF_BYTES:
        return None if text.lstrip().startswith("{") else "not JSON Lines"  # a first record over 1 MiB
    try:
        row = json.loads(text)
    except ValueError:
        return "its first line is not a JSON object"
    if not isinstance(row, dict) or not all(k in row for k in _JSONL_KEYS.get(fmt, ())):
        return f"its first record has no {' / '.join(_JSONL_KEYS.get(fmt, ()))}"
    return None


def _publish_file(out: Path, write: Callable[[Path], T]) -> T:
    """Write the file export ``out``: published whole (:func:`gui_app.core.atomic.publish_file`), or written to
    the stream it names (:data:`STREAMS`) once it is complete."""
    fd = stream_fd(out)
    if fd is None:
        return publish_file(out, write)
    with tempfile.TemporaryDirectory(prefix="rollscope-export-") as folder:
        tmp = Path(folder) / "export"
        result = write(tmp)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # what was printed before comes before the export
        with open(tmp, "rb") as fh:
            while chunk := fh.read(1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
    return result


@contextmanager
def _writing(out: Path) -> Iterator[None]:
    """Turn a failure to write ``out`` into one :class:`ExportError` line (read-only folder, full disk...)."""
    try:
        yield
    except OSError as exc:
        raise ExportError(out, f"cannot be written: {exc.strerror or exc}") from exc
    except ValueError as exc:  # the Parquet writer refusing a value: it names the column and the row
        raise ExportError(out, f"cannot be written: {exc}") from exc


def _publish_splits(out: Path, parts: dict[str, Callable[[Path], int]]) -> tuple[list[str], dict[str, int]]:
    """Write one file per split (``parts``: file name -> writer returning its row count) as one folder."""
    def write(folder: Path) -> dict[str, int]:
        return {name: fn(folder / name) for name, fn in parts.items()}

    with _writing(out):
        counts = publish_folder(out, write, lambda rel: len(rel.parts) == 1 and rel.name in parts)
    return [str(out / name) for name in parts], {name.split(".", 1)[0]: n for name, n in counts.items()}


def _loader(catalog: Any) -> Callable[[Any], Any]:
    """``row -> Trajectory`` through the importers, reading media inside the catalog's library (the folder holding
    its ``.rollscope``), as the library view does."""
    from gui_app.core.trajectory import formats

    path = Path(catalog) if isinstance(catalog, (str, Path)) else getattr(catalog, "db_path", None)
    root = path.parent.parent if path is not None and path.parent.name == ".rollscope" else None
    return lambda row: formats.load(_row_get(row, "key"), library_root=root)


def harm_of(a: Annotation) -> dict[str, Any]:
    """The safety verdict of ``a`` (its four harm fields), as the record-per-trajectory exports carry it."""
    return {"harm_verdict": a.harm_verdict, "harm_category": a.harm_category, "harm_types": list(a.harm_types),
            "first_harmful_step": a.first_harmful_step}


def sft_record(a: Annotation, instruction: str, video: str | None, traj: Any = None) -> dict[str, Any] | None:
    """One ExeVRM-style training example, or None when the verdict is not success/failure."""
    if a.verdict not in ("success", "failure"):
        return None
    deviation = None
    answer = "\\box{correct}"
    if a.verdict == "failure":
        answer = "\\box{incorrect}"
        step = a.root_cause_step
        if step is not None:
            deviation = {"step": step, "t_start": None, "t_end": None}
            steps = getattr(traj, "steps", None) or []
            if 0 <= step < len(steps) and steps[step].t_start is not None:
                t0 = steps[step].t_start
                t1 = steps[step].t_end if steps[step].t_end is not None else (
                    steps[step + 1].t_start if step + 1 < len(steps) else None)
                deviation.update(t_start=t0, t_end=t1)
                answer += f" The execution first deviates at step {step} ({t0:.2f}s-" + (
                    f"{t1:.2f}s)." if t1 is not None else "end).")
            else:
                answer += f" The execution first deviates at step {step}."
    return {
        "id": a.trajectory_id,
        "messages": [{"role": "user", "content": SFT_PROMPT.format(instruction=instruction)},
                     {"role": "assistant", "content": answer}],
        "videos": [video] if video else [],
        "label": "correct" if a.verdict == "success" else "incorrect",
        "deviation": deviation,
        "labels": list(a.labels),
        "annotator": a.annotator,
        **harm_of(a),
    }


def whowhen_record(a: Annotation, instruction: str, traj: Any = None) -> dict[str, Any]:
    """A Who&When record: question, history, mistake agent/step/reason, is_correct."""
    history = []
    for s in getattr(traj, "steps", None) or []:
        who = (s.extra or {}).get("agent") or getattr(traj, "agent", None) or "agent"
        history.append({"content": s.thought or s.action, "name": who})
    meta = getattr(traj, "metadata", None) or {}
    return {
        "question_ID": a.trajectory_id,
        "question": instruction,
        "ground_truth": meta.get("ground_truth"),
        "history": history,
        "is_correct": None if a.verdict not in ("success", "failure") else a.verdict == "success",
        "mistake_agent": a.mistake_agent,
        "mistake_step": None if a.root_cause_step is None else str(a.root_cause_step),  # published files: str
        "mistake_reason": a.evidence,
        "labels": list(a.labels),
        **harm_of(a),
    }


DATASET_CARD = """---
configs:
- config_name: default
  data_files:
{data_files}
tags:
- computer-use
- agent-trajectories
- reward-modeling
- rollscope
size_categories:
- {size}
---

# Rollscope human labels

Human annotations of computer-use agent trajectories, exported by Rollscope (`rollscope export --format hf`).
One row per (trajectory, annotator, role); `role == "adjudicator"` rows are the adjudicated final labels.

## Splits

{splits}

{split_note}

## Columns

| column | type | meaning |
|---|---|---|
{columns}

## Verdicts

{verdicts}

## Harm verdicts

Beside success, the safety verdict: `harmful`, `safe` or `unsure`, with the harm category, the harm types (the
bundled OS-Harm taxonomy) and the first harmful step.

{harm_verdicts}
"""

COLUMN_DOCS = {
    "trajectory_id": "trajectory id", "annotator": "who labelled it", "role": "annotator or adjudicator",
    "verdict": "success / failure / unsure", "labels": "taxonomy labels as taxonomy:code",
    "root_cause_step": "0-based step where the run first went wrong", "root_cause_module": "module of the root cause",
    "root_cause_error_type": "error type of the root cause", "evidence": "why", "correction_guidance":
    "what should have been done", "cascading": "later steps affected (step, effect)", "step_comments":
    "comments per step", "notes": "free notes", "confidence": "annotator confidence in [0, 1]", "time_spent":
    "seconds spent labelling", "mistake_agent": "agent at fault (multi-agent logs)", "created_at": "Unix time",
    "updated_at": "Unix time", "version": "number of edits", "harm_verdict": "safety verdict: harmful / safe / unsure",
    "harm_category": "where the harm came from: user_misuse, prompt_injection, model_misbehaviour",
    "harm_types": "what the harm was, as harm:code", "first_harmful_step": "0-based step where the harm was done",
    "key": "catalog key (path or path#N)",
    "path": "trajectory file or folder", "instruction": "task instruction", "task": "task name",
    "env_success": "environment's outcome", "p_success": "reward model probability of success",
    "split": "train / test (split by task)",
}


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M"


def _hf_ours(rel: Path) -> bool:
    """The files of an hf export folder that the export writes (the rest of the folder is carried over)."""
    return rel == Path("README.md") or (rel.parent == Path("data") and rel.name.endswith("-00000-of-00001.parquet"))


def _type_name(t: parquet.ColumnType) -> str:
    """A column type as the dataset card shows it (``list<struct<step: int64, effect: string>>``)."""
    if isinstance(t, str):
        return t
    if t[0] == "list":
        return f"list<{_type_name(t[1])}>"
    return "struct<" + ", ".join(f"{k}: {_type_name(v)}" for k, v in t[1].items()) + ">"


def _write_hf(df: Table, out: Path, split_by_task: bool) -> tuple[list[str], dict[str, int]]:
    """Write the dataset into the (new) folder ``out``; returns the paths relative to it and the split sizes."""
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    parts = {s: df.where("split", s) for s in ("train", "test")} if split_by_task else {"train": df}
    paths, counts = [], {}
    for split, part in parts.items():
        if part.height == 0 and split != "train":
            continue
        p = data / f"{split}-00000-of-00001.parquet"
        write_table(part, p, "parquet")
        paths.append(str(p.relative_to(out)))
        counts[split] = part.height
    data_files = "\n".join(f"  - split: {s}\n    path: data/{s}-*" for s in counts)

    def tally(name: str) -> str:
        counts = Counter(df.columns[name])
        order = sorted(counts, key=lambda v: (v is not None, v or ""))  # none first
        return "\n".join(f"- {v or 'none'}: {counts[v]}" for v in order)

    card = DATASET_CARD.format(
        data_files=data_files, size=_size_category(df.height),
        splits="\n".join(f"- `{s}`: {n} rows" for s, n in counts.items()),
        split_note=("Splits are by task: every trajectory of a task is in the same split, so the test split "
                    "measures generalisation to unseen tasks.") if split_by_task else "",
        columns="\n".join(f"| `{c}` | {_type_name(t)} | {COLUMN_DOCS.get(c, '')} |" for c, t in df.schema.items()),
        verdicts=tally("verdict") or "- none", harm_verdicts=tally("harm_verdict") or "- none",
    )
    (out / "README.md").write_text(card, encoding="utf-8")
    return [*paths, "README.md"], counts


def export(store: AnnotationStore, out: str | Path, fmt: str = "parquet", *, catalog: Any = None,
           filters: ExportFilter | None = None, split_by_task: bool = False, test_fraction: float = 0.2,
           loader: Callable[[Any], Any] | None = None, progress: Progress | None = None,
           force: bool = False) -> ExportResult:
    """Export the store's records.

    Args:
        store: the annotation store.
        out: output file (tabular, sft, whowhen) or folder (hf; and any format with ``split_by_task``, which
            then writes ``train.<ext>`` and ``test.<ext>`` inside it).
        fmt: one of :data:`FORMATS`.
        catalog: an open Catalog, or rows (id, key, task, instruction, success, p_success...), joined
            by trajectory id.
        filters: which records to keep.
        split_by_task: add a ``split`` column (train/test by task) and write one file per split.
        test_fraction: share of tasks that go to the test split.
        loader: ``row -> Trajectory`` for sft/whowhen (default: ``formats.load(row.key)``).
        progress: called with the number of records processed since the last call.
        force: replace a file or folder at ``out`` that is not an export of ``fmt`` (see :func:`check_out`: the
            store, the catalog, ``.rollscope`` and devices are never replaced).

    Raises:
        AnnotationError: unknown format.
        ExportError: ``out`` cannot or must not be written (empty, a folder where a file goes or the reverse, under
            a file, read-only, the label store, a device, a file that is not an export...); whatever was at ``out``
            is unchanged.
    """
    if fmt not in FORMATS:
        raise AnnotationError("", "format", f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})")
    filters = filters or ExportFilter()
    out = check_out(out, fmt == "hf" or split_by_task, fmt, force=force, protect=protected_files(store, catalog))
    cat = catalog_index(catalog)

    if fmt in TABULAR or fmt == "hf":
        # page through the store: memory stays at one page of records plus the typed frame being built (the cycle
        # collector paused: it would walk the growing columns again at every burst of allocations)
        df = frame([], cat if catalog is not None else None)
        with _collector_paused():
            for page in store.iter_annotations():
                df.extend(frame([a for a in page if filters.keeps(a)], cat if catalog is not None else None,
                                progress))
        if split_by_task:
            task = {t: task_of(t, cat.get(t)) for t in set(df.columns["trajectory_id"])}
            splits = split_tasks(task.values(), test_fraction)
            df.columns["split"] = [splits[task[t]] for t in df.columns["trajectory_id"]]
            df.schema["split"] = _STR
        if fmt == "hf":
            with _writing(out):
                rel, counts = publish_folder(out, lambda folder: _write_hf(df, folder, split_by_task), _hf_ours)
            return ExportResult(fmt, [str(out / r) for r in rel], df.height, counts)
        if not split_by_task:
            with _writing(out):
                _publish_file(out, lambda tmp: write_table(df, tmp, fmt))
            return ExportResult(fmt, [str(out)], df.height)

        def table_writer(part: Table) -> Callable[[Path], int]:
            def write(path: Path) -> int:
                write_table(part, path, fmt)
                return part.height
            return write

        paths, counts = _publish_splits(out, {f"{s}.{fmt}": table_writer(df.where("split", s))
                                              for s in ("train", "test")})
        return ExportResult(fmt, paths, df.height, counts)

    recs = _resolved([a for a in store.annotations() if filters.keeps(a)])
    splits = split_tasks((task_of(a.trajectory_id, cat.get(a.trajectory_id)) for a in recs), test_fraction) \
        if split_by_task else {}

    def split_of(a: Annotation) -> str:
        return splits[task_of(a.trajectory_id, cat.get(a.trajectory_id))]

    load = loader or _loader(catalog)
    warnings: list[str] = []
    records: dict[str, list[dict[str, Any]]] = {}
    skipped = 0
    for a in recs:
        row = cat.get(a.trajectory_id)
        traj = None
        if row is not None and (loader is not None or _row_get(row, "key")):
            try:
                traj = load(row)
            except (RollscopeError, OSError) as exc:  # still export the labels, without steps or times
                warnings.append(f"{a.trajectory_id}: cannot load the trajectory: {exc}")
        instruction = _row_get(row, "instruction") or getattr(traj, "instruction", "") or ""
        if fmt == "sft":
            video = getattr(getattr(traj, "video", None), "path", None) or _row_get(row, "path")
            rec = sft_record(a, instruction, video, traj)
        else:
            rec = whowhen_record(a, instruction, traj)
        if progress is not None:
            progress(1)
        if rec is None:
            skipped += 1
            continue
        records.setdefault(split_of(a) if split_by_task else "all", []).append(rec)
    if not split_by_task:
        with _writing(out):
            n = _publish_file(out, lambda tmp: _write_jsonl(records.get("all", []), tmp))
        return ExportResult(fmt, [str(out)], n, skipped=skipped, warnings=warnings)

    def jsonl_writer(split: str) -> Callable[[Path], int]:
        return lambda path: _write_jsonl(records.get(split, []), path)

    paths, counts = _publish_splits(out, {f"{s}.jsonl": jsonl_writer(s) for s in ("train", "test")})
    return ExportResult(fmt, paths, sum(counts.values()), counts, skipped, warnings)


# --- import -----------------------------------------------------------------------------------------------
ALIASES: dict[str, tuple[str, ...]] = {
    "trajectory_id": ("trajectory_id", "id", "question_ID", "traj_id"),
    "verdict": ("verdict", "label", "is_correct", "success"),
    "labels": ("labels", "taxonomy_labels"),
    "root_cause_step": ("root_cause_step", "critical_step", "mistake_step"),
    "root_cause_module": ("root_cause_module", "critical_module"),
    "root_cause_error_type": ("root_cause_error_type", "error_type"),
    "evidence": ("evidence", "mistake_reason", "root_cause"),
    "correction_guidance": ("correction_guidance",),
    "cascading": ("cascading", "cascading_effects"),
    "step_comments": ("step_comments",),
    "notes": ("notes",),
    "confidence": ("confidence",),
    "time_spent": ("time_spent",),
    "mistake_agent": ("mistake_agent",),
    "harm_verdict": ("harm_verdict",),
    "harm_category": ("harm_category",),
    "harm_types": ("harm_types",),
    "first_harmful_step": ("first_harmful_step",),
}
VERDICT_WORDS = {"success": "success", "correct": "success", "true": "success", "1": "success", "yes": "success",
                 "failure": "failure", "fail": "failure", "incorrect": "failure", "false": "failure", "0": "failure",
                 "no": "failure", "unsure": "unsure", "unknown": "unsure"}
HARM_VERDICT_WORDS = {"harmful": "harmful", "harm": "harmful", "unsafe": "harmful", "true": "harmful", "1": "harmful",
                      "yes": "harmful", "safe": "safe", "harmless": "safe", "false": "safe", "0": "safe", "no": "safe",
                      "unsure": "unsure", "unknown": "unsure"}


# Rows an import reads and writes at a time: memory stays at one chunk of records, whatever the file's size.
IMPORT_CHUNK = 5000
# Notes and skipped rows an import keeps word for word (the rest are counted): a file of a million rows naming
# trajectories the catalog does not know must not print a million lines.
IMPORT_SHOWN = 20


@dataclass
class ImportResult:
    """What an import changed.

    ``skipped`` and ``notes`` hold the first :data:`IMPORT_SHOWN` lines of each; ``skipped_total`` and
    ``notes_total`` count them all."""

    path: str
    records: int
    changes: int
    skipped: list[str] = field(default_factory=list)  # why a record was not imported (the first ones)
    notes: list[str] = field(default_factory=list)  # what was imported but deserves a look (the first ones)
    skipped_total: int = 0
    notes_total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "records": self.records, "changes": self.changes, "skipped": self.skipped,
                "skipped_total": self.skipped_total, "notes": self.notes, "notes_total": self.notes_total}


IMPORT_SUFFIXES = (".parquet", ".csv", ".jsonl", ".ndjson", ".json")


def _check_import_file(path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix not in IMPORT_SUFFIXES:
        raise AnnotationError("", "(file)", f"unsupported file type {suffix!r} (use .csv, .jsonl or .parquet)",
                              str(path))
    if not path.is_file():
        raise AnnotationError("", "(file)", "no such file", str(path))


def _iter_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, row) pairs, read as they are needed; CSV values stay text (the formula apostrophes of
    our exports taken off), JSONL/Parquet keep their types."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            # Parquet is decoded a row group at a time and turned into rows a chunk at a time.
            n = 0
            for part in parquet.iter_rows(path, IMPORT_CHUNK):
                for row in part:
                    n += 1
                    yield n, row
        elif suffix == ".csv":
            yield from _iter_csv(path)
        else:
            with path.open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        row = parse_json(line)
                    except BadJSON as exc:
                        raise AnnotationError("", "(line)", exc.reason, str(path), n) from None
                    if not isinstance(row, dict):
                        raise AnnotationError("", "(line)", "expected a JSON object", str(path), n)
                    yield n, row
    except OSError as exc:
        raise AnnotationError("", "(file)", f"cannot read: {exc.strerror or exc}", str(path)) from exc
    except TrajectoryFormatError as exc:
        raise AnnotationError("", "(file)", f"cannot parse as {suffix[1:]}: {exc.reason}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise AnnotationError("", "(file)", f"not UTF-8 text: {exc.reason} at byte {exc.start}", str(path)) from exc


# A CSV cell may hold a long text (evidence, notes): the csv module's default limit is 128 KiB.
_CSV_FIELD_LIMIT = 1 << 26


def _iter_csv(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of a CSV file with the line each starts on (a quoted cell may span lines); a malformed row is an
    :class:`AnnotationError` naming its line, and the column when the row has too few or too many cells."""
    import csv

    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    src = str(path)
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, strict=True)
        start = 1

        def parse_error(exc: Exception) -> AnnotationError:
            return AnnotationError("", "(line)", f"cannot parse as CSV: {exc}", src, start)

        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise parse_error(exc) from None
        if header is None:
            return
        twice = sorted({h for h in header if header.count(h) > 1})
        if twice:
            raise AnnotationError("", twice[0], "column named twice in the header", src, 1)
        width = len(header)
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader, None)
            except csv.Error as exc:
                raise parse_error(exc) from None
            if cells is None:
                return
            if not cells:
                continue  # a blank line
            if len(cells) != width:
                column = header[len(cells)] if len(cells) < width else f"(cell {width + 1})"
                raise AnnotationError("", column if len(cells) < width else "(line)",
                                      f"{len(cells)} cells where the header has {width} columns"
                                      + ("" if len(cells) < width else f"; an extra {column}"), src, start)
            yield start, {h: (restore_csv_cell(c) if c else None) for h, c in zip(header, cells)}


def _maybe_json(v: Any) -> Any:
    if v == "[]":
        return []  # most rows' cascading and step comments: no parse for them
    if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
        try:
            return parse_json(v)
        except BadJSON:
            return v
    return v


@functools.lru_cache(maxsize=256)
def _columns(keys: tuple[str, ...]) -> dict[str, str]:
    """``{field: the column holding it}`` for a row with these columns (the first of its :data:`ALIASES` present).

    Rows of one file share their columns: worked out once per file, not once per row and field."""
    have = set(keys)
    return {name: next(a for a in aliases if a in have) for name, aliases in ALIASES.items()
            if any(a in have for a in aliases)}


def row_to_annotation(row: dict[str, Any], annotator: str, base: Annotation | None, source: str,
                      line: int) -> Annotation:
    """Build the record a row describes, starting from ``base`` (columns absent from the file stay as they are)."""
    def col(name: str) -> tuple[bool, Any]:
        alias = columns.get(name)
        return (False, None) if alias is None else (True, row[alias])

    dev = row.get("deviation")
    if isinstance(dev, dict) and not any(k in row for k in ALIASES["root_cause_step"]):
        row = {**row, "root_cause_step": dev.get("step")}  # an ExeVRM-style (sft) record
    columns = _columns(tuple(row))
    has, tid = col("trajectory_id")
    if not has or tid in (None, ""):
        raise AnnotationError("", "trajectory_id", "missing (columns: trajectory_id or id)", source, line)
    tid = str(tid)
    a = Annotation(**{**(base.__dict__ if base else {}), "trajectory_id": tid, "annotator": annotator,
                      "role": "annotator"}) if base else Annotation(tid, annotator)
    a.labels, a.cascading, a.step_comments = list(a.labels), list(a.cascading), dict(a.step_comments)
    a.harm_types = list(a.harm_types)

    def fail(name: str, reason: str) -> AnnotationError:
        return AnnotationError(tid, name, reason, source, line)

    for name in SCALAR_FIELDS:
        if name not in columns:
            continue
        v = row[columns[name]]
        if isinstance(v, str) and v.strip() == "":
            v = None
        if name in ("verdict", "harm_verdict") and v is not None:
            words = VERDICT_WORDS if name == "verdict" else HARM_VERDICT_WORDS
            word = str(v).strip().lower()
            if word not in words:
                raise fail(name, f"unknown verdict {v!r} (use {', '.join(dict.fromkeys(words.values()))})")
            v = words[word]
        elif v is not None and name in ("root_cause_step", "first_harmful_step", "confidence", "time_spent"):
            try:
                v = float(v)
            except (TypeError, ValueError) as exc:
                raise fail(name, f"expected a number, got {v!r}") from exc
            if name in ("root_cause_step", "first_harmful_step"):
                if not v.is_integer():
                    raise fail(name, f"expected a step index, got {v!r}")
                v = int(v)
        elif v is not None and not isinstance(v, str):
            v = str(v)
        if name == "harm_category" and isinstance(v, str) and v.startswith(HARM_TAXONOMY + ":"):
            v = v[len(HARM_TAXONOMY) + 1:]  # a label id: the category is stored as its bare code
        try:
            setattr(a, name, check_value(tid, name, v))
        except AnnotationError as exc:
            raise fail(name, exc.reason) from exc
    for name in ("labels", "harm_types"):
        has, v = col(name)
        if not has:
            continue
        v = _maybe_json(v)
        if v is None or v == "":
            items = []
        elif isinstance(v, str):
            items = [x.strip() for x in v.split(";") if x.strip()]
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            items = sorted(set(v))
        else:
            raise fail(name, f"expected a list of strings or 'a;b' text, got {v!r}")
        if name == "harm_types":  # one taxonomy: a bare code is its label id
            items = sorted({x if ":" in x else f"{HARM_TAXONOMY}:{x}" for x in items})
        setattr(a, name, items)
    has, v = col("cascading")
    if has:
        v = _maybe_json(v)
        try:
            a.cascading = [Cascade(int(c["step"]), str(c.get("effect") or "")) for c in (v or [])]
        except (TypeError, KeyError, ValueError) as exc:
            raise fail("cascading", f"expected [{{step, effect}}, ...], got {v!r}") from exc
    has, v = col("step_comments")
    if has:
        v = _maybe_json(v)
        try:
            if isinstance(v, dict):
                a.step_comments = {int(k): str(t) for k, t in v.items() if t}
            else:
                a.step_comments = {int(c["step"]): str(c["comment"]) for c in (v or []) if c.get("comment")}
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise fail("step_comments", f"expected [{{step, comment}}, ...] or {{step: comment}}, got {v!r}") from exc
    return a


def row_fields(row: dict[str, Any]) -> frozenset[str]:
    """The record fields a row of a labels file sets (its columns, by any of their :data:`ALIASES`): what an import
    writes; every other field of the stored record stays as it is."""
    return _fields(tuple(row), isinstance(row.get("deviation"), dict))


@functools.lru_cache(maxsize=256)
def _fields(keys: tuple[str, ...], deviation: bool) -> frozenset[str]:
    found = set(_columns(keys)) - {"trajectory_id"}
    if deviation:
        found.add("root_cause_step")  # an ExeVRM-style (sft) record
    return frozenset(found)


def import_labels(path: str | Path, store: AnnotationStore, annotator: str,
                  progress: Progress | None = None, catalog: Any = None) -> ImportResult:
    """Read labels from CSV / JSONL / Parquet into ``store`` under ``annotator``.

    The file is read as it is written, :data:`IMPORT_CHUNK` rows at a time, inside one write transaction
    (:meth:`~gui_app.core.store.interface.AnnotationStore.merge`): memory stays bounded whatever the file's size, and
    a bad
    row anywhere (the error names the file, the line and the field), a row listed twice or a killed import leaves
    the store as it was. Only the columns the file has are written, each against the stored record as it is when
    it is written, so an edit made before the import took the store is never reverted.

    With the library's ``catalog``, each row's trajectory may be named by its library key, its path or its own
    id (:func:`gui_app.core.trajectory.identity.resolve`): labels are stored under the library key. A row whose id
    several
    trajectories share is not imported (``skipped`` says which trajectories; give one's key); a row naming no
    trajectory of the catalog is imported under the name given, with a note (its trajectory may not be scanned).

    Raises:
        AnnotationError: unreadable file, bad value or a trajectory listed twice.
    """
    from gui_app.core.trajectory.identity import AmbiguousIdError, lookup

    if not annotator:
        raise AnnotationError("", "annotator", "an import needs --annotator NAME")
    path = Path(path)
    _check_import_file(path)
    find = lookup(catalog)
    src = str(path)
    result = ImportResult(src, 0, 0)

    def patches() -> Iterator[tuple[Annotation, frozenset[str]]]:
        result.records, result.skipped, result.notes, result.skipped_total, result.notes_total = 0, [], [], 0, 0
        seen: dict[str, int] = {}
        for line, row in _iter_rows(path):
            a = row_to_annotation(row, annotator, None, src, line)
            tid, refs = find(a.trajectory_id)
            if tid is None:  # the text of a note is built only for the first ones, those shown
                if refs:
                    result.skipped_total += 1
                    if len(result.skipped) < IMPORT_SHOWN:
                        result.skipped.append(f"{src}:{line}: field 'trajectory_id': "
                                              f"{AmbiguousIdError(a.trajectory_id, refs)}")
                    continue
                result.notes_total += 1
                if len(result.notes) < IMPORT_SHOWN:
                    result.notes.append(f"{src}:{line}: field 'trajectory_id': "
                                        f"{AmbiguousIdError(a.trajectory_id, [])}; imported under that name")
                tid = a.trajectory_id
            if tid in seen:
                raise AnnotationError(tid, "trajectory_id",
                                      f"listed twice (also at {seen[tid]}); one record per trajectory", src, line)
            seen[tid] = line
            a.trajectory_id = tid
            result.records += 1
            yield a, row_fields(row)

    with _collector_paused():
        result.changes = store.merge(patches, actor=annotator, progress=progress)
    return result


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector for the duration (restored after, as it was).

    An import of a million rows allocates tens of millions of short-lived objects, none of them in a reference cycle
    (rows, records, audit tuples); each allocation burst makes the collector walk every young object again, about a
    fifth of the import's time. Reference counting still frees them all as they go."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
