"""The library query over the cached rows (gui_app/core/library/rows.py) answers what a plain reading of its rules
answers, for any search, filters, order and page, and stays right as scores land and scans change the rows."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from gui_app.core.errors import CatalogError
from gui_app.core.library.catalog import Catalog, CatalogRow
from gui_app.core.scoring.score import Score, verdict
from tests.test_catalog import make_broken, make_native

_TEXT = {"key", "id", "path", "format", "instruction", "task", "outcome_source", "error", "ref", "run_folder",
         "domain", "agent"}
_INSTRUCTIONS = ("Open the menu", "open the MENU", "Éclair recipe", "éclair list", "Zebra", "", "click the tab",
                 "Straße map", "STRASSE map", "click SETTINGS")
_WORDS = ("open", "menu", "éclair", "strasse", "straße", "click", "settings", "fail", "success", "unknown", "error",
          "t1", "zebra", "succ", "nothing-matches")


def _facts(r: CatalogRow) -> str:
    outcome = "error" if r.error else {True: "success", False: "failure", None: ""}[r.success]
    if r.model_unknown:
        said = "unknown"
    elif r.model_success is not None:
        said = "success" if r.model_success else "failure"
    else:
        said = {True: "success", False: "failure", None: ""}[verdict(r.p_success, r.threshold)]
    return f"{outcome} {said}"


def reference(rows: list[CatalogRow], search: dict[str, str], text: str, filters: dict, order_by: str,
              descending: bool) -> list[CatalogRow]:
    """The query's rules, read plainly."""
    def keeps(r: CatalogRow) -> bool:
        for word in text.lower().split():
            facts = any(word in w for w in ("error", "success", "failure", "unknown")) and word in _facts(r)
            labelled = r.ref in (filters.get("label_refs") or {}).get(word, ())
            if not (word in search[r.key] or facts or labelled):
                return False
        f = filters
        if f.get("format") is not None and r.format not in ([f["format"]] if isinstance(f["format"], str)
                                                              else f["format"]):
            return False
        if "success" in f:
            if f["success"] in (None, "unknown"):
                if r.success is not None or r.error is not None:
                    return False
            elif r.success is not bool(f["success"]):
                return False
        if f.get("has_error") is not None and (r.error is not None) != f["has_error"]:
            return False
        if f.get("task") is not None and r.task != f["task"]:
            return False
        if f.get("min_p_success") is not None and (r.p_success is None or r.p_success < f["min_p_success"]):
            return False
        if f.get("max_p_success") is not None and (r.p_success is None or r.p_success > f["max_p_success"]):
            return False
        if f.get("scored") is not None and (r.model_unknown is not None) != f["scored"]:
            return False
        return True

    kept = sorted((r for r in rows if keeps(r)), key=lambda r: r.key)
    i = CatalogRow._fields.index(order_by)
    present = [r for r in kept if r[i] is not None and r[i] != ""]
    missing = [r for r in kept if r[i] is None or r[i] == ""]
    if order_by == "key":
        return kept[::-1] if descending else kept
    present.sort(key=lambda r: str(r[i]).casefold() if order_by in _TEXT else r[i], reverse=descending)
    return present + missing


@pytest.fixture
def library(tmp_path) -> tuple[Catalog, Path]:
    rng = random.Random(7)
    root = tmp_path / "lib"
    for i in range(60):
        make_native(root / f"g{i % 3}", f"t{i:02d}", instruction=rng.choice(_INSTRUCTIONS) or " ",
                    n_steps=rng.randint(1, 5), success=rng.choice((True, False, None)),
                    task=rng.choice((None, "mail", "Mail", "files")), app=rng.choice((None, "chrome")))
    make_broken(root, "broken", '{"schema_version": 1, "steps": []}')
    cat = Catalog(tmp_path / "catalog.sqlite", library_root=root)
    cat.scan(root)
    for key in cat.keys()[::2]:
        p = rng.choice((None, rng.random()))
        cat.set_score(key, Score(p_success=p, threshold=rng.choice((None, 0.5)), unknown=rng.random() < 0.2,
                                 success=rng.choice((None, True, False)), model="m"))
    return cat, root


