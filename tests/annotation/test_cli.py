"""The labels / queue / agreement / export subcommands, run as the CLI runs them (parser + run)."""

from __future__ import annotations

import argparse
import importlib
import json

import polars as pl
import pytest

from gui_app.core.store.record import Annotation
from gui_app.core.store.backends import open_store

MINE = {"labels": "gui_app.commands.labels", "queue": "gui_app.commands.queue",
        "agreement": "gui_app.commands.agreement", "export": "gui_app.commands.export"}


def cli(argv: list[str]) -> int:
    """Build the subcommand parsers the way gui_app.cli does, for our commands only (other helpers' commands
    are imported by the full CLI and are not this test's business)."""
    from gui_app.cli import COMMANDS

    parser = argparse.ArgumentParser(prog="rollscope")
    sub = parser.add_subparsers(dest="command")
    for name, module in MINE.items():
        assert COMMANDS[name][0] == module
        p = sub.add_parser(name)
        mod = importlib.import_module(module)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    args = parser.parse_args(argv)
    return args._run(args)


@pytest.fixture
def lib(tmp_path):
    s = open_store(root=tmp_path)
    for who, verdicts in {"a": "SSFF", "b": "SFFF"}.items():
        for i, v in enumerate(verdicts):
            s.save(Annotation(f"t{i}", who, verdict="success" if v == "S" else "failure",
                              labels=["x:1"] if i % 2 else [], root_cause_step=None if v == "S" else i))
    s.close()
    return tmp_path


