"""A query asked before the catalog's rows are cached is answered in SQL (the text index of migration 16, filters as
WHERE clauses) and gives exactly what the cached rows give: the same rows, in the same order, and the same count, for
any search, filters, order and page; and the text index follows every scan, and an upgrade from version 15."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gui_app.core import db
from gui_app.core.library import catalog as catalog_module
from gui_app.core.library.catalog import Catalog, CatalogRow
from gui_app.core.scoring.score import Safety, Score
from gui_app.core.trajectory.formats import native
from gui_app.core.trajectory.model import Outcome, Step, Trajectory
from tests.test_catalog import make_broken

_N = 2_400
_VOCAB = ("open", "the", "menu", "click", "settings", "Éclair", "éCLAIR", "Straße", "STRASSE", "ÀÉÎ", "naïve", "tab",
          "ta", "Σίσυφος", "ΟΔΟΣ", "日本語", "save", "file", "fail-safe", "errorless", "unknownish", "success!",
          "\"q\"", "100%", "a_b", "x", "nul\x00byte", "C:\\Temp")
# Words searched: of 3 characters and more (the text index), of 1 and 2 (every row's text), beyond ASCII, those the
# outcome and verdict words could match (read from the cached rows), quotes and wildcards of FTS5 and LIKE (and its
# escape), a NUL and what follows one in a text.
_WORDS = ("open", "menu", "click", "settings", "éclair", "ÉCLAIR", "straße", "strasse", "àéî", "naïve", "ta", "ab",
          "x", "e", "σίσυφος", "οδος", "日本", "日本語", "save", "fail", "failure", "succ", "success", "error",
          "unknown", "own", "\"q\"", "100%", "a_b", "%", "_", "t00", "t01", "g1/", "chrome", "files", "nothing-matches",
          "ss", "sav", "menu\"", "byte", "l\x00b", "\\", "c:\\t", "_b", "\\%")
_TASKS = (None, "mail", "Mail", "files", "Éclair", "écoute", "zeta")
_FORMATS = ("native", ["native", "osworld"], "osworld", [])
_COLUMNS = CatalogRow._fields


def _instruction(rng: random.Random) -> str:
    return " ".join(rng.choice(_VOCAB) for _ in range(rng.randint(0, 6)))


def _write_native(root: Path, i: int, rng: random.Random) -> None:
    """A native trajectory written as ``native.save`` does, without its fsync (thousands of them)."""
    d = root / f"g{i % 7}" / f"t{i:04d}"
    pace = rng.choice((1.0, 2.5))
    steps = [Step(index=j, t_start=pace * j, t_end=pace * j + 0.5, action="pyautogui.click(x=1, y=1)",
                  action_type="click") for j in range(rng.randint(1, 4))]
    success = rng.choice((True, False, None))
    task = rng.choice(_TASKS)
    traj = Trajectory(id=f"t{i:04d}", instruction=_instruction(rng), steps=steps,
                      outcome=Outcome(success=success, score=None if success is None else float(success),
                                      source="env"),
                      app=rng.choice((None, "chrome", "Files")), metadata={"task": task} if task else {},
                      agent=rng.choice((None, "Agent-Ä", "bot", "Bot", "ägent")))
    d.mkdir(parents=True)
    (d / native.FILENAME).write_text(json.dumps(native.to_document(traj, d), ensure_ascii=False), encoding="utf-8")


def _score(cat: Catalog, rng: random.Random) -> None:
    for key in cat.keys():
        if rng.random() < 0.4:
            continue
        p = rng.choice((None, round(rng.random(), 2), 0.5))
        safety = rng.choice((None, Safety(p_harm=rng.random(), harmful=rng.choice((True, False, None)),
                                          unknown=rng.random() < 0.2, threshold=0.5)))
        cat.set_score(key, Score(p_success=p, threshold=rng.choice((None, 0.5)), unknown=rng.random() < 0.15,
                                 success=rng.choice((None, True, False)), model="m", safety=safety))


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """A scanned catalog of a few thousand runs (instructions beyond ASCII, load errors, half of them scored, some
    scored twice); returns its file."""
    base = tmp_path_factory.mktemp("cold")
    root = base / "lib"
    rng = random.Random(5)
    for i in range(_N):
        _write_native(root, i, rng)
    for i in range(12):
        make_broken(root / "broken", f"b{i}", '{"schema_version": 1, "steps": []}')
    path = base / "catalog.sqlite"
    with Catalog(path, library_root=root, background=False) as cat:
        cat.scan(root)
        _score(cat, rng)
        _score(cat, rng)
    return path


def _random_query(rng: random.Random, refs: list[str]) -> tuple[str, dict[str, Any], str, bool]:
    text = " ".join(rng.sample(_WORDS, rng.choice((0, 1, 1, 1, 2, 2, 3))))
    if rng.random() < 0.2:
        text = text.upper() if rng.random() < 0.5 else f"  {text}\t"
    filters: dict[str, Any] = {}
    for name, values in (("format", _FORMATS), ("success", (True, False, None, "unknown")),
                         ("has_error", (True, False)), ("task", _TASKS[1:]), ("min_p_success", (0.2, 0.5)),
                         ("max_p_success", (0.5, 0.6)), ("scored", (True, False)),
                         ("harmful", (True, False, "unknown", "none")), ("min_p_harm", (0.3, 0.8))):
        if rng.random() < 0.15:
            filters[name] = rng.choice(values)
    if text.split() and rng.random() < 0.15:
        word = text.lower().split()[0]
        filters["label_refs"] = {word: rng.sample(refs, 3)} if rng.random() < 0.5 else {"other": refs[:2]}
    return text, filters, rng.choice(_COLUMNS), rng.random() < 0.5


def _answers(cat: Catalog, text: str, filters: dict[str, Any], order_by: str, descending: bool,
             offset: int) -> tuple[int, list[CatalogRow], list[CatalogRow]]:
    """What the library asks (the count, then a page), and the whole result."""
    return (cat.count(text, filters), cat.query(text, filters, order_by, descending, limit=50, offset=offset),
            cat.query(text, filters, order_by, descending))


def _check_queries(path: Path, n: int, seed: int) -> int:
    """``n`` random queries asked of a catalog just opened and of one whose rows are cached give the same answers;
    returns how many the first answered without reading its rows."""
    rng = random.Random(seed)
    with Catalog(path, background=False) as warm:
        warm.warm()
        refs = [r.ref for r in warm.query()]
        cold_served = 0
        for _ in range(n):
            text, filters, order_by, descending = _random_query(rng, refs)
            offset = rng.choice((0, 0, 7, 300))
            want = _answers(warm, text, filters, order_by, descending, offset)
            with Catalog(path, background=False) as cold:
                got = _answers(cold, text, filters, order_by, descending, offset)
                cold_served += cold._cache is None
            assert got[0] == want[0], (text, filters)
            assert [r.key for r in got[1]] == [r.key for r in want[1]], (text, filters, order_by, descending, offset)
            assert got[1] == want[1] and got[2] == want[2], (text, filters, order_by, descending)
    return cold_served


def test_a_catalog_just_opened_answers_in_sql_what_its_cached_rows_answer(library):
    served = _check_queries(library, 300, seed=1)
    assert served > 150  # most queries never read the rows (words of outcomes, labels and odd cases do)


@pytest.mark.parametrize("walk_more", [0, 10**9])
def test_a_page_walked_in_its_columns_order_or_sorted_is_the_same(library, monkeypatch, walk_more):
    """A page of a selection is read by walking its column's index (instruction, duration, steps) or by sorting the
    rows the selection finds, whichever looks at fewer rows (Catalog._walks); either way the same rows."""
    monkeypatch.setattr(catalog_module, "_WALK_MORE", walk_more)  # 0: never walked; 10**9: walked where it can be
    assert _check_queries(library, 120, seed=6) > 60


def test_without_a_text_index_sql_still_answers_the_same(library, tmp_path):
    """Where SQLite has no trigram tokenizer the catalog reaches version 16 without the text index and searches
    every row's text in SQL."""
    plain = tmp_path / "plain.sqlite"
    conn = sqlite3.connect(plain, isolation_level=None)
    db.migrate(conn, catalog_module._catalog_migrations(trigram=False))
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'trajectories_search'").fetchone() == (0,)
    conn.execute("ATTACH DATABASE ? AS src", (str(library),))
    for table in ("files", "trajectories", "scores"):
        conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table}")
    conn.execute("DETACH DATABASE src")
    conn.close()
    with Catalog(plain, background=False) as cat:
        assert cat.schema_version == catalog_module.SCHEMA_VERSION
        assert cat.count("click") > 0 and cat._cache is None and cat._has_index is False
    assert _check_queries(plain, 80, seed=2) > 40


