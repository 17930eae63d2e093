"""Datasets for training and evaluation: the manifest, a perception cache, in-memory records.

The manifest (``DS/manifest.parquet``, written by ``rollscope dataset build``) has one row per example: ``path``
(a native trajectory dir), ``id``, ``task``, ``seed``, ``instruction``, ``success``, ``first_error_step``,
``negative_kind``, ``split``, ``n_steps`` and extras (``derived_from``, ``agent``, ``style_family``...).

Perception (decoding, pruning, pointer, OCR) is the expensive part and depends only on the frames, so it runs
once per recorded episode and is cached in ``CACHE/<key>/<hash>.npz`` (``key`` covers every version and
setting that changes it). A cache often lies in a dataset folder received from someone else, so it holds arrays and
JSON only (:func:`save_percept`, :func:`read_percept`), read without pickle: a planted file cannot run code. The
``.pkl`` files of earlier versions are never opened; their runs are perceived again.

Derived negatives reuse their original's perception: a rewrite or a swap pairs it with another instruction, a
truncation keeps its first keyframes. Features against the instruction are cheap and made when records load.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core import parquet
from gui_app.core.trajectory.formats import native
from gui_app.core.atomic import publish_file
from gui_app.core.errors import RollscopeError, TrajectoryFormatError
from gui_app.core.trajectory.model import Trajectory
from models.config import ModelConfig
from models.evidence import RunEvidence
from models.features import (Example, first_error_frame, keyframe_steps, load_keyframes,
                             perceive_run,
                             make_example)
from models.perception import (PERCEPTION_VERSION, FramePercept, PerceptionConfig, Perceiver, ReadLine,
                               RunPercept)
from models.pointer import PointerHit
from models.text import Box

REQUIRED_COLUMNS = ("path", "id", "instruction", "success", "first_error_step", "split")
PERCEPT_SUFFIX = ".npz"
PERCEPT_FORMAT = 2  # of the cache file's JSON part; a file of another format is perceived again
_PERCEPT_ARRAYS = {"masks": np.bool_, "visual": np.uint8, "visual_pos": np.int64, "visual_feat": np.float32}
_MAX_PERCEPT_BYTES = 256 * 2**20  # a run's perception is a few hundred KB; more is not a cache file of ours


def read_manifest(ds: str | Path) -> list[dict[str, Any]]:
    """The manifest's rows, ``path`` made absolute and the optional columns filled in.

    Raises:
        TrajectoryFormatError: no manifest, not a Parquet file, a required column missing, or a row without a path.
    """
    ds = Path(ds)
    file = ds / "manifest.parquet" if ds.is_dir() else ds
    if not file.is_file():
        raise TrajectoryFormatError(file, None, "no manifest.parquet (build the dataset first)")
    schema, cols = parquet.read(file)
    for col in REQUIRED_COLUMNS:
        if col not in schema:
            raise TrajectoryFormatError(file, col, "required column missing from the manifest")
    root = file.parent.resolve()
    n = len(cols["path"])
    for i, p in enumerate(cols["path"]):
        if not isinstance(p, str) or not p:
            raise TrajectoryFormatError(file, f"path[{i}]", f"expected a path, got {p!r}")
    cols["path"] = [p if Path(p).is_absolute() else str(root / p) for p in cols["path"]]
    for col, default in (("task", ""), ("negative_kind", "none"), ("n_steps", 0), ("agent", ""),
                         ("style_family", "")):
        cols.setdefault(col, [default] * n)
    names = list(cols)
    return [dict(zip(names, values, strict=True)) for values in zip(*cols.values(), strict=True)]


def cache_key(pcfg: PerceptionConfig, pointer_path: str | Path) -> str:
    """Hash of everything that changes a perception (versions, settings, the pointer detector's weights)."""
    h = hashlib.sha256(Path(pointer_path).read_bytes()).hexdigest()[:12]
    # "f" stays 3: the cache holds perception only and features are made from it afresh, so a new feature version
    # must not discard hours of perception (the key once held FEATURE_VERSION, 3 then)
    d = {"p": PERCEPTION_VERSION, "f": 3, "cfg": asdict(pcfg), "ptr": h}
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def percept_file(cache_dir: str | Path, key: str, episode_path: str) -> Path:
    name = hashlib.sha256(str(Path(episode_path).resolve()).encode()).hexdigest()[:24]
    return Path(cache_dir) / key / f"{name}{PERCEPT_SUFFIX}"


def source_of(row: dict[str, Any]) -> str:
    """The recorded episode whose frames an example shows (a derived negative's original)."""
    traj = native.load(row["path"])
    return str(Path(traj.metadata.get("derived_from_path") or row["path"]).resolve())


_WORKER: dict[str, Any] = {}


def _init_worker(pointer_path: str, threads: int, pcfg: PerceptionConfig) -> None:
    from models.pointer import PointerDetector
    from models.text import TextReader

    _WORKER["p"] = Perceiver(PointerDetector(pointer_path, threads=threads), TextReader(threads=threads), pcfg)


def perceive_trajectory(perceiver: Perceiver, traj: Trajectory, max_frames: int = ModelConfig.max_frames
                        ) -> dict[str, Any]:
    """What the cache holds for one run: its perception, keyframe steps, where the frames came from, step count
    and instruction (:func:`record_for` turns it into features). ``max_frames``: the recipe's keyframe limit
    (models.train keeps to it); a fine-tune passes its base's (``RewardModel.max_keyframes``)."""
    kf = load_keyframes(traj, max_frames)
    # guess: read at the guessed acting point too, so the cache serves the video-only example as well
    return {"percept": perceive_run(perceiver, traj, kf, guess=True), "steps": kf.steps, "source": kf.source,
            "n_steps": traj.n_steps, "instruction": traj.instruction or ""}


def _frame_json(fp: FramePercept) -> dict[str, Any]:
    return {"height": int(fp.height), "width": int(fp.width),
            "pointer": [float(fp.pointer.x), float(fp.pointer.y), float(fp.pointer.score)],
            "pointer_found": bool(fp.pointer_found),
            "act": None if fp.act is None else [float(fp.act[0]), float(fp.act[1])], "act_source": fp.act_source,
            "change": float(fp.change), "n_lines": int(fp.n_lines),
            "log_act": None if fp.log_act is None else [float(fp.log_act[0]), float(fp.log_act[1])],
            "lines": [[int(ln.box.x), int(ln.box.y), int(ln.box.w), int(ln.box.h), str(ln.text), float(ln.conf),
                       bool(ln.acted), bool(ln.changed), float(ln.dist), int(ln.t_end), str(ln.by),
                       bool(ln.first)] for ln in fp.lines]}


def _frame_of(d: dict[str, Any]) -> FramePercept:
    act, log_act = d["act"], d["log_act"]
    lines = [ReadLine(Box(int(x), int(y), int(w), int(h)), str(text), float(conf), bool(acted), bool(chg),
                      float(dist), int(t_end), str(by), bool(first))
             for x, y, w, h, text, conf, acted, chg, dist, t_end, by, first in d["lines"]]
    return FramePercept(int(d["height"]), int(d["width"]), PointerHit(*(float(v) for v in d["pointer"])),
                        bool(d["pointer_found"]), None if act is None else (float(act[0]), float(act[1])),
                        str(d["act_source"]), float(d["change"]), int(d["n_lines"]), lines,
                        None if log_act is None else (float(log_act[0]), float(log_act[1])))


def save_percept(path: str | Path, payload: dict[str, Any]) -> None:
    """Write a cached perception whole (:func:`gui_app.core.atomic.publish_file`): the arrays of its
    :class:`RunPercept` and one JSON document for the rest, in an ``.npz`` that needs no pickle to read."""
    percept: RunPercept = payload["percept"]
    meta = {"format": PERCEPT_FORMAT, "steps": [int(k) for k in payload["steps"]], "source": str(payload["source"]),
            "n_steps": int(payload["n_steps"]), "instruction": str(payload["instruction"]),
            "timings": {str(k): float(v) for k, v in percept.timings.items()}, "reads": int(percept.reads),
            "evidence": percept.evidence.to_json(), "frames": [_frame_json(fp) for fp in percept.frames]}
    arrays: dict[str, Any] = {name: np.ascontiguousarray(getattr(percept, name), dtype=dtype)
                              for name, dtype in _PERCEPT_ARRAYS.items()}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:  # a file object: np.savez would add ".npz" to a name
            np.savez(fh, allow_pickle=False, **arrays)

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    publish_file(target, write)


def read_percept(path: str | Path) -> dict[str, Any]:
    """A cached perception written by :func:`save_percept` (arrays loaded with ``allow_pickle=False``).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not a cache file of this format (damaged, planted, or written by another version).
    """
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:  # sizes as declared, before anything is inflated
            declared = sum(info.file_size for info in zf.infolist())
        if declared > _MAX_PERCEPT_BYTES:
            raise ValueError(f"declares {declared} bytes")
        with np.load(path, allow_pickle=False) as npz:
            meta = json.loads(npz["meta"].tobytes().decode())
            arrays = {name: npz[name] for name in _PERCEPT_ARRAYS}
        if not isinstance(meta, dict) or meta.get("format") != PERCEPT_FORMAT:
            raise ValueError(f"format {meta.get('format') if isinstance(meta, dict) else None!r}, "
                             f"not {PERCEPT_FORMAT}")
        for name, dtype in _PERCEPT_ARRAYS.items():
            if arrays[name].dtype != dtype:
                raise ValueError(f"array {name} is {arrays[name].dtype}, not {np.dtype(dtype)}")
        frames = [_frame_of(d) for d in meta["frames"]]
        percept = RunPercept(frames=frames, timings={str(k): float(v) for k, v in meta["timings"].items()},
                             reads=int(meta["reads"]), evidence=RunEvidence.from_json(meta["evidence"]), **arrays)
        return {"percept": percept, "steps": [int(k) for k in meta["steps"]], "source": str(meta["source"]),
                "n_steps": int(meta["n_steps"]), "instruction": str(meta["instruction"])}
    except (zipfile.BadZipFile, KeyError, TypeError, AttributeError, UnicodeDecodeError, EOFError) as exc:
        raise ValueError(f"{path}: not a perception cache file ({type(exc).__name__}: {exc})") from exc
    except ValueError as exc:  # json.JSONDecodeError and numpy's refusals are ValueErrors
        raise ValueError(f"{path}: not a perception cache file ({exc})") from exc


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
    """The cached perception of ``episode`` (see :func:`read_percept` for what it raises)."""
    return read_percept(percept_file(cache_dir, key, episode))


@dataclass
class Record:
    """One example in memory."""

    row: dict[str, Any]
    example: Example
    success: bool
    first_frame: int  # keyframe of the first deviation, -1 when unknown or a success


def video_only_row(row: dict[str, Any]) -> bool:
    """Whether a training row is shown as a plain recording (one in four, fixed by its path): the judge learns
    to do without the log, as it must on a screen recording alone."""
    return hashlib.blake2b(str(row["path"]).encode(), digest_size=2).digest()[0] % 4 == 0


def record_for(row: dict[str, Any], payload: dict[str, Any], use_log: bool = True) -> Record:
    """Features of one manifest row from its original's cached perception (``use_log`` False: as a plain
    recording, without its log's actions and claims)."""
    percept: RunPercept = payload["percept"]
    steps = payload["steps"]
    n_steps = int(row.get("n_steps") or 0)
    n_frames = None
    if n_steps and n_steps < payload["n_steps"]:  # a truncation: the first keyframes of the original
        if payload["n_steps"] > ModelConfig.max_frames:
            raise TrajectoryFormatError(row["path"], "n_steps", "truncation of a subsampled run")
        n_frames = len(keyframe_steps(n_steps, ModelConfig.max_frames))
    ex = make_example(percept, row["instruction"], steps, n_frames, use_log=use_log)
    fes = row.get("first_error_step")
    success = bool(row["success"])
    ff = -1 if success else first_error_frame(ex.keyframe_steps, None if fes is None else int(fes))
    return Record(row, ex, success, ff)


def load_records(rows: list[dict[str, Any]], cache_dir: str | Path, key: str,
                 progress: Callable[[int, int], None] | None = None, mode: str = "mix"
                 ) -> tuple[list[Record], list[str]]:
    """Records for every manifest row whose original was perceived; (records, skipped row errors).

    ``mode``: ``log`` (every run with its log's evidence), ``video`` (every run as a plain recording) or ``mix``
    (one in four as a plain recording: :func:`video_only_row`)."""
    recs, errors = [], []
    payloads: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        src = row.get("source_path") or row["path"]
        try:
            if src not in payloads:
                payloads[src] = load_percept(cache_dir, key, src)
            use_log = mode == "log" or (mode == "mix" and not video_only_row(row))
            recs.append(record_for(row, payloads[src], use_log=use_log))
        except (OSError, RollscopeError, ValueError) as exc:
            errors.append(f"{row['path']}: {exc}")
        if progress:
            progress(i + 1, len(rows))
    return recs, errors


def with_sources(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The manifest rows with ``source_path`` (the original episode of each row) added."""
    return [{**r, "source_path": source_of(r)} for r in rows]
