"""``rollscope scan``: the --json contract, the human summary and the exit codes, run in-process."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gui_app import cli
from gui_app.core.trajectory.formats import native
from gui_app.core.library.catalog import Catalog
from gui_app.core.trajectory.model import Outcome, Step, Trajectory

JSON_KEYS = {"trajectories", "by_format", "errors", "seconds", "unrecognised"}


def make_tree(root: Path, n: int = 4) -> Path:
    for i in range(n):
        traj = Trajectory(id=f"run-{i}", instruction=f"Task number {i}",
                          steps=[Step(index=j, t_start=float(j), action="pyautogui.press('enter')", action_type="key")
                                 for j in range(i + 1)],
                          outcome=Outcome(success=i % 2 == 0, source="env"))
        native.save(traj, root / f"group{i % 2}" / f"run-{i}")
    # A second format beside the native runs: one Who&When failure-attribution record (a file unit).
    record = {"question": "How many albums?", "ground_truth": "4", "mistake_agent": "Assistant", "mistake_step": "1",
              "mistake_reason": "Counted live albums.",
              "history": [{"content": "Search the discography.", "name": "Orchestrator"},
                          {"content": "Counting every release: 6.", "name": "Assistant"}]}
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "record_17.json").write_text(json.dumps(record), encoding="utf-8")
    bad = root / "broken" / "run-x"
    bad.mkdir(parents=True)
    (bad / native.FILENAME).write_text('{"schema_version": 1, "id": "run-x", "steps": [{"index": "zero"}]}')
    return root


def scan_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    code = cli.main(["scan", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    info = json.loads(out)
    assert JSON_KEYS <= set(info)
    assert isinstance(info["trajectories"], int) and isinstance(info["seconds"], float)
    assert all(set(e) == {"path", "error"} for e in info["errors"])
    assert set(info["unrecognised"]) == {"count", "examples"}
    assert len(info["unrecognised"]["examples"]) == min(5, info["unrecognised"]["count"])
    return info


def test_json_contract_lists_errors_and_exits_zero(tmp_path: Path, capsys):
    root = make_tree(tmp_path / "runs")
    info = scan_json(capsys, str(root))
    assert info["trajectories"] == 5
    assert info["by_format"] == {"native": 4, "whowhen": 1}
    assert len(info["errors"]) == 1
    err = info["errors"][0]
    assert err["path"] == str(root / "broken" / "run-x")
    assert "steps[0].index" in err["error"] and "trajectory.json" in err["error"]
    assert info["skipped"] == 0
    db = root / ".rollscope" / "catalog.sqlite"
    assert db.is_file() and len(Catalog(db)) == 6

    again = scan_json(capsys, str(root))
    assert again["skipped"] == 6 and again["trajectories"] == 5 and len(again["errors"]) == 1
    forced = scan_json(capsys, str(root), "--force")
    assert forced["skipped"] == 0


def test_catalog_option_and_human_summary(tmp_path: Path, capsys):
    root = make_tree(tmp_path / "runs")
    db = tmp_path / "lib" / "mine.sqlite"
    code = cli.main(["scan", str(root), "--catalog", str(db)])
    out, err = capsys.readouterr()
    assert code == 0
    assert "5 trajectories in 6 units (native 4, whowhen 1)" in out
    assert "1 unit(s) could not be read" in out and "run-x" in out
    assert db.is_file() and not (root / ".rollscope").exists()
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM trajectories").fetchone()[0]
    assert rows == 6


def test_missing_dir_exits_one_with_one_line(tmp_path: Path, capsys):
    code = cli.main(["scan", str(tmp_path / "nope"), "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rollscope: error:") and "nope" in lines[0]


@pytest.mark.parametrize("kind", ["garbage", "newer"])
def test_unusable_catalog_exits_one(tmp_path: Path, capsys, kind: str):
    root = make_tree(tmp_path / "runs", n=1)
    db = tmp_path / "c.sqlite"
    if kind == "garbage":
        db.write_bytes(b"not a database at all" * 64)
    else:
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA user_version = 999")
        conn.close()
    before = db.read_bytes()
    code = cli.main(["scan", str(root), "--catalog", str(db), "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(db) in err
    assert db.read_bytes() == before  # an unusable catalog is left as it was


def test_unrecognised_files_and_folders_are_counted_not_dropped(tmp_path: Path, capsys):
    """A real OSWorld tree holds files beside the runs (args.json, all_result.json), folders of logs and hidden
    result folders: none is a trajectory, and the scan says so instead of reporting a clean "errors": []."""
    root = make_tree(tmp_path / "runs")
    (root / "args.json").write_text('{"action_space": "pyautogui", "model": "gpt-4o"}')
    (root / "all_result.json").write_text('{"chrome": {"abc": 1.0}}')
    (root / "notes").mkdir()
    (root / "notes" / "todo.txt").write_text("look at run 3")
    (root / ".results" / "x").mkdir(parents=True)
    (root / ".results" / "x" / "traj.jsonl").write_text('{"Error": "boom"}\n')
    (root / "README.md").write_text("not data")  # not a data file: not counted
    tasks = root / "evaluation_examples" / "examples" / "os"  # task configs the runs are read with: not counted
    tasks.mkdir(parents=True)
    (tasks / "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57.json").write_text('{"instruction": "Turn on night light"}')
    info = scan_json(capsys, str(root))
    assert info["trajectories"] == 5
    assert info["unrecognised"]["count"] == 4
    ex = info["unrecognised"]["examples"]
    assert f"{root / 'args.json'} (no importer recognises this file)" in ex
    assert f"{root / 'all_result.json'} (no importer recognises this file)" in ex
    assert f"{root / 'notes'} (folder holds no trajectory)" in ex
    assert f"{root / '.results'} (hidden folder, not searched)" in ex
    capsys.readouterr()
    assert cli.main(["scan", str(root)]) == 0
    out = capsys.readouterr().out
    assert "4 file(s) or folder(s) not recognised as trajectories" in out and "args.json" in out