def test_the_rows_are_read_in_the_background_after_a_query_answered_in_sql(library):
    with Catalog(library) as cat:
        page = cat.query("click", limit=20)
        assert cat._warmer is not None
        cat._warmer.join(timeout=60)
        assert cat._cache is not None  # read by the background thread
        assert cat.query("click", limit=20) == page
        assert cat.count("ta") == len(cat.query("ta"))
    with Catalog(library) as cat:  # closing stops the reader
        cat.count("menu")
    assert cat._warmer is None


def test_the_text_index_follows_scans(tmp_path):
    root = tmp_path / "lib"
    rng = random.Random(3)
    for i in range(40):
        _write_native(root, i, rng)
    path = tmp_path / "catalog.sqlite"
    with Catalog(path, library_root=root, background=False) as cat:
        cat.scan(root)
    doc_path = root / "g1" / "t0001" / native.FILENAME
    doc = json.loads(doc_path.read_text(encoding="utf-8"))
    doc["instruction"] = "Zanzibar quokka"
    doc_path.write_text(json.dumps(doc), encoding="utf-8")
    for gone in (root / "g2" / "t0002" / native.FILENAME, root / "g3" / "t0003" / native.FILENAME):
        gone.unlink()
    with Catalog(path, library_root=root, background=False) as cat:
        cat.scan(root)
        assert [r.id for r in cat.query("quokka")] == ["t0001"] and cat._cache is None
        assert cat.count("t0002") == 0 and cat.count("t0003") == 0 and cat.count("t0004") == 1
        conn = sqlite3.connect(path)
        conn.execute("INSERT INTO trajectories_search(trajectories_search) VALUES ('integrity-check')")
        conn.close()
        cat.scan(root, force=True)  # every row written again
        assert [r.id for r in cat.query("quokka")] == ["t0001"]
    assert _check_queries(path, 60, seed=4) > 20


