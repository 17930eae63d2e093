"""Fixtures for the importer tests: run ``rollscope inspect`` in-process and read its JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gui_app import cli

INSPECT_KEYS = {"id", "format", "instruction", "instruction_source", "n_steps", "outcome", "video", "steps",
                "alignment", "warnings"}
# Where an instruction may come from (Trajectory.instruction_source); None: not found, or the file holds it itself.
INSTRUCTION_SOURCES = {None, "task_config", "domain_config", "transcript", "override"}


@pytest.fixture
def inspect_json(capsys):
    """``inspect(path) -> dict``: ``rollscope inspect PATH --json`` through :func:`gui_app.cli.main`, with the
    contract's keys checked."""

    def run(path: str | Path, *extra: str) -> dict[str, Any]:
        capsys.readouterr()
        code = cli.main(["inspect", str(path), "--json", *extra])
        out, err = capsys.readouterr()
        assert code == 0, err
        info = json.loads(out)
        assert set(info) == INSPECT_KEYS
        assert info["instruction_source"] in INSTRUCTION_SOURCES
        assert set(info["outcome"]) == {"success", "score", "source"}
        assert set(info["alignment"]) == {"method", "mean_confidence", "low_confidence_steps", "offset"}
        if info["video"] is not None:
            assert set(info["video"]) == {"path", "fps", "frames", "width", "height"}
        for s in info["steps"]:
            assert set(s) == {"index", "t_start", "t_end", "action", "screenshot", "align_method", "align_confidence"}
        assert info["n_steps"] == len(info["steps"])
        return info

    return run


@pytest.fixture
def inspect_fails(capsys):
    """``fails(path) -> stderr line``: inspect must exit 1 with one line on stderr and nothing on stdout."""

    def run(path: str | Path) -> str:
        capsys.readouterr()
        code = cli.main(["inspect", str(path), "--json"])
        out, err = capsys.readouterr()
        assert code == 1
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        return lines[0]

    return run
