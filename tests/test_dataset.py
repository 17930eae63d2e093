"""Dataset builder on small synthetic native trajectories (written by the recorder's own writer; no browser)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gui_app.core.trajectory.formats import native
from gui_app.recorders.miniwob import write_episode
from gui_app.training.dataset import MANIFEST_COLUMNS, DatasetError, build_dataset, split_of

TASKS = {
    # task: (instruction, fields, candidates, steps as (action_type, target label))
    "click-button": ('Click on the "Ok" button.', {"target": "Ok"}, ["Ok", "Cancel", "next"],
                     [("click", "button:Ok")]),
    "enter-text": ('Enter "Jerald" into the text field and press Submit.', {"target": "Jerald"}, [],
                   [("click", "text field"), ("type", "text field"), ("click", "button:Submit")]),
    "click-checkboxes": ("Select abc, xyz and click Submit.", {"target 0": "abc", "target 1": "xyz"},
                         ["abc", "qqq", "xyz"],
                         [("click", "label:abc"), ("click", "label:xyz"), ("click", "button:Submit")]),
}


def _write(root: Path, task: str, seed: int, success: bool, rng: np.random.Generator) -> Path:
    instruction, fields, cands, plan = TASKS[task]
    fields = dict(fields)
    if task == "enter-text":  # distinct values across episodes, as real episodes have
        fields["target"] = f"Name{seed}"
        instruction = f'Enter "Name{seed}" into the text field and press Submit.'
    frames = [rng.integers(0, 255, (32, 24, 3), dtype=np.uint8) for _ in range(len(plan) + 1)]
    steps = []
    for k, (atype, label) in enumerate(plan):
        steps.append({"index": k, "t_start": float(k), "t_end": float(k + 1), "action": f"{atype}()",
                      "action_type": atype, "x": 10.0 if atype == "click" else None,
                      "y": 12.0 if atype == "click" else None, "text": "Jerald" if atype == "type" else None,
                      "screenshot": f"frames/step_{k:03d}.png", "extra": {"target": label}})
    md = {"task": task, "seed": seed, "episode": seed, "agent": "scripted-v1",
          "mistake_type": None if success else "wrong_element", "first_error_step": None if success else 0,
          "negative_kind": "none" if success else "real_failure", "raw_reward": 1.0 if success else -1.0,
          "utterance": instruction, "fields": fields, "candidates": cands}
    out = root / task / f"{task}-s{seed}"
    write_episode(out, task, seed, instruction, frames, steps, success, 1.0 if success else -1.0, md)
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("miniwob")
    rng = np.random.default_rng(0)
    for task in TASKS:
        for seed in range(12):
            _write(root, task, seed, success=(seed % 3 != 0), rng=rng)
    return root


def _build(root: Path, out: Path, **kw) -> pl.DataFrame:
    build_dataset(root, out, **kw)
    return pl.read_parquet(out / "manifest.parquet")


def test_manifest_columns_and_types(recorded, tmp_path):
    df = _build(recorded, tmp_path / "ds", rates={"adversarial": 1.0, "truncation": 1.0, "swap": 1.0})
    assert set(MANIFEST_COLUMNS) <= set(df.columns)
    assert df.schema["success"] == pl.Boolean
    assert df.schema["first_error_step"] == pl.Int64
    assert df.schema["seed"] == pl.Int64 and df.schema["n_steps"] == pl.Int64
    assert set(df["split"].unique()) <= {"train", "val", "test", "heldout_task"}
    assert set(df["negative_kind"].unique()) == {"none", "real_failure", "adversarial", "truncation", "swap"}
    # Successes carry no first-error step; every failure here has one, inside its steps.
    assert df.filter(pl.col("success"))["first_error_step"].null_count() == df.filter(pl.col("success")).height
    fails = df.filter(~pl.col("success"))
    assert fails["first_error_step"].null_count() == 0
    assert (fails["first_error_step"] < fails["n_steps"]).all()
    # Every path resolves (relative to DS) to a loadable native trajectory whose media exist.
    for p in df["path"].to_list():
        traj = native.load(tmp_path / "ds" / p)
        assert not traj.warnings, traj.warnings


def test_counts_match_manifest(recorded, tmp_path):
    df = _build(recorded, tmp_path / "ds")
    counts = pl.read_csv(tmp_path / "ds" / "counts.csv")
    assert counts["n"].sum() == df.height
    assert set(counts.columns) >= {"task", "split", "negative_kind", "label", "n"}
    got = {(r["task"], r["split"], r["label"]): 0 for r in counts.to_dicts()}
    for r in counts.to_dicts():
        got[(r["task"], r["split"], r["label"])] += r["n"]
    want = Counter((r["task"], r["split"], "success" if r["success"] else "failure") for r in df.to_dicts())
    assert got == dict(want)


def test_splits_deterministic_and_by_seed(recorded, tmp_path):
    a = _build(recorded, tmp_path / "a", seed=3)
    b = _build(recorded, tmp_path / "b", seed=3)
    assert a.select("id", "split", "instruction").sort("id").equals(b.select("id", "split", "instruction").sort("id"))
    # One seed, one split: across tasks and for every negative derived from an episode.
    per_seed = a.group_by("seed").agg(pl.col("split").n_unique().alias("n"))
    assert per_seed["n"].max() == 1
    # The hash split is close to 80/10/10 on many seeds, and another salt gives another assignment.
    c = Counter(split_of(s, 0) for s in range(5000))
    assert 0.77 < c["train"] / 5000 < 0.83 and 0.08 < c["val"] / 5000 < 0.12
    assert [split_of(s, 0) for s in range(200)] != [split_of(s, 1) for s in range(200)]


def test_heldout_tasks_never_in_training(recorded, tmp_path):
    df = _build(recorded, tmp_path / "ds", holdout_tasks=["enter-text"],
                rates={"adversarial": 1.0, "truncation": 1.0, "swap": 1.0})
    held = df.filter(pl.col("task") == "enter-text")
    assert held.height > 12 and set(held["split"].unique()) == {"heldout_task"}
    assert "enter-text" not in set(df.filter(pl.col("split") != "heldout_task")["task"].unique())
    # Negatives derived from held-out episodes stay held out too.
    derived = df.filter(pl.col("derived_from").is_not_null() & (pl.col("task") == "enter-text"))
    assert derived.height > 0 and set(derived["split"].unique()) == {"heldout_task"}


def test_derived_negatives_reference_original_media(recorded, tmp_path):
    ds = tmp_path / "ds"
    df = _build(recorded, ds, rates={"adversarial": 1.0, "truncation": 1.0, "swap": 1.0})
    by_id = {r["id"]: r for r in df.to_dicts()}
    adv = df.filter((pl.col("negative_kind") == "adversarial") & (pl.col("task") == "enter-text")).to_dicts()[0]
    # The video types the original text at step 1: that is where it departs from the rewritten instruction.
    assert adv["first_error_step"] == 1 and not adv["success"]
    assert adv["instruction"] != adv["original_instruction"]
    btn = df.filter((pl.col("negative_kind") == "adversarial") & (pl.col("task") == "click-button")).to_dicts()[0]
    assert btn["first_error_step"] == 0
    assert any(c in btn["instruction"] for c in ('"Cancel"', '"next"'))
    trunc = df.filter(pl.col("negative_kind") == "truncation").to_dicts()[0]
    orig = by_id[trunc["derived_from"]]
    assert trunc["n_steps"] < orig["n_steps"]
    assert trunc["first_error_step"] == trunc["n_steps"] - 1
    ttraj = native.load(ds / trunc["path"])
    assert ttraj.video.frames == ttraj.n_steps + 1
    swap = df.filter(pl.col("negative_kind") == "swap").to_dicts()[0]
    assert swap["first_error_step"] == 0 and swap["instruction"] != by_id[swap["derived_from"]]["instruction"]
    # No media copies: a derived dir holds only its trajectory.json, pointing at the original files.
    d = ds / swap["path"]
    assert sorted(p.name for p in d.iterdir()) == ["trajectory.json"]
    doc = json.loads((d / "trajectory.json").read_text())
    assert doc["video"]["path"].startswith("..")
    traj = native.load(d)
    assert Path(traj.video.path).resolve() == (Path(by_id[swap["derived_from"]]["abs_path"]) / "video.mp4").resolve()
    assert doc["outcome"] == {"success": False, "score": None, "source": "env"}


def test_no_negatives_and_bad_input(recorded, tmp_path):
    df = _build(recorded, tmp_path / "ds", negatives=[])
    assert set(df["negative_kind"].unique()) == {"none", "real_failure"}
    assert df.height == 36
    with pytest.raises(DatasetError, match="unknown negative kind"):
        build_dataset(recorded, tmp_path / "x", negatives=["bogus"])
    with pytest.raises(DatasetError, match="no native trajectories"):
        build_dataset(tmp_path / "empty_nothing_here", tmp_path / "y")


def test_human_labels_override_env(recorded, tmp_path):
    from gui_app.core.store.sqlite import SqliteAnnotationStore
    from gui_app.core.store.interface import default_path

    root = tmp_path / "lib"
    rng = np.random.default_rng(1)
    ep = _write(root, "click-button", 100, success=True, rng=rng)
    _write(root, "click-button", 101, success=True, rng=rng)
    tid = native.load(ep).id
    path = default_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    st = SqliteAnnotationStore(path)
    try:
        st.set_field(tid, "alice", "verdict", "failure")
        st.set_field(tid, "alice", "root_cause_step", 0)
    finally:
        st.close()
    df = _build(root, tmp_path / "ds", negatives=[])
    row = df.filter(pl.col("id") == tid).to_dicts()[0]
    assert row["label_source"] == "human" and row["success"] is False and row["first_error_step"] == 0
    other = df.filter(pl.col("id") != tid).to_dicts()[0]
    assert other["label_source"] == "env" and other["success"] is True


def test_checkbox_rewrites_point_at_the_first_contradicting_step(recorded):
    import random
    import re

    from gui_app.training.negatives import adversarial

    traj = native.load(recorded / "click-checkboxes" / "click-checkboxes-s1")
    assert traj.outcome.success
    seen = set()
    for i in range(60):
        rw = adversarial(traj, {}, random.Random(i))
        assert rw is not None and rw.instruction != traj.instruction
        m = re.match(r"Select (.*) and click Submit\.", rw.instruction)
        wanted = set() if m.group(1) == "nothing" else set(m.group(1).split(", "))
        ticks = [s.extra["target"].split(":", 1)[1] for s in traj.steps if s.extra["target"].startswith("label:")]
        step = traj.steps[rw.first_error_step]
        if step.extra["target"].startswith("label:"):
            # A tick of a box the new instruction does not ask for, and every earlier tick was wanted.
            assert step.extra["target"].split(":", 1)[1] not in wanted
            assert all(t in wanted for t in ticks[:rw.first_error_step])
        else:
            # All ticks wanted, but a wanted box is never ticked: the Submit is the departure.
            assert step.extra["target"] == "button:Submit"
            assert set(ticks) <= wanted and wanted - set(ticks)
        seen.add(step.extra["target"].startswith("label:"))
    assert seen == {True, False}


def test_dataset_command_json(recorded, tmp_path, capsys):
    import argparse

    from gui_app.commands import dataset as cmd

    p = argparse.ArgumentParser()
    cmd.add_arguments(p)
    args = p.parse_args(["build", str(recorded), "--out", str(tmp_path / "ds"), "--holdout-tasks", "enter-text",
                         "--negatives", "truncation", "--json"])
    assert cmd.run(args) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_source"] == 36 and info["n_examples"] == info["n_source"] + info["n_derived"]
    assert {c["negative_kind"] for c in info["counts"]} <= {"none", "real_failure", "truncation"}
    assert (tmp_path / "ds" / "manifest.parquet").is_file() and (tmp_path / "ds" / "counts.csv").is_file()
    args = p.parse_args(["build", str(recorded), "--out", str(tmp_path / "x"), "--split", "80,20"])
    with pytest.raises(DatasetError, match="--split"):
        cmd.run(args)


def test_the_eleven_heldout_types_are_kept_out_by_default(recorded, tmp_path):
    from gui_app.training.dataset import HELDOUT_TASKS

    assert len(HELDOUT_TASKS) == 11 and "click-link" in HELDOUT_TASKS and "social-media-some" in HELDOUT_TASKS
    root = tmp_path / "runs"
    shutil.copytree(recorded, root)
    # An episode of a held-out type (recorded for evaluation), by agent B in style family B.
    frames = [np.zeros((32, 24, 3), np.uint8)] * 2
    steps = [{"index": 0, "t_start": 0.0, "t_end": 1.0, "action": "click(x=3, y=4)", "action_type": "click",
              "x": 3.0, "y": 4.0, "screenshot": "frames/step_000.png", "extra": {"target": "span:dolor"}}]
    md = {"task": "click-link", "seed": 5, "agent": "scripted-v2", "raw_reward": 1.0, "negative_kind": "none",
          "style": {"family": "B"}, "style_family": "B", "fields": {"target": "dolor"}, "candidates": ["dolor"]}
    write_episode(root / "click-link" / "click-link-s5-b", "click-link", 5, 'Click on the link "dolor".', frames,
                  steps, True, 1.0, md, agent="scripted-v2", traj_id="miniwob-click-link-s5-b")
    df = _build(root, tmp_path / "ds")
    held = df.filter(pl.col("task") == "click-link")
    assert held.height >= 1 and set(held["split"].unique()) == {"heldout_task"}
    row = held.filter(pl.col("derived_from").is_null()).to_dicts()[0]
    assert row["agent"] == "scripted-v2" and row["style_family"] == "B"
    assert set(df.filter(pl.col("task") != "click-link")["split"].unique()) <= {"train", "val", "test"}
    # Asked for nothing held out, it trains on every type.
    df2 = _build(root, tmp_path / "ds2", holdout_tasks=())
    assert "heldout_task" not in set(df2["split"].unique())


def test_human_labels_are_found_by_the_library_key(tmp_path):
    """The app labels a run under its library key (issue 25); the dataset looked labels up by the format's id only,
    so a verdict given in the app never reached it. A label stored under an id before keys existed still counts,
    but only where no other run has that id."""
    from gui_app.core.trajectory import formats
    from gui_app.core.store.sqlite import SqliteAnnotationStore
    from gui_app.core.store.interface import default_path

    root = tmp_path / "lib"
    rng = np.random.default_rng(2)
    a = _write(root, "click-button", 100, success=True, rng=rng)
    b = _write(root, "click-button", 101, success=True, rng=rng)
    c = _write(root, "click-button", 102, success=True, rng=rng)
    doc = json.loads((c / "trajectory.json").read_text())
    doc["id"] = native.load(b).id  # two runs share one format id
    (c / "trajectory.json").write_text(json.dumps(doc))
    path = default_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    st = SqliteAnnotationStore(path)
    try:
        st.set_field(formats.load(a, library_root=root).key, "alice", "verdict", "failure")  # as the app keys it
        st.set_field(native.load(b).id, "alice", "verdict", "failure")  # an old label under an id two runs have
    finally:
        st.close()
    df = _build(root, tmp_path / "ds", negatives=[])
    (labelled,) = [r for r in df.to_dicts() if r["id"] == native.load(a).id]
    assert (labelled["label_source"], labelled["success"]) == ("human", False)
    shared = [r for r in df.to_dicts() if r["id"] == native.load(b).id]
    assert len(shared) == 2 and all(r["label_source"] == "env" and r["success"] is True for r in shared)


def test_one_dataset_from_several_folders_left_where_they_were_recorded(recorded, tmp_path):
    """Recordings stay where they were made (their cached perceptions are keyed by path): a dataset reads several
    folders at once, and the rows are those of each folder together."""
    other = tmp_path / "second"
    rng = np.random.default_rng(1)
    for seed in range(100, 104):
        _write(other, next(iter(TASKS)), seed, success=True, rng=rng)
    df = _build([recorded, other], tmp_path / "ds", negatives=[])
    assert df.height == 36 + 4
    assert df.filter(pl.col("seed") >= 100).height == 4


def test_read_manifest_of_another_writer_and_its_refusals(tmp_path):
    """A manifest polars wrote (dictionary pages, its own row groups) reads as rows: relative paths made absolute
    against the manifest's folder, the optional columns given their defaults; a manifest without a required column,
    with a row without a path, or that is not Parquet at all is one line naming the file."""
    from gui_app.core.errors import TrajectoryFormatError
    from models.data import read_manifest

    base = {"id": ["a", "b"], "instruction": ["Click Ok", "Type 42"], "success": [True, False],
            "first_error_step": [None, 1], "split": ["train", "val"]}
    pl.DataFrame({"path": ["runs/a", "/abs/b"], **base}).write_parquet(tmp_path / "manifest.parquet",
                                                                       compression="snappy")
    rows = read_manifest(tmp_path)
    assert [r["path"] for r in rows] == [str(tmp_path.resolve() / "runs" / "a"), "/abs/b"]
    assert [(r["success"], r["first_error_step"], r["negative_kind"], r["n_steps"]) for r in rows] == \
        [(True, None, "none", 0), (False, 1, "none", 0)]
    pl.DataFrame({"path": ["runs/a", None], **base}).write_parquet(tmp_path / "nulls.parquet")
    with pytest.raises(TrajectoryFormatError, match=r"nulls.parquet: field 'path\[1\]'"):
        read_manifest(tmp_path / "nulls.parquet")
    pl.DataFrame({"path": ["runs/a"], "id": ["a"]}).write_parquet(tmp_path / "short.parquet")
    with pytest.raises(TrajectoryFormatError, match="short.parquet: field 'instruction': required column"):
        read_manifest(tmp_path / "short.parquet")
    (tmp_path / "text.parquet").write_text("path,id\n")
    with pytest.raises(TrajectoryFormatError, match="text.parquet: not a Parquet file"):
        read_manifest(tmp_path / "text.parquet")
