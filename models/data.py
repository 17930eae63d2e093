"""Datasets for training and evaluation: the manifest, a perception cache, in-memory records.

The manifest (``DS/manifest.parquet``, written by ``rollscope dataset build``) has one row per example: ``path``
(a native trajectory dir), ``id``, ``task``, ``seed``, ``instruction``, ``success``, ``first_error_step``,
``negative_kind``, ``split``, ``n_steps`` and extras (``derived_from``, ``agent``, ``style_family``...).

Perception (decoding, pruning, pointer, OCR) is the expensive part and depends only on the frames, so it runs
once per recorded episode and is cached in ``CACHE/<key>/<hash>.pkl`` (``key`` covers every version and
setting that changes it). Derived negatives reuse their original's perception: a rewrite or a swap pairs it with
another instruction, a truncation keeps its first keyframes. Features against the instruction are cheap and
made when records load.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl

from gui_app.core import native
from gui_app.core.errors import RollscopeError, TrajectoryFormatError
from gui_app.core.trajectory import Trajectory
from models.features import (FEATURE_VERSION, Example, first_error_frame, keyframe_steps, load_keyframes,
                             make_example)
from models.perception import PERCEPTION_VERSION, PerceptionConfig, Perceiver, RunPercept

REQUIRED_COLUMNS = ("path", "id", "instruction", "success", "first_error_step", "split")
MAX_FRAMES = 50


def read_manifest(ds: str | Path) -> pl.DataFrame:
    """The manifest with ``path`` made absolute.

    Raises:
        TrajectoryFormatError: no manifest, or a required column is missing.
    """
    ds = Path(ds)
    file = ds / "manifest.parquet" if ds.is_dir() else ds
    if not file.is_file():
        raise TrajectoryFormatError(file, None, "no manifest.parquet (build the dataset first)")
    df = pl.read_parquet(file)
    for col in REQUIRED_COLUMNS:
        if col not in df.columns:
            raise TrajectoryFormatError(file, col, "required column missing from the manifest")
    root = file.parent.resolve()
    paths = [p if Path(p).is_absolute() else str(root / p) for p in df["path"].to_list()]
    df = df.with_columns(pl.Series("path", paths))
    for col, default in (("task", ""), ("negative_kind", "none"), ("n_steps", 0), ("agent", ""),
                         ("style_family", "")):
        if col not in df.columns:
            df = df.with_columns(pl.lit(default).alias(col))
    return df


def cache_key(pcfg: PerceptionConfig, pointer_path: str | Path) -> str:
    """Hash of everything that changes a perception (versions, settings, the pointer detector's weights)."""
    h = hashlib.sha256(Path(pointer_path).read_bytes()).hexdigest()[:12]
    d = {"p": PERCEPTION_VERSION, "f": FEATURE_VERSION, "cfg": asdict(pcfg), "ptr": h}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def percept_file(cache_dir: str | Path, key: str, episode_path: str) -> Path:
    name = hashlib.sha256(str(Path(episode_path).resolve()).encode()).hexdigest()[:24]
    return Path(cache_dir) / key / f"{name}.pkl"


def source_of(row: dict[str, Any]) -> str:
    """The recorded episode whose frames an example shows (a derived negative's original)."""
    traj = native.load(row["path"])
    return str(Path(traj.metadata.get("derived_from_path") or row["path"]).resolve())


_WORKER: dict[str, Any] = {}


def _init_worker(pointer_path: str, threads: int, pcfg: PerceptionConfig) -> None:
    from models.pointer import PointerDetector
    from models.text import TextReader

    _WORKER["p"] = Perceiver(PointerDetector(pointer_path, threads=threads), TextReader(threads=threads), pcfg)


def perceive_trajectory(perceiver: Perceiver, traj: Trajectory) -> dict[str, Any]:
    """What the cache holds for one run: its perception, keyframe steps, where the frames came from, step count
    and instruction (:func:`record_for` turns it into features)."""
    kf = load_keyframes(traj, MAX_FRAMES)
    return {"percept": perceiver.perceive(kf.frames, kf.reference), "steps": kf.steps, "source": kf.source,
            "n_steps": traj.n_steps, "instruction": traj.instruction or ""}


def save_percept(path: str | Path, payload: dict[str, Any]) -> None:
    """Write a cached perception whole (a temporary file renamed over it: a reader never sees half of one)."""
    tmp = Path(path).with_suffix(f".tmp{os.getpid()}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "wb") as f:
        pickle.dump(payload, f, protocol=5)
    os.replace(tmp, path)


def _perceive_job(job: tuple[str, str]) -> tuple[str, str | None]:
    episode, out = job
    try:
        save_percept(out, perceive_trajectory(_WORKER["p"], native.load(episode)))
        return episode, None
    except (RollscopeError, OSError, ValueError) as exc:
        return episode, f"{type(exc).__name__}: {exc}"


def perceive_all(episodes: Iterable[str], cache_dir: str | Path, key: str, pointer_path: str | Path,
                 pcfg: PerceptionConfig, workers: int = 2,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, str]:
    """Perceive every episode not cached yet; returns {episode: error} for those that failed."""
    todo = []
    for ep in sorted(set(episodes)):
        out = percept_file(cache_dir, key, ep)
        if not out.is_file():
            todo.append((ep, str(out)))
    errors: dict[str, str] = {}
    if not todo:
        return errors
    threads = 1 if workers > 1 else 2
    with ProcessPoolExecutor(max_workers=max(1, workers), initializer=_init_worker,
                             initargs=(str(pointer_path), threads, pcfg)) as ex:
        for i, (ep, err) in enumerate(ex.map(_perceive_job, todo, chunksize=4)):
            if err:
                errors[ep] = err
            if progress:
                progress(i + 1, len(todo))
    return errors


def load_percept(cache_dir: str | Path, key: str, episode: str) -> dict[str, Any]:
    with open(percept_file(cache_dir, key, episode), "rb") as f:
        return pickle.load(f)


@dataclass
class Record:
    """One example in memory."""

    row: dict[str, Any]
    example: Example
    success: bool
    first_frame: int  # keyframe of the first deviation, -1 when unknown or a success


def record_for(row: dict[str, Any], payload: dict[str, Any]) -> Record:
    """Features of one manifest row from its original's cached perception."""
    percept: RunPercept = payload["percept"]
    steps = payload["steps"]
    n_steps = int(row.get("n_steps") or 0)
    n_frames = None
    if n_steps and n_steps < payload["n_steps"]:  # a truncation: the first keyframes of the original
        if payload["n_steps"] > MAX_FRAMES:
            raise TrajectoryFormatError(row["path"], "n_steps", "truncation of a subsampled run")
        n_frames = len(keyframe_steps(n_steps, MAX_FRAMES))
    ex = make_example(percept, row["instruction"], steps, n_frames)
    fes = row.get("first_error_step")
    success = bool(row["success"])
    ff = -1 if success else first_error_frame(ex.keyframe_steps, None if fes is None else int(fes))
    return Record(row, ex, success, ff)


def load_records(df: pl.DataFrame, cache_dir: str | Path, key: str,
                 progress: Callable[[int, int], None] | None = None) -> tuple[list[Record], list[str]]:
    """Records for every manifest row whose original was perceived; (records, skipped row errors)."""
    recs, errors = [], []
    payloads: dict[str, dict[str, Any]] = {}
    rows = df.to_dicts()
    for i, row in enumerate(rows):
        src = row.get("source_path") or row["path"]
        try:
            if src not in payloads:
                payloads[src] = load_percept(cache_dir, key, src)
            recs.append(record_for(row, payloads[src]))
        except (OSError, RollscopeError, ValueError) as exc:
            errors.append(f"{row['path']}: {exc}")
        if progress:
            progress(i + 1, len(rows))
    return recs, errors


def with_sources(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``source_path`` (the original episode of each row) to a manifest."""
    return df.with_columns(pl.Series("source_path", [source_of(r) for r in df.select("path").to_dicts()]))
