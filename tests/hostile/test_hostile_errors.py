"""A bad file is one short line naming it, never a traceback, and never the end of a scan: huge numbers, deep
nesting, 10 MB strings, a reader that closes the pipe, one poisoned run among good ones."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_helpers import REPO

from gui_app import cli
from gui_app.core.trajectory.formats import native
from gui_app.core.library.catalog import Catalog
from gui_app.core.errors import MAX_MESSAGE
from gui_app.core.trajectory.model import Step, Trajectory

SAMPLE = REPO / "resources" / "samples" / "miniwob" / "click-tab-success"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert len(lines[0]) <= MAX_MESSAGE + 40, len(lines[0])
    return lines[0]


def poisoned(tmp_path: Path, name: str, edit) -> Path:
    run = tmp_path / name
    shutil.copytree(SAMPLE, run)
    doc = (run / "trajectory.json").read_text()
    (run / "trajectory.json").write_text(edit(doc))
    return run


def test_a_5000_digit_integer_is_one_line_naming_the_file(tmp_path, capsys):
    run = poisoned(tmp_path, "digits", lambda d: d.replace('"score": 1.0', '"score": ' + "9" * 5000))
    code, out, err = run_cli(capsys, "inspect", str(run), "--json")
    assert code == 1 and out == ""
    line = one_line(err)
    assert str(run / "trajectory.json") in line and "4300 digits" in line


def test_json_nested_3000_deep_is_one_line_naming_the_file(tmp_path, capsys):
    run = poisoned(tmp_path, "deep", lambda d: d.replace('"metadata": {', '"metadata": {"x": ' + "[" * 3000
                                                         + "]" * 3000 + ', '))
    assert '"x": [[[' in (run / "trajectory.json").read_text()
    code, out, err = run_cli(capsys, "inspect", str(run))
    assert code == 1 and out == ""
    line = one_line(err)
    assert str(run / "trajectory.json") in line and "nested too deeply" in line


def test_a_10mb_string_in_a_wrong_typed_field_is_quoted_by_a_short_prefix(tmp_path, capsys):
    """The old error quoted the whole value: a 10 MB error line, a 100 MB catalog cell, 100 MB of scan --json."""
    big = "A" * 10_000_000
    run = poisoned(tmp_path / "lib", "long", lambda d: d.replace('"app": "miniwob"', f'"app": ["{big}"]')
                   .replace('"app": null', f'"app": ["{big}"]'))
    assert big in (run / "trajectory.json").read_text()
    code, out, err = run_cli(capsys, "inspect", str(run))
    assert code == 1
    one_line(err)
    code, out, err = run_cli(capsys, "scan", str(tmp_path / "lib"), "--json")
    assert code == 0 and len(out) < 5000
    info = json.loads(out)
    assert len(info["errors"]) == 1 and str(run) in info["errors"][0]["error"]
    cells = sqlite3.connect(tmp_path / "lib" / ".rollscope" / "catalog.sqlite").execute(
        "SELECT MAX(LENGTH(error)) FROM trajectories").fetchone()[0]
    assert cells <= MAX_MESSAGE


def test_a_huge_score_does_not_stop_the_scan(tmp_path, capsys):
    """A native outcome.score of 2**64 raised OverflowError while the catalog rows were written: 0 rows, and the
    good runs beside it were lost."""
    lib = tmp_path / "lib"
    for i in range(20):
        shutil.copytree(SAMPLE, lib / f"good{i:02d}")
    poisoned(lib, "bad", lambda d: d.replace('"score": 1.0', '"score": 18446744073709551616'))
    poisoned(lib, "worse", lambda d: d.replace('"score": 1.0', '"score": ' + "1" + "0" * 400))
    code, out, err = run_cli(capsys, "scan", str(lib), "--json")
    assert code == 0, err
    with Catalog.for_root(lib) as cat:
        rows = cat.query(limit=None)
    assert len(rows) == 22
    assert sum(r.error is None for r in rows) >= 20
    assert {r.score for r in rows if r.path.endswith("bad")} == {float(2**64)}


def test_a_bracket_bomb_beside_a_video_does_not_stop_the_scan(tmp_path, capsys):
    """A 3 KB .jsonl opening 3,000 brackets beside a video raised RecursionError while the folder was classified."""
    lib = tmp_path / "lib"
    shutil.copytree(SAMPLE, lib / "good")
    bomb = lib / "bomb"
    bomb.mkdir()
    shutil.copy(SAMPLE / "video.mp4", bomb / "video.mp4")
    (bomb / "steps.jsonl").write_text('{"t_start": ' + "[" * 3000 + "\n")
    code, out, err = run_cli(capsys, "scan", str(lib), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["by_format"].get("native") == 1


def test_an_unknown_format_name_is_one_line(capsys):
    code, out, err = run_cli(capsys, "inspect", str(SAMPLE), "--format", "nosuch")
    assert code == 1
    assert "no importer named 'nosuch'" in one_line(err)


def test_output_cut_short_by_the_reader_ends_quietly(tmp_path):
    """``rollscope inspect X --json | head`` ended in a BrokenPipeError traceback."""
    traj = Trajectory(id="long", instruction="many steps",
                      steps=[Step(index=i, t_start=float(i), action=f"click(x={i}, y={i})") for i in range(3000)])
    native.save(traj, tmp_path / "long")
    proc = subprocess.Popen([sys.executable, "-m", "gui_app", "inspect", str(tmp_path / "long"), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.read(100)  # the reader takes the head of the output and goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == "", err


@pytest.mark.parametrize("argv", [["scan", "/nonexistent/folder"], ["inspect", "/nonexistent/run"]])
def test_missing_paths_are_one_line(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 1
    assert "/nonexistent/" in one_line(err)


@pytest.mark.parametrize("command, module, extra", [
    (["train", "--data", str(REPO / "resources" / "samples"), "--out", "{tmp}/run"], "torch", "train"),
])
def test_a_command_whose_optional_part_is_not_installed_says_which_extra_to_install(tmp_path, command, module, extra):
    """The desktop bundle and a plain install leave torch (training), Ray and transformers out: a command that needs
    one says so and names the pip extra, in one line, instead of an internal error."""
    from hostile_helpers import one_error_line

    argv = [a.replace("{tmp}", str(tmp_path)) for a in command]
    code = (f"import sys; sys.modules[{module!r}] = None\n"  # import {module} fails as it does where it is absent
            f"from gui_app.cli import main\nsys.exit(main({argv!r}))")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    line = one_error_line(res.stderr)
    assert f"needs {module}" in line and f"pip install 'rollscope[{extra}]'" in line
