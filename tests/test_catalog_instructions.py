"""Issue 28 (items 3 and 4), the core and the command line: runs told apart by their run folder, domain and agent in
the catalog; instructions given to the runs of a task that have none, stored in the catalog and used by scoring (the
library, ``rollscope score``, ``--instruction``); runs a batch does not score named, with the reason, in a log file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gui_app.core.errors import CatalogError
from gui_app.core.library.catalog import SCHEMA_VERSION, Catalog
from gui_app.core.scoring.batch import NO_INSTRUCTION, NOT_LOADED, score_many, summary, write_log
from gui_app.core.scoring.instructions import Instructions, StoredInstruction, scopes, task_key
from gui_app.core.trajectory.model import Trajectory
from tests.gui.library_fixtures import InstructionRecorder as FakeScorer, write_native


def library(root: Path) -> Path:
    """Three runs of one task by two agents in timed run folders (no instruction), one of another domain with its own
    instruction, and one that does not load."""
    for i, (agent, folder) in enumerate((("gpt-4o", "20250226@163734"), ("claude", "20250227@090000"),
                                         ("claude", "20250228@101500"))):
        write_native(root / f"exec{i}", id=f"exec_binary/{folder}", instruction="", agent=agent,
                     metadata={"domain": "exec_binary", "run_folder": folder})
    write_native(root / "other", id="other", instruction="Open the settings", agent="gpt-4o",
                 metadata={"domain": "chrome", "task": "chrome/abc", "run_folder": "abc"})
    (root / "broken").mkdir()
    (root / "broken" / "trajectory.json").write_text("{not json")
    return root


def test_scan_records_run_folder_domain_and_agent_sortable_and_searchable(tmp_path):
    root = library(tmp_path / "lib")
    with Catalog.for_root(root) as cat:
        cat.scan(root)
        rows = {r.id: r for r in cat.query(order_by="key") if not r.error}
        run = rows["exec_binary/20250226@163734"]
        assert (run.run_folder, run.domain, run.agent) == ("20250226@163734", "exec_binary", "gpt-4o")
        # No task id: the task column shows the domain (never the run's folder, a timestamp).
        assert run.task == "exec_binary" and rows["other"].task == "chrome/abc"
        assert [r.agent for r in cat.query(order_by="agent") if not r.error] == ["claude", "claude", "gpt-4o",
                                                                                 "gpt-4o"]
        assert [r.run_folder for r in cat.query(order_by="run_folder", descending=True)][:2] == [
            "abc", "20250228@101500"]
        assert [r.domain for r in cat.query(order_by="domain") if r.domain] == ["chrome", *["exec_binary"] * 3]
        assert {r.id for r in cat.query("claude")} == {"exec_binary/20250227@090000", "exec_binary/20250228@101500"}
        assert [r.id for r in cat.query("20250228@101500")] == ["exec_binary/20250228@101500"]
        assert {r.id for r in cat.query("exec_binary gpt-4o")} == {"exec_binary/20250226@163734"}
        assert cat.info(run.key)["task_key"] == "domain:exec_binary"


def test_an_older_catalog_reads_every_unit_again_to_fill_the_new_columns(tmp_path):
    """A catalog at version 10 knows each unit's size and time: without migration 11 the rescan would skip them all
    and the new columns would stay empty."""
    from gui_app.core.trajectory.formats import signature
    from tests.catalog_db import old_catalog

    root = library(tmp_path / "lib")
    db = root / ".rollscope" / "catalog.sqlite"
    db.parent.mkdir()
    conn = old_catalog(db, 10)
    unit = str(root / "exec0")
    size, mtime, n = signature(unit)
    conn.execute("INSERT INTO files VALUES (?, 'native', ?, ?, ?, 0)", (unit, size, mtime, n))
    conn.execute("INSERT INTO trajectories (key, id, path, format, instruction, task, scanned_at, ref) "
                 "VALUES (?, 'exec_binary/20250226@163734', ?, 'native', '', NULL, 0, 'exec0')", (unit, unit))
    conn.close()
    with Catalog(db) as cat:
        assert cat.schema_version == SCHEMA_VERSION >= 12
        report = cat.scan(root)
        assert report.skipped == 0
        row = cat.get(unit)
        assert (row.domain, row.agent, row.run_folder, row.task) == ("exec_binary", "gpt-4o", "20250226@163734",
                                                                     "exec_binary")


def test_scopes_of_a_run_the_task_id_first_else_the_domain():
    timed = Trajectory(id="x", metadata={"domain": "exec_binary", "task": "exec_binary"}, key="a/b")
    assert [s.key for s in scopes(timed)] == ["domain:exec_binary", "run:a/b"]
    example = Trajectory(id="x", metadata={"domain": "chrome", "task": "chrome/abc"}, key="c")
    assert [s.key for s in scopes(example)] == ["task:chrome/abc", "domain:chrome", "run:c"]
    assert task_key(Trajectory(id="x", key="k")) == "run:k" and task_key(Trajectory(id="x")) is None
    given = Instructions({"domain:chrome": StoredInstruction("domain:chrome", "wide"),
                          "task:chrome/abc": StoredInstruction("task:chrome/abc", "narrow")})
    assert given.for_run(example).instruction == "narrow"  # the most specific
    assert Instructions(given.stored, "typed").for_run(example).source == "command line"


def test_instructions_are_stored_by_scope_kept_by_a_rescan_and_refused_when_empty(tmp_path):
    root = library(tmp_path / "lib")
    with Catalog.for_root(root) as cat:
        cat.scan(root)
        stored = cat.set_instruction("domain:exec_binary", "  Run the binary  ")
        assert (stored.instruction, stored.source, stored.source_text) == ("Run the binary", "user", "set by you")
        cat.scan(root, force=True)
        assert cat.stored_instructions().stored["domain:exec_binary"].instruction == "Run the binary"
        with pytest.raises(CatalogError, match="empty instruction"):
            cat.set_instruction("domain:exec_binary", "   ")
        with pytest.raises(CatalogError, match="names no runs"):
            cat.set_instruction("exec_binary", "text")
        cat.clear_instruction("domain:exec_binary")
        assert cat.stored_instructions().stored == {}
        assert len(cat.runs_without_instruction()) == 3


def test_scoring_uses_the_instruction_given_to_the_task_and_logs_every_run_it_skips(tmp_path):
    root = library(tmp_path / "lib")
    model = FakeScorer()
    with Catalog.for_root(root) as cat:
        cat.scan(root)
        keys = [r.key for r in cat.query(order_by="key")]
        before = score_many(keys, model, catalog=cat, instructions=cat.stored_instructions())
        assert [o.reason for o in before if o.result is None] == [NOT_LOADED, NO_INSTRUCTION, NO_INSTRUCTION,
                                                                  NO_INSTRUCTION]
        assert summary(before) == "3 with no instruction, 1 that do not load"
        assert "Set instruction" in before[1].error  # how to give one, never a silent drop
        log = write_log(before, root / ".rollscope" / "logs")
        lines = log.read_text().splitlines()
        assert lines[0].startswith("# Rollscope scoring") and "1 of 5 scored" in lines[0]
        assert {line.split("\t")[:2][0] for line in lines[2:]} == {k for k in keys if not k.endswith("other")}
        assert all(line.split("\t")[1] in (NO_INSTRUCTION, NOT_LOADED) for line in lines[2:])

        cat.set_instruction("domain:exec_binary", "Run the binary")
        after = score_many(keys, model, catalog=cat, instructions=cat.stored_instructions())
        assert [o.reason for o in after if o.result is None] == [NOT_LOADED]
        assert model.judged[str(root / "exec2")] == "Run the binary"
        assert model.judged[str(root / "other")] == "Open the settings"  # its own instruction wins
        assert cat.latest_score(str(root / "exec1")).p_success == 0.75
        assert write_log([o for o in after if o.result is not None], tmp_path) is None  # nothing to name


def test_task_configs_in_a_folder_give_the_runs_of_their_tasks_an_instruction(tmp_path):
    from gui_app.core.library.instructions import instructions_from_task_configs
    from tests.formats import builders as b

    tasks = b.REAL / "osworld" / "evaluation_examples" / "examples"
    root = tmp_path / "results"
    for model in ("gpt-4o", "claude"):
        b.osworld_dir(root, video=None, sidecar=None, domain="chrome", model=model)
    with Catalog.for_root(root) as cat:
        cat.scan(root)
        assert len(cat.runs_without_instruction()) == 2
        report = instructions_from_task_configs(cat, tasks, root)
        assert report.runs == 2 and report.missing == [] and report.errors == []
        (key,) = report.tasks  # read once: the second run's task had it by then
        given = cat.stored_instructions().stored[key]
        assert key == "task:chrome/bb5e4c0d-f964-439c-97b6-bdb9747de3f4" and given.source == "task_config"
        assert given.instruction.startswith("Can you make Bing") and given.origin.endswith(".json")
        with pytest.raises(CatalogError, match="not a folder"):
            instructions_from_task_configs(cat, tmp_path / "nowhere")


def test_rollscope_score_uses_the_stored_instruction_then_the_option_and_names_its_log(tmp_path, monkeypatch,
                                                                                       capsys):
    from gui_app import cli
    from models import runtime

    model = FakeScorer()
    monkeypatch.setattr(runtime.RewardModel, "load", staticmethod(lambda *a, **k: model))
    root = library(tmp_path / "lib")
    with Catalog.for_root(root) as cat:
        cat.scan(root)
    capsys.readouterr()
    assert cli.main(["score", str(root)]) == 1
    err = capsys.readouterr().err
    assert err.count("rollscope: error: ") == 4
    last = err.strip().splitlines()[-1]
    assert last.startswith("rollscope: 4 of 5 trajectories not scored (3 with no instruction, 1 that do not load); "
                           "each is named, with the reason, in ")
    log = Path(last.rsplit(" in ", 1)[1])
    assert log.parent == root / ".rollscope" / "logs" and len(log.read_text().splitlines()) == 2 + 4

    with Catalog.for_root(root) as cat:
        cat.set_instruction("domain:exec_binary", "Run the binary")
    assert cli.main(["score", str(root), "--json"]) == 1  # the broken run still does not load
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sum("p_success" in o for o in out) == 4 and model.judged[str(root / "exec0")] == "Run the binary"
    assert cli.main(["score", str(root / "exec1"), "--instruction", "Typed here"]) == 0
    assert model.judged[str(root / "exec1")] == "Typed here"


def test_a_catalog_with_instructions_still_refuses_a_foreign_key(tmp_path):
    with Catalog(tmp_path / "c.sqlite") as cat:
        with pytest.raises(CatalogError):
            cat.set_instruction("domain:", "text")
    conn = sqlite3.connect(tmp_path / "c.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM instruction_overrides").fetchone() == (0,)
    conn.close()