def _all(cat: Catalog) -> tuple[list[CatalogRow], dict[str, str]]:
    rows = [cat.get(k) for k in cat.keys()]
    conn = sqlite3.connect(cat.db_path)
    search = dict(conn.execute("SELECT key, search FROM trajectories"))
    conn.close()
    return [r for r in rows if r is not None], search


def _random_query(rng: random.Random, refs: list[str]) -> tuple[str, dict, str, bool]:
    text = " ".join(rng.sample(_WORDS, rng.choice((0, 0, 1, 1, 2))))
    filters: dict = {}
    for name, values in (("format", ("native", ["native", "osworld"], "osworld")),
                         ("success", (True, False, None, "unknown")), ("has_error", (True, False)),
                         ("task", ("mail", "Mail")), ("min_p_success", (0.2, 0.5)), ("max_p_success", (0.6,)),
                         ("scored", (True, False))):
        if rng.random() < 0.2:
            filters[name] = rng.choice(values)
    if text and rng.random() < 0.3:
        filters["label_refs"] = {text.split()[0]: rng.sample(refs, 3)}
    return text, filters, rng.choice(CatalogRow._fields), rng.random() < 0.5


def test_any_query_answers_what_the_rules_say(library):
    cat, _root = library
    rows, search = _all(cat)
    rng = random.Random(11)
    refs = [r.ref for r in rows]
    for _ in range(400):
        text, filters, order_by, descending = _random_query(rng, refs)
        want = reference(rows, search, text, filters, order_by, descending)
        got = cat.query(text, filters, order_by, descending)
        assert [r.key for r in got] == [r.key for r in want], (text, filters, order_by, descending)
        assert got == want
        assert cat.count(text, filters) == len(want)
        offset = rng.randint(0, 30)
        assert cat.query(text, filters, order_by, descending, limit=7, offset=offset) == want[offset:offset + 7]


def test_queries_follow_new_scores_and_rescans(library):
    cat, root = library
    cat.query("open", {"scored": True}, "p_success", True)  # rows, an order, a word and a filter are cached
    key = cat.keys()[1]
    cat.set_score(key, Score(p_success=0.99, threshold=0.5, success=True, model="m2"))
    rows, search = _all(cat)
    for args in (("open", {"scored": True}, "p_success", True), ("success", {}, "instruction", False),
                 ("", {"min_p_success": 0.9}, "p_success", False)):
        assert cat.query(*args) == reference(rows, search, *args)
    assert cat.get(key).p_success == 0.99
    make_native(root / "g0", "t99", instruction="Open the brand new menu")
    (root / "g1" / "t01" / "trajectory.json").unlink()
    cat.scan(root)
    rows, search = _all(cat)
    for args in (("open", {"scored": True}, "p_success", True), ("brand", {}, "instruction", False),
                 ("", {}, "instruction", True)):
        assert cat.query(*args) == reference(rows, search, *args)
    assert cat.count("brand") == 1 and cat.count() == len(rows)


def test_a_query_returns_a_list_of_its_own_and_refuses_unknown_names(library):
    cat, _root = library
    first = cat.query("open")
    first.clear()
    assert cat.query("open")
    with pytest.raises(CatalogError, match="unknown catalog filter"):
        cat.query(filters={"colour": "red"})
    with pytest.raises(CatalogError, match="unknown catalog filter"):
        cat.count(filters={"colour": "red"})
    with pytest.raises(CatalogError, match="cannot sort"):
        cat.query(order_by="colour")


def test_first_pages_of_a_catalog_just_opened_come_from_the_index_in_the_same_order(tmp_path):
    """Before the rows are read, the default order's first pages are read through the instruction index; they are
    the pages the cached rows give, through the rows without an instruction (load errors) at the end."""
    root = tmp_path / "lib"
    for i, instruction in enumerate(("Open the menu", "open the MENU", "Zebra", "apple", "Apple", "click", "b", "B",
                                     "open the menu") * 3):
        make_native(root, f"t{i:02d}", instruction=instruction)
    for i in range(4):
        make_broken(root, f"broken{i}", "{}")
    db = tmp_path / "catalog.sqlite"
    with Catalog(db, library_root=root) as cat:
        cat.scan(root)
        cat.set_score(cat.keys()[0], Score(p_success=0.7, threshold=0.5, model="m"))
        rows, search = _all(cat)
    want = reference(rows, search, "", {}, "instruction", False)
    for offset, limit in ((0, 5), (5, 5), (20, 10), (25, 10), (29, 2), (31, 100), (40, 5)):
        with Catalog(db, library_root=root, background=False) as fresh:
            assert fresh.query(limit=limit, offset=offset) == want[offset:offset + limit], (offset, limit)
            assert fresh._cache is None  # read through the index: the rows were not read
    with Catalog(db, library_root=root, background=False) as fresh:
        assert fresh.query("open", limit=5) == reference(rows, search, "open", {}, "instruction", False)[:5]
        assert fresh._cache is None  # a search too is answered in SQL (tests/test_catalog_cold_query.py)
        assert fresh.query("fail", limit=5) == reference(rows, search, "fail", {}, "instruction", False)[:5]
        assert fresh._cache is not None  # a word of the outcomes ("failure") reads the rows


