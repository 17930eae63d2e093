"""The library's rows in memory, and the queries over them: filtered, searched and sorted without SQLite.

:class:`RowSet` holds every row of one version of the catalog (sorted by key) and answers :meth:`RowSet.select` (the
rows a search and filters keep) and :meth:`RowSet.order` (a column's order). What a query derives is kept for the
next one: each column's order in each direction, each filter column as an array, each searched word's matches. The
library asks again on every keystroke, header click and page; at 100,000 rows a new search, filter or a column sorted
before costs milliseconds, where asking SQLite (a scan of every row) and sorting 100,000 Python rows cost 100 to
500 ms. A new word of three characters or more is looked for only in the rows the catalog's text index names for it,
when they are few (a millisecond where a pass over every row's text costs ten). The catalog makes a new set whenever
its rows change (:meth:`gui_app.core.library.catalog.Catalog.query`).

The semantics are the catalog's: every word of the search must occur (case-insensitively, as a substring) in the
row's search text (id, instruction, task, library key, run folder, domain, agent), in its outcome or the model's
verdict in words (``success``, ``failure``, ``unknown``, ``error``), or be a word whose labels name the row
(``label_refs``). Sorting is stable over the key order; text ignores case (``casefold``); missing values (None or an
empty text) come last in both directions, in key order.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from gui_app.core.errors import CatalogError

# Every word an outcome or a verdict is said with. A search word that is part of none of them cannot match them, so
# it is looked for in the search text alone.
FACT_WORDS = ("error", "success", "failure", "unknown")
FILTER_KEYS = frozenset({"format", "success", "has_error", "task", "min_p_success", "max_p_success", "scored",
                         "label_refs", "harmful", "min_p_harm"})
# The harm filter's values (``filters["harmful"]``) as the harm column codes them (see RowSet._column).
HARM_CODES = {True: 1, False: 0, "unknown": -1, "none": -2}
# Rows a word is found in one by one (``bytes.find``, a Python step each) before the rest of the text is searched at
# once with numpy (a comparison of every byte, then a step per candidate position, in C): a word in few rows costs one
# pass of ``bytes.find``; one in most rows ("click", "ta") costs no more than a few passes of numpy.
_FIND_ROWS = 1_000
# Rows the text index may name for a new word (see RowSet._indexed) before it is looked for in every row's text
# instead: each candidate's text is searched from Python (a microsecond or so), where a pass over every row's text
# costs some ten milliseconds at 100,000 rows.
_INDEX_ROWS = 2_000
# The shortest word the text index finds (a trigram).
_TRIGRAM = 3
_WORDS_KEPT = 64  # searched words whose matches are kept (a user typing and deleting comes back to them)
_SELECTIONS_KEPT = 8  # (search, filters) whose rows are kept: the library's count, then its pages, ask the same


def check_filters(filters: Mapping[str, Any] | None) -> None:
    """Refuse filters a query does not know (by name, and the harm filter's values).

    Raises:
        CatalogError: an unknown filter or harm filter value.
    """
    f = filters or {}
    unknown = set(f) - FILTER_KEYS
    if unknown:
        raise CatalogError(f"unknown catalog filter(s): {', '.join(sorted(unknown))}; "
                           f"known: {', '.join(sorted(FILTER_KEYS))}")
    h = f.get("harmful")
    if h is not None and HARM_CODES.get(h if isinstance(h, str) else bool(h)) is None:
        raise CatalogError(f"unknown harm filter {h!r}; known: True (harmful), False (safe), 'unknown', "
                           "'none' (no harm verdict)")


class RowSet:
    """Every row of one catalog version, sorted by key, with the orders and matches queries derived from them.

    Args:
        rows: the rows, sorted by key (tuples whose fields are named by ``fields``).
        fields: the name of each field of a row.
        text_fields: the fields sorted as text (ignoring case).
        search: reads the search text of each row (called once, when a search first asks).
        facts: a row's outcome and the model's verdict in words; asked of every row when a search word first could
            match them.
        same_rows: a set of the same rows in the same order whose scores alone differ: its search texts and
            positions still hold and are taken over.
        rowids: reads each row's id in the text index (called once, when a word is first looked up in it).
        candidates: the text index: ``candidates(word, limit)`` gives the ids of rows whose search text may hold
            ``word`` (a printable ASCII word of three characters or more), at most ``limit + 1`` of them, or None
            when there is no index. It only narrows: each row it names is searched as every row otherwise is. Asked
            in the caller's read transaction, which sees the same rows as these.
    """

    def __init__(self, rows: list[Any], fields: Sequence[str], text_fields: frozenset[str],
                 search: Callable[[], list[str]], facts: Callable[[Any], str],
                 same_rows: RowSet | None = None, rowids: Callable[[], list[int]] | None = None,
                 candidates: Callable[[str, int], list[int] | None] | None = None):
        self.rows = rows
        self._index = {name: i for i, name in enumerate(fields)}
        self._text_fields = text_fields
        # The search texts, read on first use: every row's, UTF-8, one after the other (a byte string, searched in
        # C), and where each row's begins (the last entry: the end).
        self._search: tuple[bytes, array] | Callable[[], list[str]] = \
            search if same_rows is None else same_rows._search
        self._facts_of = facts
        # Each row's facts as a code, and the facts each code stands for (a library has a handful of combinations).
        self._facts: tuple[np.ndarray, list[str]] | None = None
        # How often each byte occurs in the search texts (theirs when taken over).
        self._byte_counts: np.ndarray | None = None if same_rows is None else same_rows._byte_counts
        self._lock = threading.Lock()
        self._orders: dict[tuple[str, bool], np.ndarray] = {}
        self._columns: dict[str, Any] = {}
        self._words: dict[str, np.ndarray] = {}
        self._selections: dict[str, np.ndarray | None] = {}
        self._positions: dict[str, int] | None = None if same_rows is None else same_rows._positions
        # The rows' ids in the text index, read on first use: (the ids sorted, the row of each), to map the rows the
        # index names to positions here with one binary search each.
        self._rowids: tuple[np.ndarray, np.ndarray] | Callable[[], list[int]] | None = \
            rowids if same_rows is None else same_rows._rowids
        self._candidates = candidates

    def __len__(self) -> int:
        return len(self.rows)

    def prepare(self, pause: Callable[[], None] | None = None) -> None:
        """Derive now what the first search would (the search texts, the facts of every row, the rows' ids in the text
        index), so it does not wait for them; ``pause`` is called between the steps (see :meth:`Catalog.warm
        <gui_app.core.library.catalog.Catalog.warm>`)."""
        for step in (self._texts, self._counts, self._all_facts, self._ids):
            step()
            if pause is not None:
                pause()

    def _texts(self) -> tuple[bytes, array]:
        """Every row's search text, UTF-8, one line each, and where each begins (then the end). A word is
        looked for in the whole with ``bytes.find`` (in C, jumping from match to match): a word found in few rows
        costs a few milliseconds at 100,000 rows, where testing each row's text from Python costs ten. A match of
        a UTF-8 word in UTF-8 text is a match of the word in the text."""
        if callable(self._search):
            texts = [t.encode() for t in self._search()]
            if len(texts) != len(self.rows):
                raise CatalogError(f"{len(texts)} search texts for {len(self.rows)} rows")
            starts = array("q", [0])
            for t in texts:  # each text and a newline: no searched word holds one, so none matches across two
                starts.append(starts[-1] + len(t) + 1)
            self._search = (b"\n".join(texts), starts)
        return self._search

    def _ids(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The rows' ids in the text index, sorted, and the row of each (None without the index)."""
        if callable(self._rowids):
            ids = np.array(self._rowids(), dtype=np.int64)
            if len(ids) != len(self.rows):
                raise CatalogError(f"{len(ids)} row ids for {len(self.rows)} rows")
            order = np.argsort(ids, kind="stable")
            self._rowids = (ids[order], order)
        return self._rowids

    # -- ordering ----------------------------------------------------------------------------------------------

    def order(self, column: str, descending: bool) -> np.ndarray:
        """Row indices in the order of ``column`` (see the module docstring), computed once per direction."""
        key = (column, descending)
        got = self._orders.get(key)
        if got is not None:
            return got
        n = len(self.rows)
        if column == "key":
            got = np.arange(n - 1, -1, -1) if descending else np.arange(n)
        else:
            values = list(map(itemgetter(self._index[column]), self.rows))
            present = [i for i, v in enumerate(values) if v is not None and v != ""]
            missing = [i for i, v in enumerate(values) if v is None or v == ""]
            if column in self._text_fields:
                keys: list[Any] = [str(v).casefold() if v is not None else "" for v in values]
            else:
                keys = values
            present.sort(key=keys.__getitem__, reverse=descending)  # stable: ties stay in key order
            got = np.array(present + missing, dtype=np.int64)
        with self._lock:
            self._orders[key] = got
        return got

    def position(self, ref: str) -> int | None:
        """The index of the row whose library key is ``ref``, or None."""
        if self._positions is None:
            self._positions = {r: i for i, r in enumerate(self._values("ref"))}
        return self._positions.get(ref)

    # -- selection -----------------------------------------------------------------------------------------------

    def select(self, text: str, filters: Mapping[str, Any] | None) -> np.ndarray | None:
        """Which rows ``text`` and ``filters`` keep: a bool per row, or None when they keep every row.

        Raises:
            CatalogError: an unknown filter.
        """
        f = dict(filters or {})
        check_filters(f)
        cache_key = repr((text.lower().split(), sorted((k, repr(v)) for k, v in f.items())))
        if cache_key in self._selections:
            return self._selections[cache_key]
        mask = self._filtered(f)
        for word in text.lower().split():
            mask = self._word(word, mask, f.get("label_refs") or {})
        with self._lock:
            if len(self._selections) >= _SELECTIONS_KEPT:
                self._selections.pop(next(iter(self._selections)), None)
            self._selections[cache_key] = mask
        return mask

    def _filtered(self, f: dict[str, Any]) -> np.ndarray | None:
        mask: np.ndarray | None = None

        def keep(m: np.ndarray) -> None:
            nonlocal mask
            mask = m if mask is None else mask & m

        if f.get("format") is not None:
            fmts = [f["format"]] if isinstance(f["format"], str) else list(f["format"])
            keep(self._isin("format", fmts))
        if "success" in f:
            s = f["success"]
            success = self._column("success")  # 1, 0, -1 (unknown)
            if s is None or s == "unknown":
                keep((success == -1) & ~self._column("error"))
            else:
                keep(success == int(bool(s)))
        if f.get("has_error") is not None:
            keep(self._column("error") if f["has_error"] else ~self._column("error"))
        if f.get("task") is not None:
            keep(self._isin("task", [f["task"]]))
        with np.errstate(invalid="ignore"):  # NaN (never scored) compares False, as SQL's NULL does
            if f.get("min_p_success") is not None:
                keep(np.greater_equal(self._column("p_success"), float(f["min_p_success"])))
            if f.get("max_p_success") is not None:
                keep(np.less_equal(self._column("p_success"), float(f["max_p_success"])))
        if f.get("scored") is not None:
            keep(self._column("scored") if f["scored"] else ~self._column("scored"))
        if f.get("harmful") is not None:
            h = f["harmful"]
            code = HARM_CODES.get(h if isinstance(h, str) else bool(h))
            if code is None:
                raise CatalogError(f"unknown harm filter {h!r}; known: True (harmful), False (safe), 'unknown', "
                                   "'none' (no harm verdict)")
            keep(self._column("harmful") == code)
        if f.get("min_p_harm") is not None:
            with np.errstate(invalid="ignore"):
                keep(np.greater_equal(self._column("p_harm"), float(f["min_p_harm"])))
        return mask

    def _word(self, word: str, mask: np.ndarray | None, label_refs: Mapping[str, Sequence[str]]) -> np.ndarray:
        """``mask`` narrowed to the rows ``word`` matches. A word's matches over all rows are kept (not those of its
        labels: they change with the labels); within a narrow selection only its rows are looked at."""
        found = self._words.get(word)
        if found is None and mask is not None and mask.sum() * 4 < len(mask):
            found = self._matches(word, np.flatnonzero(mask))
        elif found is None:
            found = self._matches(word, None)
            with self._lock:
                if len(self._words) >= _WORDS_KEPT:
                    self._words.pop(next(iter(self._words)), None)
                self._words[word] = found
        refs = label_refs.get(word)
        if refs:
            found = found.copy()
            found[[i for i in map(self.position, refs) if i is not None]] = True
        return found if mask is None else mask & found

    def _matches(self, word: str, within: np.ndarray | None) -> np.ndarray:
        """A bool per row: ``word`` occurs in its search text or its facts (only rows ``within`` are looked at, when
        given; the others are False)."""
        blob, starts = self._texts()
        w = word.encode()
        out = np.zeros(len(self.rows), dtype=bool)
        indexed = self._indexed(word) if within is None else None
        if indexed is not None:
            out[[i for i in indexed.tolist() if w in blob[starts[i]:starts[i + 1]]]] = True
        elif within is None:
            hit: list[int] = []
            at = blob.find(w)
            while at != -1 and len(hit) < _FIND_ROWS:
                row = bisect_right(starts, at) - 1
                hit.append(row)
                at = blob.find(w, starts[row + 1])  # the row's other matches change nothing
            out[hit] = True
            if at != -1:  # a word of many rows: the rest of the text at once
                out[self._rows_holding(w, at)] = True
        else:
            idx = within.tolist()
            out[[i for i in idx if w in blob[starts[i]:starts[i + 1]]]] = True
        if any(word in fact for fact in FACT_WORDS):
            codes, texts = self._all_facts()
            said = [code for code, text in enumerate(texts) if word in text]
            if said:
                found = np.isin(codes, said)
                out |= found if within is None else found & _mask(within, len(out))
        return out

    def _indexed(self, word: str) -> np.ndarray | None:
        """The rows whose search text may hold ``word``, as the text index names them: a superset of those that do
        (the caller searches each). None where it cannot say, or names too many to be worth searching one by one
        (then every row's text is searched): no index, a word shorter than a trigram, or beyond printable ASCII
        (the index and the byte search would agree there too; the scan is kept where that is not plain to see),
        or more than :data:`_INDEX_ROWS` rows."""
        if (self._candidates is None or self._rowids is None or len(word) < _TRIGRAM or not word.isascii()
                or not word.isprintable()):
            return None
        named = self._candidates(word, _INDEX_ROWS)
        if named is None or len(named) > _INDEX_ROWS:
            return None
        ids = self._ids()
        if ids is None:
            return None
        sorted_ids, row_of = ids
        named_ids = np.array(named, dtype=np.int64)
        at = np.searchsorted(sorted_ids, named_ids)
        if len(at) and (at.max() >= len(sorted_ids) or (sorted_ids[at] != named_ids).any()):
            return None  # an id these rows do not have: not the same rows after all, search them all
        return row_of[at]

    def _rows_holding(self, w: bytes, start: int) -> np.ndarray:
        """The rows whose search text holds ``w`` at or after byte ``start`` of the texts (with repeats): every
        position of its rarest byte, kept where the rest of the word is around it, then each position's row."""
        blob, starts = self._texts()
        text = np.frombuffer(blob, dtype=np.uint8)
        counts = self._counts()
        rare = min(range(len(w)), key=lambda k: counts[w[k]])
        # Positions where the word could start (its rarest byte `rare` bytes in), within the text.
        at = np.flatnonzero(text[start + rare:len(text) - len(w) + rare + 1] == w[rare]) + start
        for k, byte in enumerate(w):
            if k != rare and len(at):
                at = at[text[at + k] == byte]
        return np.searchsorted(np.frombuffer(starts, dtype=np.int64), at, side="right") - 1

    def _counts(self) -> np.ndarray:
        """How often each byte value occurs in the search texts (what tells a word's rarest byte)."""
        if self._byte_counts is None:
            blob, _starts = self._texts()
            self._byte_counts = np.bincount(np.frombuffer(blob, dtype=np.uint8), minlength=256)
        return self._byte_counts

    def _all_facts(self) -> tuple[np.ndarray, list[str]]:
        if self._facts is None:
            index: dict[str, int] = {}
            codes = np.fromiter((index.setdefault(f, len(index)) for f in map(self._facts_of, self.rows)), np.int16,
                                len(self.rows))
            self._facts = (codes, list(index))
        return self._facts

    def _column(self, name: str) -> np.ndarray:
        """A filter column as an array, made once: ``success`` (1, 0, -1), ``error`` (bool), ``p_success`` (NaN
        when none), ``scored`` (bool: the row has a latest score), ``harmful`` (the latest score's harm verdict as
        :data:`HARM_CODES` code it), ``p_harm`` (NaN when none)."""
        got = self._columns.get(name)
        if got is not None:
            return got
        n = len(self.rows)
        if name == "success":
            col = np.fromiter((-1 if v is None else int(v) for v in self._values("success")), np.int8, n)
        elif name == "error":
            col = np.fromiter((v is not None for v in self._values("error")), bool, n)
        elif name == "p_success":
            col = np.fromiter((np.nan if v is None else float(v) for v in self._values("p_success")), np.float64, n)
        elif name == "scored":  # a latest score always says whether it is unknown (never NULL in the store)
            col = np.fromiter((v is not None for v in self._values("model_unknown")), bool, n)
        elif name == "harmful":  # harm_unknown is NULL only without a harm verdict (migration 14)
            col = np.fromiter((-2 if unknown is None else -1 if unknown or harmful is None else int(harmful)
                               for harmful, unknown in zip(self._values("model_harmful"),
                                                           self._values("harm_unknown"))), np.int8, n)
        elif name == "p_harm":
            col = np.fromiter((np.nan if v is None else float(v) for v in self._values("p_harm")), np.float64, n)
        else:
            raise KeyError(name)
        with self._lock:
            self._columns[name] = col
        return col

    def _isin(self, name: str, wanted: Sequence[Any]) -> np.ndarray:
        """A bool per row: its ``name`` (a few distinct texts: format, task) is one of ``wanted``."""
        coded = self._columns.get(name)
        if coded is None:
            codes: dict[Any, int] = {}
            arr = np.fromiter((codes.setdefault(v, len(codes)) for v in self._values(name)), np.int32, len(self.rows))
            coded = (arr, codes)
            with self._lock:
                self._columns[name] = coded
        arr, codes = coded
        return np.isin(arr, [codes[w] for w in wanted if w in codes])

    def _values(self, name: str) -> map:
        return map(itemgetter(self._index[name]), self.rows)


def _mask(rows: np.ndarray, n: int) -> np.ndarray:
    """A bool per row of ``n``: True at ``rows``."""
    out = np.zeros(n, dtype=bool)
    out[rows] = True
    return out


def pick(rows: list[Any], order: np.ndarray, mask: np.ndarray | None, offset: int, limit: int | None) -> list[Any]:
    """The rows of ``order`` that ``mask`` keeps, from ``offset``, at most ``limit``: a new list."""
    idx = order if mask is None else order[mask[order]]
    idx = idx[offset:None if limit is None else offset + limit]
    return [rows[i] for i in idx.tolist()]
