"""A plain wheel, installed without extras in a fresh virtualenv, loads and scores the bundled samples.

Guards what an editable install hides: every file the app and ``score`` read at run time is package data (the
native format's JSON Schema, the taxonomies, the weights, the migrations), and every module ``score`` imports is
a base dependency (Pillow draws the instruction). Slow (about 90 s: pip installs the dependencies from the local
index into the new environment); run in CI like every slow test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "resources" / "samples"


def _run(cmd: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    # Nothing of this checkout may leak in: no PYTHONPATH, and a working folder outside the repository.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    built = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q",
                  "-w", str(tmp / "dist")], cwd=tmp)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("rollscope-*.whl")
    venv.EnvBuilder(with_pip=True).create(tmp / "env")
    py = tmp / "env" / "bin" / "python"
    res = _run([str(py), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    listed = _run([str(py), "-m", "pip", "list", "--format=json"], cwd=tmp)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "torch" not in names and "miniwob" not in names  # no extras came along
    return tmp


@pytest.mark.slow
def test_wheel_without_extras_scores_the_samples(installed):
    exe = str(installed / "env" / "bin" / "rollscope")
    res = _run([exe, "score", str(SAMPLES), "--json"], cwd=installed)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = [json.loads(line) for line in res.stdout.strip().splitlines()]
    assert len(rows) >= 10 and all(0.0 <= r["p_success"] <= 1.0 for r in rows), rows
    formats = {r["path"].split(os.sep)[-2] for r in rows}
    assert {"miniwob", "osworld", "plain_video"} <= formats
    # The native format's schema comes from the wheel, not from this checkout.
    shown = _run([exe, "inspect", str(SAMPLES / "miniwob" / "navigate-tree-success"), "--json"], cwd=installed)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["format"] == "native"
    # Errors exit 1 with one line on stderr, as the README says.
    bad = _run([exe, "score", str(installed / "nope")], cwd=installed)
    assert bad.returncode == 1 and bad.stderr.strip().splitlines()[-1].startswith("rollscope: error:")
