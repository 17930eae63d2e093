"""Text from files never drives the terminal: ids, instructions, actions, file names, labels and error lines that
hold escape sequences or newlines are printed escaped by every human-readable output of the real ``rollscope``
(``--json`` output is escaped by ``json.dumps``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hostile_helpers import REPO, rollscope

from gui_app.core.store.record import Annotation
from gui_app.core.safety import printable
from gui_app.core.store.backends import open_store

SAMPLE = REPO / "resources" / "samples" / "miniwob" / "click-tab-success"
# sets the terminal's title, clears the screen, then forges a line of inspect's own
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\noutcome: success=True"
FORGED = "outcome: success=True"


def assert_inert(text: str) -> None:
    """No raw ESC or BEL reaches the terminal, and no line is forged."""
    assert "\x1b" not in text and "\x07" not in text, text
    assert not any(line.strip().startswith(FORGED) for line in text.splitlines()), text


def hostile_run(path: Path) -> Path:
    shutil.copytree(SAMPLE, path)
    doc = json.loads((path / "trajectory.json").read_text())
    doc["id"] = "run" + HOSTILE
    doc["instruction"] = "Click on Tab #3." + HOSTILE
    doc["steps"][0]["action"] = "click(x=243, y=131)" + HOSTILE
    (path / "trajectory.json").write_text(json.dumps(doc))
    return path


def test_printable_escapes_controls_bidi_and_separators_and_keeps_the_rest():
    assert printable(HOSTILE) == "\\x1b]0;pwned\\x07\\x1b[2J\\noutcome: success=True"
    assert printable("a\u202eb\u2028c\u2029d\x7f\x9b\t\r") == "a\\u202eb\\u2028c\\u2029d\\x7f\\x9b\\t\\r"
    assert printable("Café 日本 C:\\path [ok]") == "Café 日本 C:\\path [ok]"


def test_inspect_prints_the_files_text_escaped(tmp_path):
    run = hostile_run(tmp_path / "run")
    res = rollscope("inspect", str(run))
    assert res.returncode == 0, res.stderr
    assert_inert(res.stdout + res.stderr)
    assert "\\x1b]0;pwned\\x07" in res.stdout and "\\noutcome: success=True" in res.stdout
    # the JSON contract is unchanged: the text as it is, escaped by JSON
    res = rollscope("inspect", str(run), "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["instruction"] == "Click on Tab #3." + HOSTILE


def test_an_error_line_quoting_a_hostile_name_is_escaped(tmp_path):
    res = rollscope("inspect", str(tmp_path / ("missing" + HOSTILE)))
    assert res.returncode == 1
    assert_inert(res.stderr)
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("rollscope: error: ")


def test_scan_prints_hostile_file_names_escaped(tmp_path):
    lib = tmp_path / "lib"
    hostile_run(lib / ("good" + HOSTILE))
    broken = lib / ("broken" + HOSTILE)
    shutil.copytree(SAMPLE, broken)
    (broken / "trajectory.json").write_text('{"schema_version": 1, "steps": [')
    (lib / ("notes" + HOSTILE + ".txt")).write_text("not a trajectory")
    res = rollscope("scan", str(lib))
    assert res.returncode == 0, res.stderr
    assert_inert(res.stdout + res.stderr)
    assert "could not be read" in res.stdout and "\\x1b[2J" in res.stdout


def test_labels_list_show_and_audit_print_escaped(tmp_path):
    store_path = tmp_path / "labels.sqlite"
    tid = "run" + HOSTILE
    s = open_store(store_path)
    s.save(Annotation(tid, "ann" + HOSTILE, verdict="failure", labels=["x:" + HOSTILE], root_cause_step=0))
    s.override_score(tid, "boss" + HOSTILE, True, "because" + HOSTILE)
    s.close()
    for argv in (("list",), ("show", tid), ("audit",), ("audit", tid)):
        res = rollscope("labels", *argv, "--store", str(store_path), "--root", str(tmp_path))
        assert res.returncode == 0, (argv, res.stderr)
        assert_inert(res.stdout + res.stderr)
        assert "\\x1b]0;pwned\\x07" in res.stdout, argv
    # a field's tab or newline adds no column and no line
    res = rollscope("labels", "list", "--store", str(store_path), "--root", str(tmp_path))
    assert len(res.stdout.strip().splitlines()) == 1 and res.stdout.count("\t") == 5


def test_queue_prints_hostile_keys_and_names_escaped(tmp_path):
    lib = tmp_path / "lib"
    hostile_run(lib / ("run" + HOSTILE))
    assert rollscope("scan", str(lib)).returncode == 0
    who = "ann" + HOSTILE
    res = rollscope("queue", "build", "q", "--annotators", who, "--root", str(lib))
    assert res.returncode == 0, res.stderr
    for argv in (("status", "q"), ("next", "q", "--annotator", who)):
        res = rollscope("queue", *argv, "--root", str(lib))
        assert res.returncode == 0, (argv, res.stderr)
        assert_inert(res.stdout + res.stderr)
        assert "\\x1b[2J" in res.stdout, argv


def test_score_error_lines_are_escaped(tmp_path):
    bad = tmp_path / ("run" + HOSTILE)
    bad.mkdir()
    (bad / "trajectory.json").write_text("{")
    res = rollscope("score", str(bad))
    assert res.returncode == 1
    assert_inert(res.stdout + res.stderr)
    assert "rollscope: error: " in res.stderr and "\\x1b[2J" in res.stderr