def test_a_version_15_catalog_is_upgraded_with_its_rows(library, tmp_path):
    old = tmp_path / "v15.sqlite"
    conn = sqlite3.connect(old, isolation_level=None)
    db.migrate(conn, catalog_module.MIGRATIONS[:15])
    assert db.schema_version(conn) == 15
    conn.execute("ATTACH DATABASE ? AS src", (str(library),))
    for table in ("files", "trajectories", "scores", "folders"):
        conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table}")
    conn.execute("UPDATE meta SET rows_version = 7")
    conn.execute("DETACH DATABASE src")
    conn.close()
    with Catalog(library, background=False) as src:
        want = src.query()
        want_click = src.query("click", {"scored": True}, "p_success", True)
    with Catalog(old, background=False) as cat:
        assert cat.schema_version == catalog_module.SCHEMA_VERSION == 17
        assert cat.query() == want
    with Catalog(old, background=False) as cat:  # just opened: answered through the text index
        assert cat.query("click", {"scored": True}, "p_success", True) == want_click and cat._cache is None
    conn = sqlite3.connect(old)
    indexed = conn.execute("SELECT COUNT(*) FROM trajectories_search WHERE trajectories_search MATCH '\"click\"'")
    assert indexed.fetchone()[0] == conn.execute(
        "SELECT COUNT(*) FROM trajectories WHERE instr(search, 'click') > 0").fetchone()[0] > 0
    conn.close()


