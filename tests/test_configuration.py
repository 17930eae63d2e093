"""Configuration travels by arguments and the settings object, never by writing the process environment (issue 25).

``--tasks-root`` used to reach the OSWorld importer by ``os.environ`` (and Ray workers by a copy of it): a command's
option leaked into everything the process did afterwards. Reading an environment variable for a user's default
(``ROLLSCOPE_CONFIG_DIR``, ``ROLLSCOPE_OSWORLD_TASKS_ROOT``) is fine; writing one is not.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from gui_app.core.trajectory import formats
from gui_app.core.library.catalog import Catalog
from tests.formats import builders as b

ROOT = Path(__file__).resolve().parents[1]
TASKS = b.REAL / "osworld" / "evaluation_examples" / "examples"
# Calls on os.environ that change it (a mapping's writers), and the os functions that do.
_WRITERS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
_OS_WRITERS = {"putenv", "unsetenv"}


def environ_writes(source: str) -> list[int]:
    """The lines of ``source`` that write the process environment: an assignment or deletion of an item of
    ``os.environ`` (under any alias), a writing method called on it, ``os.putenv``/``os.unsetenv``, or the
    environment itself rebound."""
    tree = ast.parse(source)
    os_names, environ_names, writer_names = {"os"}, set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {a.asname or a.name for a in node.names if a.name == "os"}
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            environ_names |= {a.asname or a.name for a in node.names if a.name == "environ"}
            writer_names |= {a.asname or a.name for a in node.names if a.name in _OS_WRITERS}

    def is_environ(node: ast.AST) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
                 and node.value.id in os_names) or (isinstance(node, ast.Name) and node.id in environ_names))

    def written(target: ast.AST) -> bool:
        return is_environ(target) or (isinstance(target, ast.Subscript) and is_environ(target.value))

    lines = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        if any(written(t) for t in targets):
            lines.append(node.lineno)
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr in _WRITERS and is_environ(fn.value):
                lines.append(node.lineno)
            elif (isinstance(fn, ast.Attribute) and fn.attr in _OS_WRITERS and isinstance(fn.value, ast.Name)
                  and fn.value.id in os_names) or (isinstance(fn, ast.Name) and fn.id in writer_names):
                lines.append(node.lineno)
    return sorted(lines)


@pytest.mark.parametrize("code", [
    "import os\nos.environ['A'] = '1'",
    "import os\nos.environ.setdefault('A', '1')",
    "import os\nos.environ.update(A='1')",
    "import os as o\no.environ['A'] += 'x'",
    "from os import environ\nenviron['A'] = '1'",
    "from os import environ as env\nenv.pop('A')",
    "import os\ndel os.environ['A']",
    "import os\nos.putenv('A', '1')",
    "from os import putenv\nputenv('A', '1')",
    "import os\nos.environ = {}",
])
def test_the_scan_finds_each_way_of_writing_the_environment(code):
    assert environ_writes(code) != []


def test_reading_the_environment_is_not_writing_it():
    assert environ_writes("import os\nx = os.environ.get('A')\ny = dict(os.environ)\nz = os.environ['B']\n"
                          "env = {k: v for k, v in os.environ.items()}\nenv['C'] = '1'") == []


def test_no_code_writes_the_process_environment():
    """Under ``gui_app/`` and ``models/``: configuration is an argument or a setting (tests and benchmarks, which
    set up a process of their own, are not scanned)."""
    found = []
    for top in ("gui_app", "models"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            found += [f"{rel}:{line}" for line in environ_writes(path.read_text(encoding="utf-8"))]
    assert found == []


# -- --tasks-root is an argument of the loads -------------------------------------------------------------------


def test_tasks_roots_reach_the_importer_as_an_argument_and_leave_the_environment_alone(tmp_path, monkeypatch,
                                                                                       capsys):
    from gui_app import cli

    monkeypatch.delenv("ROLLSCOPE_OSWORLD_TASKS_ROOT")
    run = b.osworld_dir(tmp_path / "results" / "gpt-4o", video=None, sidecar=None, domain="chrome")["path"]
    assert formats.load(run).instruction == ""
    assert formats.load(run, tasks_roots=[TASKS]).instruction.startswith("Can you make Bing")
    before = dict(os.environ)
    assert cli.main(["inspect", str(run), "--json", "--tasks-root", str(TASKS)]) == 0
    assert json.loads(capsys.readouterr().out)["instruction"].startswith("Can you make Bing")
    assert dict(os.environ) == before  # the option applied to its command's loads, and to nothing after
    assert formats.load(run).instruction == ""
    # A scan is given them too.
    with Catalog(tmp_path / "catalog.sqlite") as cat:
        cat.scan(run, tasks_roots=[str(TASKS)])
        assert cat.query()[0].instruction.startswith("Can you make Bing")
    # Given roots are exactly those: the user's default is read only when none are given.
    monkeypatch.setenv("ROLLSCOPE_OSWORLD_TASKS_ROOT", str(TASKS))
    assert formats.load(run).instruction.startswith("Can you make Bing")
    assert formats.load(run, tasks_roots=[]).instruction == ""