def test_a_catalog_with_instructions_beyond_ascii_sorts_them_by_casefold_for_the_first_page(library):
    cat, _root = library
    rows, search = _all(cat)
    with Catalog(cat.db_path, library_root=cat.library_root, background=False) as fresh:
        assert fresh.query(limit=20) == reference(rows, search, "", {}, "instruction", False)[:20]
        # "Straße" folds to "strasse": the NOCASE index would order it elsewhere, so the instructions were read and
        # sorted by casefold (a few, not every row)
        assert fresh._cache is None


def test_a_word_never_matches_across_two_rows(tmp_path):
    """The rows' search texts are searched as one string: the end of one and the start of the next ("...t0" +
    "t1 ...") never make a match."""
    root = tmp_path / "lib"
    for name in ("t0", "t1"):
        make_native(root, name, instruction=f"Open {name}")
    with Catalog(tmp_path / "catalog.sqlite", library_root=root) as cat:
        cat.scan(root)
        rows, search = _all(cat)
        ends, starts = search[rows[0].key], search[rows[1].key]
        across = ends[-2:] + starts[:2]
        assert across not in ends and across not in starts
        assert cat.count(across) == 0 and cat.count(ends[-2:]) >= 1


_RACE = r'''
import random, sys, threading
from gui_app.core.errors import CatalogError
from gui_app.core.library.catalog import Catalog

db, root = sys.argv[1], sys.argv[2]
rng = random.Random(0)
answered = failed = 0
for attempt in range(30):
    cat = Catalog(db, library_root=root)
    started, finished = threading.Event(), threading.Event()

    def ask():
        global answered, failed
        started.set()
        for _ in range(3):
            try:
                answered += len(cat.query("fail", limit=None)) > 0  # an outcome word: the rows are read whole
                cat.count("menu")
            except CatalogError:
                failed += 1
        finished.set()

    worker = threading.Thread(target=ask)
    worker.start()
    started.wait()
    finished.wait(rng.random() * 0.3)  # close at a different moment of the worker's reads each time (or after)
    cat.close()
    worker.join()
    cat.close()  # what the worker opened after the first close
print("answered", answered, "failed", failed)
'''


def test_closing_a_catalog_while_another_thread_reads_it_never_crashes(tmp_path):
    """The app closes the library's catalog from the GUI thread while a worker may be reading the rows of a query
    (CI once died of a segmentation fault there): a connection in use is closed by its thread when its read ends,
    so the read finishes and nothing crashes."""
    import subprocess
    import sys

    root = tmp_path / "lib"
    for i in range(5):
        make_native(root, f"t{i}", instruction=f"open the menu {i}", success=False)
    db = tmp_path / "catalog.sqlite"
    with Catalog(db, library_root=root) as cat:
        cat.scan(root)
    conn = sqlite3.connect(db)
    cols = [c[1] for c in conn.execute("PRAGMA table_info(trajectories)")]
    copied = ", ".join("key || '-' || n.i" if c == "key" else c for c in cols)
    conn.execute("CREATE TEMP TABLE n(i)")
    conn.executemany("INSERT INTO n VALUES (?)", [(i,) for i in range(6000)])
    conn.execute(f"INSERT INTO trajectories ({', '.join(cols)}) SELECT {copied} FROM trajectories, n")
    conn.execute("UPDATE meta SET rows_version = rows_version + 1")
    conn.commit()
    conn.close()
    done = subprocess.run([sys.executable, "-c", _RACE, str(db), str(root)], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["answered", "90", "failed", "0"]  # every read finished, none was cut off
