"""The harm verdict (``Score.safety``) through the catalog: stored whole and read back equal from a real SQLite file,
an old catalog migrating to it (migration 14), the library's harm column, filter and sort over the cached rows, and
``rollscope score``'s harm line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gui_app.core.errors import CatalogError
from gui_app.core.library.catalog import SCHEMA_VERSION, Catalog, CatalogRow
from gui_app.core.scoring.batch import ScoreOutcome
from gui_app.core.scoring.score import HarmEvidence, Safety, Score
from tests.catalog_db import old_catalog
from tests.gui.library_fixtures import make_library

HARMFUL = Safety(p_harm=0.87, harmful=True, first_harmful_step=13, category="prompt_injection",
                 types=["data_exposure", "unrequested_instructions"],
                 evidence=[HarmEvidence(13, "typed the password given in the instruction into a page", "secret_typed"),
                           HarmEvidence(15, "pressed Enter on the look-alike login form", "")],
                 threshold=0.5, step_scores=[0.01 * i for i in range(16)])
SAFE = Safety(p_harm=0.12, harmful=False, threshold=0.5, step_scores=[0.0, 0.1, 0.12])
UNKNOWN = Safety(p_harm=0.4, harmful=None, threshold=0.5, unknown=True)


def scored(safety: Safety | None, p: float = 0.3) -> Score:
    return Score(p_success=p, threshold=0.5, success=p >= 0.5, step_scores=[0.2, 0.8], model="judge-v1",
                 safety=safety)


def test_a_safety_verdict_round_trips_whole_through_a_catalog_file(tmp_path: Path):
    db = tmp_path / "catalog.sqlite"
    with Catalog(db) as cat:
        cat.set_score("/lib/a", scored(HARMFUL))
        cat.set_score("/lib/b", scored(None))  # a judge that gives no harm verdict
        cat.set_score("/lib/c", scored(UNKNOWN))
    with Catalog(db) as cat:  # read back by another connection, from the file
        a, b, c = (cat.latest_score(k) for k in ("/lib/a", "/lib/b", "/lib/c"))
        assert a is not None and a.safety == HARMFUL
        assert a.safety.evidence_lines() == ["step 14: typed the password given in the instruction into a page",
                                             "step 16: pressed Enter on the look-alike login form"]
        assert a.to_json()["safety"] == HARMFUL.to_json()
        assert b is not None and b.safety is None and b.p_success == 0.3
        assert c is not None and c.safety == UNKNOWN and c.safety.verdict_text == "unknown"
        # A later score replaces the verdict, harm included: the latest is what every reader gets.
        cat.set_score("/lib/a", scored(SAFE, p=0.9))
        assert cat.latest_score("/lib/a").safety == SAFE
        cat.set_score("/lib/a", scored(None, p=0.9))
        assert cat.latest_score("/lib/a").safety is None
    conn = sqlite3.connect(db)
    cols = conn.execute("SELECT p_harm, harmful, harm_unknown, first_harmful_step, harm_category FROM scores "
                        "ORDER BY id").fetchall()
    conn.close()
    # the columns queries read, written from the same Safety as the JSON
    assert cols == [(0.87, 1, 0, 13, "prompt_injection"), (None,) * 5, (0.4, None, 1, None, None),
                    (0.12, 0, 0, None, None), (None,) * 5]


def test_a_version_13_catalog_migrates_and_its_scores_have_no_harm_verdict(tmp_path: Path):
    db = tmp_path / "v13.sqlite"
    conn = old_catalog(db, 13)
    conn.execute("INSERT INTO meta (rows_version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM meta)")
    conn.execute("INSERT INTO trajectories (key, id, path, instruction, success, scanned_at, ref) "
                 "VALUES ('/lib/a', 'a', '/lib/a', 'Log in', 0, 0, '/lib/a'), "
                 "('/lib/b', 'b', '/lib/b', 'Unscored', 1, 0, '/lib/b')")
    conn.execute("INSERT INTO scores (key, model, p_success, first_error_step, step_scores, scored_at, threshold, "
                 "success, unknown, evidence, text_reads) "
                 "VALUES ('/lib/a', 'v3', 0.2, 1, '[0.1, 0.9]', 1.0, 0.5, 0, 0, '[\"video\"]', 3)")
    conn.close()
    with Catalog(db) as cat:
        assert cat.schema_version == SCHEMA_VERSION >= 14
        old = cat.latest_score("/lib/a")
        assert (old.p_success, old.evidence, old.text_reads, old.safety) == (0.2, ["video"], 3, None)
        a, b = cat.query(order_by="key")
        assert (a.p_success, a.p_harm, a.model_harmful, a.harm_unknown) == (0.2, None, None, None)
        assert (b.p_success, b.p_harm, b.harm_unknown) == (None, None, None)
        assert cat.count(filters={"harmful": "none"}) == 2
        cat.set_score("/lib/a", scored(HARMFUL))
        assert cat.latest_score("/lib/a").safety == HARMFUL
        assert cat.get("/lib/a")[-3:] == (0.87, True, False)
    conn = sqlite3.connect(db)
    index = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'scores_key'").fetchone()[0]
    conn.close()
    assert "p_harm" in index and "harm_unknown" in index  # the library's join still reads the index alone


@pytest.fixture
def library(tmp_path: Path) -> tuple[Catalog, Path]:
    root = make_library(tmp_path / "lib", 8)
    cat = Catalog.for_root(root)
    cat.scan(root)
    verdicts = {1: HARMFUL, 2: SAFE, 3: UNKNOWN, 4: None,
                5: Safety(p_harm=0.35, harmful=False, threshold=0.5), 6: Safety(p_harm=0.95, harmful=True)}
    for i, safety in verdicts.items():
        cat.set_score(str(root / f"t{i:05d}"), scored(safety))
    yield cat, root
    cat.close()


def ids(rows: list[CatalogRow]) -> list[str]:
    return [r.id.removeprefix("traj-0000") for r in rows]


def test_the_library_rows_carry_the_harm_verdict_and_filter_and_sort_by_it(library):
    cat, root = library
    rows = {r.id[-1]: r for r in cat.query(order_by="key")}
    assert (rows["1"].p_harm, rows["1"].model_harmful, rows["1"].harm_unknown) == (0.87, True, False)
    assert (rows["2"].p_harm, rows["2"].model_harmful, rows["2"].harm_unknown) == (0.12, False, False)
    assert (rows["3"].p_harm, rows["3"].model_harmful, rows["3"].harm_unknown) == (0.4, None, True)
    for unjudged in ("0", "4", "7"):  # never scored, or scored without a harm verdict
        assert (rows[unjudged].p_harm, rows[unjudged].model_harmful, rows[unjudged].harm_unknown) == (None,) * 3
    assert ids(cat.query(filters={"harmful": True}, order_by="key")) == ["1", "6"]
    assert ids(cat.query(filters={"harmful": False}, order_by="key")) == ["2", "5"]
    assert ids(cat.query(filters={"harmful": "unknown"}, order_by="key")) == ["3"]
    assert ids(cat.query(filters={"harmful": "none"}, order_by="key")) == ["0", "4", "7"]
    assert cat.count(filters={"harmful": True}) == 2
    assert ids(cat.query(filters={"min_p_harm": 0.3}, order_by="key")) == ["1", "3", "5", "6"]
    assert ids(cat.query("thing", {"harmful": True, "scored": True}, order_by="key")) == ["1", "6"]
    # The harm column sorts by p_harm; runs without one last, in both directions.
    assert ids(cat.query(order_by="p_harm", descending=True)) == ["6", "1", "3", "5", "2", "0", "4", "7"]
    assert ids(cat.query(order_by="p_harm")) == ["2", "5", "3", "1", "6", "0", "4", "7"]
    with pytest.raises(CatalogError, match="harm filter"):
        cat.query(filters={"harmful": "maybe"})


def test_a_new_score_patches_the_cached_rows_harm_fields(library):
    cat, root = library
    assert ids(cat.query(filters={"harmful": True}, order_by="key")) == ["1", "6"]  # the rows are cached now
    cat.set_score(str(root / "t00001"), scored(SAFE))  # only the scores moved: the cached rows are patched
    cat.set_score(str(root / "t00007"), scored(HARMFUL))
    cat.set_score(str(root / "t00006"), scored(None))
    assert ids(cat.query(filters={"harmful": True}, order_by="key")) == ["7"]
    row = cat.get(str(root / "t00006"))
    assert (row.p_harm, row.model_harmful, row.harm_unknown) == (None, None, None)
    assert [r[-3:] for r in cat.query(order_by="key")] == [r[-3:] for r in map(cat.get, cat.keys())]  # as fresh


def test_rollscope_score_prints_one_line_for_the_harm_verdict(capsys):
    from gui_app.commands.score import print_outcome

    print_outcome(ScoreOutcome("/lib/a", "a", scored(HARMFUL)), as_json=False)
    print_outcome(ScoreOutcome("/lib/b", "b", scored(None)), as_json=False)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("/lib/a: p_success=0.300 -> failure")
    assert out[1] == ("  harm: harmful (p(harm) 0.87, threshold 0.50; prompt injection; first harmful at step 14)")
    assert out[2].startswith("/lib/b: p_success=0.300") and len(out) == 3  # no harm verdict, no harm line
    print_outcome(ScoreOutcome("/lib/a", "a", scored(HARMFUL)), as_json=True)
    assert json.loads(capsys.readouterr().out)["safety"] == HARMFUL.to_json()
