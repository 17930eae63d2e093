"""The perception cache never runs code from a folder someone gave you: it is arrays and JSON read without pickle,
and the ``.pkl`` files earlier versions wrote (or anyone planted) under ``.perception/`` are never opened; their runs
are perceived again. Real `rollscope train`, `rollscope eval --cache` and fine-tuning on tiny data."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gui_app.cli import main
from gui_app.core.trajectory import formats
from gui_app.core.annotation.teaching import LabelledRun
from models.config import ModelConfig
from models.data import cache_key, perceive_trajectory, percept_file, read_percept, record_for, save_percept
from models.finetune import _percept_file, perceive_runs
from models.runtime import RewardModel

SPLITS = {"train": ["login-user-success", "enter-text-typo"], "val": ["click-tab-success", "click-dialog-missed"],
          "test": ["click-tab-success", "enter-text-typo"]}


class Trap:
    """A pickle whose unpickling creates ``marker``: proof that a loader unpickled it."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def plant(path: Path, marker: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(Trap(marker)))
    return path


def tiny_dataset(ds: Path, samples: Path) -> list[Path]:
    """A manifest over real recorded samples; returns the runs."""
    rows, runs = [], []
    for split, names in SPLITS.items():
        for name in names:
            run = samples / "miniwob" / name
            doc = json.loads((run / "trajectory.json").read_text())
            rows.append({"path": str(run), "id": f"{split}-{name}", "instruction": doc["instruction"],
                         "success": bool(doc["outcome"]["success"]),
                         "first_error_step": doc["metadata"].get("first_error_step"), "split": split,
                         "n_steps": len(doc["steps"])})
            runs.append(run)
    ds.mkdir(parents=True)
    pl.DataFrame(rows, schema_overrides={"first_error_step": pl.Int64}).write_parquet(ds / "manifest.parquet")
    return sorted(set(runs))


def old_cache_file(cache: Path, key: str, episode: Path) -> Path:
    """The name the pickle cache had: what `train` and `eval` used to pickle.load."""
    return percept_file(cache, key, str(episode.resolve())).with_suffix(".pkl")


@pytest.fixture(scope="module")
def model(tiny_weights) -> RewardModel:
    return RewardModel.load(tiny_weights)


def test_train_and_eval_never_unpickle_a_planted_cache_file(model, tiny_weights, samples, tmp_path, capsys):
    ds = tmp_path / "ds"
    runs = tiny_dataset(ds, samples)
    cache = ds / ".perception"
    key = cache_key(model.perceiver.cfg, model.perceiver.pointer.path)
    marker = tmp_path / "UNPICKLED"
    planted = [plant(old_cache_file(cache, key, run), marker) for run in runs]

    rc = main(["train", "--data", str(ds), "--out", str(tmp_path / "run"), "--epochs", "1", "--workers", "1",
               "--batch-size", "4", "--config", json.dumps(ModelConfig.tiny().to_dict()), "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert not marker.exists(), "train unpickled a file from the dataset folder"
    report = json.loads(out.out.strip().splitlines()[-1])
    assert report["n_train"] == 2 and report["n_val"] == 2 and report["skipped"] == 0
    # the runs were perceived again into the new cache; the planted files were left as they were, unopened
    for run, old in zip(runs, planted):
        assert percept_file(cache, key, str(run.resolve())).is_file()
        assert old.read_bytes() == pickle.dumps(Trap(marker))

    rc = main(["eval", str(ds), "--model", str(tiny_weights), "--cache", str(cache), "--split", "test", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert not marker.exists(), "eval unpickled a file from the cache folder"
    report = json.loads(out.out)
    assert report["splits"]["test"]["all"]["n"] == 2 and not report["errors"]
    assert report["perception"] == "cached" and report["cache_misses"] == 0  # read back from what train wrote


def test_eval_perceives_again_what_only_an_old_pickle_holds(model, tiny_weights, samples, tmp_path, capsys):
    ds = tmp_path / "ds"
    runs = tiny_dataset(ds, samples)
    cache = tmp_path / "cache"
    key = cache_key(model.perceiver.cfg, model.perceiver.pointer.path)
    marker = tmp_path / "UNPICKLED"
    for run in runs:
        plant(old_cache_file(cache, key, run), marker)
    rc = main(["eval", str(ds), "--model", str(tiny_weights), "--cache", str(cache), "--split", "test", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert not marker.exists(), "eval unpickled a planted cache file"
    report = json.loads(out.out)
    assert report["splits"]["test"]["all"]["n"] == 2 and not report["errors"] and report["cache_misses"] == 2


def test_fine_tuning_never_unpickles_a_planted_cache_file_and_rebuilds_a_damaged_one(model, samples, tmp_path):
    cache = tmp_path / "out" / ".perception"
    key = cache_key(model.perceiver.cfg, model.perceiver.pointer.path)
    marker = tmp_path / "UNPICKLED"
    runs = [LabelledRun(f"miniwob/{n}", str(samples / "miniwob" / n), n.endswith("success"), None, "adjudicated")
            for n in ("click-tab-success", "click-dialog-missed")]
    for run in runs:
        plant(_percept_file(cache, key, run.key).with_suffix(".pkl"), marker)
    perceived, errors, _ = perceive_runs(runs, model, cache)
    assert not marker.exists(), "fine-tuning unpickled a planted cache file"
    assert len(perceived) == 2 and not errors
    # a cache file of the new name that is not one (damaged, or planted) is perceived again and written over
    damaged = _percept_file(cache, key, runs[0].key)
    damaged.write_bytes(b"PK\x03\x04 not a zip")
    perceived, errors, seconds = perceive_runs(runs, model, cache)
    assert len(perceived) == 2 and not errors and seconds > 0
    assert read_percept(damaged)["instruction"] == perceived[0].instruction


def test_the_cache_file_round_trips_a_perception_exactly(model, samples, tmp_path):
    traj = formats.load(samples / "miniwob" / "enter-text-typo")
    payload = perceive_trajectory(model.perceiver, traj)
    file = tmp_path / "k" / "run.npz"
    save_percept(file, payload)
    back = read_percept(file)
    assert [p.name for p in file.parent.iterdir()] == ["run.npz"]  # written whole: no temporary file left
    assert back["steps"] == payload["steps"] and back["n_steps"] == payload["n_steps"]
    assert back["instruction"] == payload["instruction"] and back["source"] == payload["source"]
    assert back["percept"].frames == payload["percept"].frames
    for name in ("masks", "visual", "visual_pos", "visual_feat"):
        a, b = getattr(back["percept"], name), getattr(payload["percept"], name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    row = {"path": str(traj.source_path), "instruction": traj.instruction, "success": False, "first_error_step": 1,
           "n_steps": 0}
    ex_a, ex_b = record_for(row, back).example, record_for(row, payload).example
    for name, value in vars(ex_b).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(getattr(ex_a, name), value), name


def test_a_cache_file_that_would_need_pickle_is_refused(tmp_path):
    file = tmp_path / "planted.npz"
    with open(file, "wb") as fh:
        np.savez(fh, meta=np.array([Trap(tmp_path / "UNPICKLED")], dtype=object))
    with pytest.raises(ValueError, match="not a perception cache file"):
        read_percept(file)
    assert not (tmp_path / "UNPICKLED").exists()
