"""Fixtures for the model tests: real recorded samples, and a tiny model exported the way a training run is."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


def tiny_checkpoint(cfg=None, pointer=None):
    """A randomly initialised (seeded) network of ``cfg`` (default: the tiny config) as a training run saves it,
    with the shipped pointer detector unless ``pointer`` names another, and an OOD scale nothing reaches."""
    import numpy as np
    import torch

    from models.checkpoint import Calibration, Checkpoint, OODReference
    from models.config import ModelConfig
    from models.network import RewardNet
    from models.perception import PerceptionConfig
    from models.runtime import default_pointer_path

    cfg = cfg or ModelConfig.tiny()
    torch.manual_seed(0)
    net = RewardNet(cfg)
    n = cfg.d_model + 11
    ood = OODReference(mean=[0.0] * n, std=[1.0] * n, precision=np.eye(n).tolist(), scale=1e6)
    return Checkpoint(net=cfg, perception=PerceptionConfig(), calibration=Calibration(1.0, 0.0), threshold=0.5,
                      ood=ood, pointer=pointer or default_pointer_path(), state_dict=net.state_dict())


@pytest.fixture(scope="session")
def tiny_weights(tmp_path_factory) -> Path:
    """A randomly initialised tiny network with the shipped pointer detector, exported by ``export_run``."""
    from models.export_onnx import export_run

    run = tmp_path_factory.mktemp("run")
    tiny_checkpoint().save(run / "checkpoint.pt")
    export_run(run, run / "export")
    return run / "export"