def test_a_version_16_catalog_is_upgraded_with_its_rows(library, tmp_path):
    """Migration 17: the indexes that spare the first queries every row are filled from the rows, and a NUL in a
    search text (where the text index stopped reading it) is a space, so the text index finds the words after it."""
    old = tmp_path / "v16.sqlite"
    conn = sqlite3.connect(old, isolation_level=None)
    db.migrate(conn, catalog_module.MIGRATIONS[:16])
    conn.execute("ATTACH DATABASE ? AS src", (str(library),))
    for table in ("files", "trajectories", "scores", "folders"):
        conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table}")
    conn.execute("DETACH DATABASE src")
    conn.execute("UPDATE trajectories SET search = search || char(0) || ' quokka' || char(0) || char(0) || 'é' "
                 "WHERE rowid = 1")
    assert conn.execute("SELECT COUNT(*) FROM trajectories_search WHERE trajectories_search MATCH 'quokka'"
                        ).fetchone() == (0,)
    key, search = conn.execute("SELECT key, search FROM trajectories WHERE rowid = 1").fetchone()
    version = conn.execute("SELECT rows_version FROM meta").fetchone()[0]
    conn.close()
    with Catalog(old, background=False) as cat:
        assert cat.schema_version == catalog_module.SCHEMA_VERSION == 17
        assert [r.key for r in cat.query("quokka")] == [key] and cat._cache is None
    conn = sqlite3.connect(old)
    assert conn.execute("SELECT search FROM trajectories WHERE rowid = 1").fetchone() == (search.replace("\x00", " "),)
    assert conn.execute("SELECT rows_version FROM meta").fetchone()[0] == version + 1
    assert conn.execute("SELECT COUNT(*) FROM trajectories WHERE instr(search, char(0)) > 0").fetchone() == (0,)
    assert [c for (_, _, c) in conn.execute("PRAGMA index_info(trajectories_success)")] == ["success", "ref", "search"]
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.execute("INSERT INTO trajectories_search(trajectories_search) VALUES ('integrity-check')")
    conn.close()
    assert _check_queries(old, 60, seed=7) > 30


def _random_words(rng: random.Random, texts: list[str], n: int) -> list[str]:
    """Search words: pieces of the rows' texts (rare ones, as a run id, and common ones), of 1 to 12 characters,
    and made-up ones of characters beyond ASCII, of FTS5's syntax and of LIKE's."""
    odd = "\"'*^():-+.,;/\\%_ÀéßΣ日本\x00\x7f{}[]|NEARORAND"
    words: list[str] = list(_WORDS)
    while len(words) < n:
        kind = rng.random()
        if kind < 0.6:
            text = rng.choice(texts)
            at = rng.randrange(max(1, len(text)))
            word = text[at:at + rng.randint(1, 12)]
        elif kind < 0.8:
            word = "".join(rng.choice(odd) for _ in range(rng.randint(1, 6)))
        else:
            word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randint(2, 5)))
        words += word.lower().split()
    return words


def test_a_new_word_found_through_the_text_index_keeps_the_rows_every_rows_text_keeps(library, monkeypatch):
    """With the rows cached, a new word of three characters or more is looked for in the rows the text index names
    (few enough); the rows it keeps are exactly those a search of every row's text keeps."""
    from gui_app.core.library import rows as rows_module

    rng = random.Random(11)
    with Catalog(library, background=False) as cat:
        cat.warm()
        assert cat._cache is not None
        rowset = cat._cache[1]
        words = _random_words(rng, rowset._texts()[0].decode().split("\n"), 1_500)
        conn = cat._conn()
        conn.execute("BEGIN")
        try:
            indexed = 0
            for word in words:
                got = rowset._matches(word, None)
                indexed += rowset._indexed(word) is not None
                with monkeypatch.context() as m:
                    m.setattr(rowset, "_candidates", None)
                    want = rowset._matches(word, None)
                assert np.array_equal(got, want), word
            assert indexed > 300
            # A word of more rows than are worth searching one by one, a short one, one beyond ASCII: every row's.
            assert rowset._indexed("click") is not None and rowset._indexed("ta") is None
            assert rowset._indexed("éclair") is None
            with monkeypatch.context() as m:
                m.setattr(rows_module, "_INDEX_ROWS", 50)
                assert rowset._indexed("click") is None and rowset._indexed("t0012") is not None
        finally:
            conn.execute("COMMIT")
        # Through the catalog, searches of several words, any case, with filters, as the library asks.
        for _ in range(150):
            text = " ".join(rng.sample(words, rng.choice((1, 2, 3))))
            text = text.upper() if rng.random() < 0.3 else text
            filters = {"success": True} if rng.random() < 0.2 else None
            with Catalog(library, background=False) as plain:
                plain.warm()
                assert plain._cache is not None
                plain._cache[1]._candidates = None
                assert cat.query(text, filters) == plain.query(text, filters), text
                assert cat.count(text, filters) == plain.count(text, filters), text
