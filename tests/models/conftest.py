"""Fixtures for the model tests: real recorded samples, and a tiny model exported the way a training run is."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


@pytest.fixture(scope="session")
def tiny_weights(tmp_path_factory) -> Path:
    """A randomly initialised tiny network with the shipped pointer detector, exported by ``export_run``."""
    import numpy as np
    import torch

    from models.config import ModelConfig
    from models.export_onnx import export_run
    from models.network import RewardNet
    from models.perception import PerceptionConfig
    from models.runtime import default_pointer_path
    from models.versions import versions

    run = tmp_path_factory.mktemp("run")
    cfg = ModelConfig.tiny()
    torch.manual_seed(0)
    net = RewardNet(cfg)
    from dataclasses import asdict

    n = cfg.d_model + 11
    ood = {"mean": [0.0] * n, "std": [1.0] * n, "precision": np.eye(n).tolist(), "scale": 1e6}
    torch.save({"state_dict": net.state_dict(), "net": cfg.to_dict(), "perception": asdict(PerceptionConfig()),
                "versions": versions(), "calibration": {"a": 1.0, "b": 0.0}, "threshold": 0.5, "ood": ood,
                "pointer": str(default_pointer_path())}, run / "checkpoint.pt")
    export_run(run, run / "export")
    return run / "export"