def test_cli_parsers_stay_light_and_agree_with_the_core():
    import subprocess
    import sys

    from gui_app.commands import export as export_cmd
    from gui_app.core.annotation import export as export_core

    assert export_cmd.FORMATS == export_core.FORMATS
    code = ("import sys, argparse, importlib\n"
            f"for m in {list(MINE.values())!r}:\n"
            "    importlib.import_module(m).add_arguments(argparse.ArgumentParser())\n"
            "print(','.join(m for m in ('polars', 'PySide6', 'torch') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == ""


def test_agreement_json(lib, capsys):
    assert cli(["agreement", "--root", str(lib), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    # a = S S F F, b = S F F F: p_o = 3/4; p_e = (2*1 + 2*3)/16 = 1/2; kappa = (3/4 - 1/2)/(1/2) = 0.5
    assert rep["verdict"]["cohen"][0]["kappa"] == pytest.approx(0.5)
    assert "x:1" in rep["labels"]
    assert cli(["agreement", "--root", str(lib)]) == 0
    assert "cohen a vs b: 0.500" in capsys.readouterr().out


def test_export_then_import_round_trip(lib, tmp_path, capsys):
    out = tmp_path / "out.parquet"
    assert cli(["export", "--root", str(lib), "--out", str(out), "--annotator", "a", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 4
    assert pl.read_parquet(out).height == 4
    other = tmp_path / "other.sqlite"
    assert cli(["labels", "import", str(out), "--annotator", "c", "--store", str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 4
    s = open_store(other)
    assert [a.verdict for a in s.annotations(annotator="c")] == ["success", "success", "failure", "failure"]
    s.close()
    assert cli(["export", "--root", str(lib), "--out", str(tmp_path / "hf"), "--format", "hf", "--outcome",
                "failure"]) == 0
    assert "wrote 5 rows (train 5) as hf" in capsys.readouterr().out


def test_labels_override_adjudicate_audit(lib, capsys):
    root = str(lib)
    assert cli(["labels", "override", "t1", "--by", "dana", "--failure", "--reason", "wrong city", "--root",
                root]) == 0
    assert cli(["labels", "adjudicate", "t1", "--by", "dana", "--from", "b", "--root", root]) == 0
    capsys.readouterr()
    assert cli(["labels", "show", "t1", "--root", root, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["final"]["verdict"] == "failure" and shown["overrides"][0]["reason"] == "wrong city"
    assert shown["differing"] == ["verdict", "root_cause_step"]
    assert cli(["labels", "audit", "t1", "--root", root, "--json"]) == 0
    assert any(e["actor"] == "dana" for e in json.loads(capsys.readouterr().out))
    assert cli(["labels", "final", "--root", root, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["t1"]["source"] == "adjudicated"


def test_missing_store_is_a_domain_error(tmp_path):
    from gui_app.core.store.interface import StoreError

    with pytest.raises(StoreError, match="no annotation store"):
        cli(["agreement", "--root", str(tmp_path)])


def test_queue_build_from_a_real_catalog(tmp_path, capsys):
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.trajectory.formats.native import save
    from gui_app.core.trajectory.model import Outcome, Step, Trajectory

    lib = tmp_path / "lib"
    for i in range(4):
        t = Trajectory(id=f"run{i}", instruction=f"task {i}", source_format="native", source_path="",
                       steps=[Step(index=0, action="click(1, 2)")], outcome=Outcome(success=i % 2 == 0,
                                                                                     source="env"))
        save(t, lib / f"run{i}")
    Catalog.for_root(lib).scan(lib)
    assert cli(["queue", "build", "q1", "--annotators", "a,b,c", "--k", "2", "--root", str(lib), "--json"]) == 0
    prog = json.loads(capsys.readouterr().out)
    assert prog["items"] == 4 and prog["assignments"] == 8
    assert cli(["queue", "next", "q1", "--annotator", "a", "--root", str(lib), "--json"]) == 0
    nxt = json.loads(capsys.readouterr().out)
    assert nxt["trajectory_id"] in {"run1", "run3"}  # failures first
    assert cli(["queue", "status", "q1", "--root", str(lib)]) == 0
    assert "0/4 items fully labelled" in capsys.readouterr().out


def test_taxonomy_listing_and_checking(tmp_path, capsys):
    assert cli(["labels", "taxonomy", "--json"]) == 0
    assert "mast" in json.loads(capsys.readouterr().out)
    assert cli(["labels", "taxonomy", "mast"]) == 0
    assert "[11] mast:1.1  Disobey task specification" in capsys.readouterr().out
    bad = tmp_path / "t.yaml"
    bad.write_text("name: t\nversion: '1'\nlabels:\n  - {code: a}\n")
    from gui_app.core.annotation.taxonomy import TaxonomyError

    with pytest.raises(TaxonomyError, match=r"t.yaml:4: field 'labels\[0\].name'"):
        cli(["labels", "taxonomy", str(bad)])


def test_labels_migrate_to_postgresql_and_back_keeps_every_record(lib, tmp_path, pg_url, capsys):
    """SQLite -> PostgreSQL -> a new SQLite file: every record, audit entry, override, adjudication, queue and
    assignment arrives (the counts are checked by the command, the content here), and the server store then
    serves agreement, export and an open queue from the command line."""
    root = str(lib)
    assert cli(["labels", "override", "t1", "--by", "dana", "--failure", "--reason", "wrong city", "--root",
                root]) == 0
    assert cli(["labels", "adjudicate", "t1", "--by", "dana", "--from", "b", "--root", root]) == 0
    src = open_store(root=lib)
    src.save_queue("q", [(0, "t0", "/l/t0", "a"), (0, "t0", "/l/t0", "b"), (1, "t1", None, "a")], 2, {"order": []})
    src.close()
    capsys.readouterr()
    assert cli(["labels", "migrate", "--root", root, "--to", pg_url, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["to"] == pg_url and all(n["source"] == n["target"] for n in rep["counts"].values())
    c = {name: n["target"] for name, n in rep["counts"].items()}
    assert (c["records"], c["overrides"], c["adjudications"], c["queues"], c["queue assignments"]) == (9, 1, 1, 1, 3)
    assert c["audit entries"] > 9
    back = tmp_path / "back" / "labels.sqlite"
    assert cli(["labels", "migrate", "--from", pg_url, "--to", str(back)]) == 0
    assert "every count matches" in capsys.readouterr().out
    a, b, pg = open_store(root=lib), open_store(back), open_store(pg_url)
    for s in (b, pg):
        assert s.annotations() == a.annotations()
        assert s.audit() == a.audit() and s.overrides() == a.overrides()
        assert s.queues() == a.queues() and s.queue_assignments("q") == a.queue_assignments("q")
    pg.set_field("t9", "a", "verdict", "success")  # new ids follow the copied ones
    assert pg.audit()[-1].id == a.audit()[-1].id + 1
    for s in (a, b, pg):
        s.close()
    # a target that already holds labels is refused, and nothing is copied into it
    from gui_app.core.store.interface import StoreError

    with pytest.raises(StoreError, match="not empty"):
        cli(["labels", "migrate", "--root", root, "--to", pg_url])
    # agreement and export read the server store as they read the file
    assert cli(["agreement", "--store", pg_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"]["cohen"][0]["kappa"] == pytest.approx(0.5)
    out = tmp_path / "from_pg.parquet"
    assert cli(["export", "--store", pg_url, "--out", str(out), "--annotator", "a", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 5 and pl.read_parquet(out).height == 5  # with t9
    # a command that only reads, with a catalog to name trajectories by: the server store is read as it is
    from gui_app.core.library.catalog import Catalog

    Catalog(tmp_path / "catalog.sqlite").close()
    assert cli(["labels", "list", "--store", pg_url, "--catalog", str(tmp_path / "catalog.sqlite"),
                "--annotator", "a", "--json"]) == 0
    assert {r["trajectory_id"] for r in json.loads(capsys.readouterr().out)} >= {"t0", "t1", "t2", "t3"}


def test_an_open_queue_is_claimed_from_the_command_line(tmp_path, pg_url, capsys):
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.trajectory.formats.native import save
    from gui_app.core.trajectory.model import Outcome, Step, Trajectory

    lib = tmp_path / "lib"
    for i in range(3):
        t = Trajectory(id=f"run{i}", instruction=f"task {i}", source_format="native", source_path="",
                       steps=[Step(index=0, action="click(1, 2)")], outcome=Outcome(success=False, source="env"))
        save(t, lib / f"run{i}")
    Catalog.for_root(lib).scan(lib)
    assert cli(["queue", "build", "team", "--k", "2", "--order", "id", "--root", str(lib), "--store", pg_url]) == 0
    assert "3 items open to claims, 2 annotators each" in capsys.readouterr().out
    got = {}
    for who in ("a", "b", "c"):
        assert cli(["queue", "next", "team", "--annotator", who, "--store", pg_url, "--json"]) == 0
        got[who] = json.loads(capsys.readouterr().out)["trajectory_id"]
    assert got == {"a": "run0", "b": "run0", "c": "run1"}  # run0's two slots went to a and b
    assert cli(["queue", "next", "team", "--annotator", "a", "--store", pg_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trajectory_id"] == "run0"  # still a's until labelled
