"""Fixtures for the judge tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_weights(tmp_path_factory) -> Path:
    """The built-in model's network at its tiny size with random (seeded) weights, exported as a training run is."""
    from models.export_onnx import export_run
    from tests.models.conftest import tiny_checkpoint

    run = tmp_path_factory.mktemp("run")
    tiny_checkpoint().save(run / "checkpoint.pt")
    export_run(run, run / "export")
    return run / "export"
