"""The model checkpoint: one typed class for everything a set of weights is judged by, saved and loaded here only.

A :class:`Checkpoint` holds the network's config (:class:`models.config.ModelConfig`, so it can rebuild its own
network), the perception settings, the versions of everything that defines the network's input
(:func:`models.versions.versions`, the pointer sprite's included), the calibration of p_success, the decision
threshold, the out-of-distribution reference with the ranges of screen size, screen shape and run length seen in
training, the pointer detector, the run trees beside the network and a fine-tune's agent trees
(:mod:`models.trees`, where it has them) and, when loaded from a torch file, the network's state.

Two files hold one, read by :meth:`Checkpoint.load` and written by :meth:`Checkpoint.save`:

* ``checkpoint.pt`` (a training or fine-tuning run) and ``model.pt`` (a weights folder's torch backend): torch,
  the fields and the ``state_dict``;
* ``model.json`` (a weights folder): the fields only, read without torch (scoring with onnxruntime never imports
  it).

The pointer detector and the trees are stored by paths relative to the checkpoint's folder, and
:meth:`Checkpoint.save` copies each beside the file when it lies elsewhere, so a run or weights folder can be moved
or handed on whole.

Formats (``format`` in the file):

1. the raw dicts written before this class (no ``format`` field): ``checkpoint.pt`` named the pointer detector
   by an absolute path, ``model.json`` not at all (``pointer.onnx`` beside it), and no sprite version was stored.
   The shipped weights are of this format and load as they are.
2. this class.
"""

from __future__ import annotations

import json
import pickle
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gui_app.core.atomic import publish_file
from gui_app.core.errors import RollscopeError
from models.config import ModelConfig
from models.perception import PerceptionConfig
from models.pruning import PruneParams
from models.versions import versions as code_versions

FORMAT = 2
RUN_FILE = "checkpoint.pt"
WEIGHTS_FILE = "model.json"
TORCH_FILE = "model.pt"
POINTER_FILE = "pointer.onnx"
TREES_FILE = "trees.onnx"
AGENT_TREES_FILE = "agent_trees.onnx"
#: The pointer sprite's version in every checkpoint written before it was stored (format 1): the sprite has been
#: version 1 since Rollscope's recorders first drew it (``git log -S POINTER_VERSION``).
LEGACY_SPRITE_VERSION = 1


class ModelLoadError(RollscopeError):
    """The model files are missing or do not match this version of the code."""


@dataclass(frozen=True)
class Calibration:
    """Platt scaling of the success logit: ``p_success = sigmoid(a * logit + b)``."""

    a: float = 1.0
    b: float = 0.0


@dataclass(frozen=True)
class SummaryRange:
    """The smallest and largest run summary seen in training, per dimension (:func:`models.features.summary`:
    log1p(keyframes), log(height), log(width), ...), and the screens' width/height range.

    Attributes:
        min: per summary dimension.
        max: per summary dimension.
        aspect: (smallest, largest) width / height; None in weights from before the shape was checked (sizes
            only).
    """

    min: tuple[float, ...]
    max: tuple[float, ...]
    aspect: tuple[float, float] | None = None

    def union(self, other: SummaryRange | None) -> SummaryRange:
        """The smallest range holding both (an aspect range known to one side only is kept)."""
        if other is None:
            return self
        aspect = self.aspect if other.aspect is None else other.aspect if self.aspect is None else (
            min(self.aspect[0], other.aspect[0]), max(self.aspect[1], other.aspect[1]))
        return SummaryRange(tuple(map(min, self.min, other.min)), tuple(map(max, self.max, other.max)), aspect)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"min": list(self.min), "max": list(self.max)}
        if self.aspect is not None:
            d["aspect"] = list(self.aspect)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SummaryRange:
        aspect = d.get("aspect")
        return cls(tuple(float(x) for x in d["min"]), tuple(float(x) for x in d["max"]),
                   None if aspect is None else (float(aspect[0]), float(aspect[1])))


@dataclass(frozen=True)
class OODReference:
    """What the out-of-distribution measure compares a run with (:func:`models.train.ood_reference`).

    Attributes:
        mean: per dimension of [CLS embedding, run summary] over the training runs.
        std: per dimension.
        precision: shrunk inverse covariance of the standardised vectors.
        scale: the 99th percentile distance of validation runs (the unit of ``ood``).
        summary_range: the summaries seen in training; None in weights from before the ranges were stored (the
            distance alone decides).
    """

    mean: list[float]
    std: list[float]
    precision: list[list[float]]
    scale: float
    summary_range: SummaryRange | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"mean": self.mean, "std": self.std, "precision": self.precision, "scale": self.scale}
        if self.summary_range is not None:
            d["summary_range"] = self.summary_range.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OODReference:
        rng = d.get("summary_range")
        return cls(list(d["mean"]), list(d["std"]), [list(r) for r in d["precision"]], float(d["scale"]),
                   None if rng is None else SummaryRange.from_dict(rng))


def perception_from_dict(d: dict[str, Any]) -> PerceptionConfig:
    d = dict(d)
    d["prune"] = PruneParams(**d["prune"])
    return PerceptionConfig(**d)


@dataclass
class Checkpoint:
    """A trained (or fine-tuned, or exported) reward model; see the module docstring.

    Attributes:
        net: the network's config.
        perception: the perception settings the network was trained on.
        calibration: of p_success.
        threshold: p_success at or above it is a success.
        ood: the out-of-distribution reference and the ranges seen in training.
        pointer: the pointer detector (ONNX); in memory an absolute path, in the file relative to its folder.
        versions: every version the network's input was made with (checked by :meth:`check_versions`).
        name: the run's name.
        finetune: how a fine-tune made it (base, seed, sizes, options); None for a training run.
        onnx_max_abs_diff: the exported graph's largest difference from torch; None before export.
        trees: the run trees (ONNX) averaged with the network's p_success (:mod:`models.trees`); in memory an
            absolute path, in the file relative to its folder; None in weights without them (the network alone).
        trees_calibration: Platt scaling of the mean of the network's and the trees' probabilities (with trees).
        agent_trees: the agent trees a fine-tune fitted on a team's labels (:mod:`models.trees`), stored as
            ``trees`` is; None otherwise.
        state_dict: the network's weights (torch tensors); None when loaded from ``model.json`` without state.
        format: of the file it was read from (1: a raw dict written before this class).
    """

    net: ModelConfig
    perception: PerceptionConfig
    calibration: Calibration
    threshold: float
    ood: OODReference
    pointer: Path
    versions: dict[str, int] = field(default_factory=code_versions)
    name: str = ""
    finetune: dict[str, Any] | None = None
    onnx_max_abs_diff: float | None = None
    trees: Path | None = None
    trees_calibration: Calibration = field(default_factory=Calibration)
    agent_trees: Path | None = None
    state_dict: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    format: int = field(default=FORMAT, compare=False)

    def to_dict(self, folder: Path) -> dict[str, Any]:
        """The stored fields (no state), with the pointer detector relative to ``folder``."""
        d: dict[str, Any] = {"format": FORMAT, "name": self.name, "net": self.net.to_dict(),
                             "perception": asdict(self.perception), "versions": dict(self.versions),
                             "calibration": asdict(self.calibration), "threshold": self.threshold,
                             "ood": self.ood.to_dict(), "pointer": self.pointer_in(folder).as_posix()}
        if self.finetune is not None:
            d["finetune"] = self.finetune
        if self.onnx_max_abs_diff is not None:
            d["onnx_max_abs_diff"] = self.onnx_max_abs_diff
        if self.trees is not None:
            d["trees"] = _relative(self.trees, folder, TREES_FILE).as_posix()
            d["trees_calibration"] = asdict(self.trees_calibration)
        if self.agent_trees is not None:
            d["agent_trees"] = _relative(self.agent_trees, folder, AGENT_TREES_FILE).as_posix()
        return d

    def pointer_in(self, folder: Path) -> Path:
        """The pointer detector's path relative to ``folder`` once :meth:`save` has put it there."""
        return _relative(self.pointer, folder, POINTER_FILE)

    @classmethod
    def from_dict(cls, d: dict[str, Any], folder: Path, state_dict: dict[str, Any] | None = None) -> Checkpoint:
        """Read the stored fields (either format) of a checkpoint lying in ``folder``.

        Raises:
            KeyError: a required field is missing.
        """
        fmt = int(d.get("format", 1))
        vers = {str(k): int(v) for k, v in d.get("versions", {}).items()}
        if fmt == 1:
            vers.setdefault("sprite", LEGACY_SPRITE_VERSION)
        pointer = Path(d.get("pointer") or POINTER_FILE)
        if not pointer.is_absolute():
            pointer = folder / pointer
        elif not pointer.is_file() and (folder / pointer.name).is_file():  # format 1: a run folder moved since
            pointer = folder / pointer.name
        trees, agent = (_stored(d.get(k), folder) for k in ("trees", "agent_trees"))
        tcal = d.get("trees_calibration") or {}
        return cls(net=ModelConfig.from_dict(d["net"]), perception=perception_from_dict(d["perception"]),
                   calibration=Calibration(float(d["calibration"]["a"]), float(d["calibration"]["b"])),
                   threshold=float(d["threshold"]), ood=OODReference.from_dict(d["ood"]), pointer=pointer,
                   versions=vers, name=str(d.get("name") or ""), finetune=d.get("finetune"),
                   onnx_max_abs_diff=d.get("onnx_max_abs_diff"),
                   trees=trees, trees_calibration=Calibration(float(tcal.get("a", 1.0)), float(tcal.get("b", 0.0))),
                   agent_trees=agent,
                   state_dict=state_dict, format=fmt)

    @classmethod
    def load(cls, path: str | Path, state: bool = False) -> Checkpoint:
        """Read a checkpoint: a weights folder (``model.json``), a run folder (``checkpoint.pt``), or one file.

        Args:
            path: a folder (its ``model.json``, else its ``checkpoint.pt``) or a ``.json`` or ``.pt`` file.
            state: also read the network's state: from a ``.pt`` file it always is; for ``model.json`` it comes
                from ``model.pt`` beside it (imports torch).

        Raises:
            ModelLoadError: no checkpoint there, a file that is not one, or one written by a newer Rollscope.
        """
        p = Path(path)
        if p.is_dir():
            file = p / WEIGHTS_FILE if (p / WEIGHTS_FILE).is_file() else p / RUN_FILE
            if not file.is_file():
                raise ModelLoadError(f"{p}: no {WEIGHTS_FILE} or {RUN_FILE} (is this a weights or run folder?)")
        elif p.is_file():
            file = p
        else:
            raise ModelLoadError(f"{p}: file not found")
        state_dict = None
        try:
            if file.suffix == ".json":
                d = json.loads(file.read_text())
                if state:
                    state_dict = _torch_load(file.parent / TORCH_FILE)["state_dict"]
            else:
                d = _torch_load(file)
                state_dict = d["state_dict"]
            if not isinstance(d, dict):
                raise TypeError(f"a {type(d).__name__}, not a dict")
            if int(d.get("format", 1)) > FORMAT:
                raise ModelLoadError(f"{file}: checkpoint format {d['format']}, newer than this Rollscope reads "
                                     f"({FORMAT})")
            return cls.from_dict(d, file.parent, state_dict)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelLoadError(f"{file}: not a checkpoint this code reads ({type(exc).__name__}: {exc})") from exc

    def save(self, path: str | Path) -> None:
        """Write the checkpoint whole to ``path``: a ``.json`` file (the fields) or a ``.pt`` file (the fields and
        the state, with torch). The pointer detector and the trees are copied beside it unless they lie in its
        folder already.

        Raises:
            ValueError: a ``.pt`` file without a state to write, or another suffix.
            OSError: a file could not be written.
        """
        file = Path(path)
        if file.suffix not in (".json", ".pt"):
            raise ValueError(f"{file}: a checkpoint is a .json or a .pt file")
        if file.suffix == ".pt" and self.state_dict is None:
            raise ValueError(f"{file}: no network state to save")
        folder = file.parent
        folder.mkdir(parents=True, exist_ok=True)
        for src, name in ((self.pointer, POINTER_FILE), (self.trees, TREES_FILE),
                          (self.agent_trees, AGENT_TREES_FILE)):
            if src is not None and _relative(src, folder, name) == Path(name) and (
                    src.resolve() != (folder / name).resolve()):
                _copy_into(src, folder / name)
        d = self.to_dict(folder)
        if file.suffix == ".json":
            publish_file(file, lambda tmp: tmp.write_text(json.dumps(d, indent=1)))
        else:
            import torch

            publish_file(file, lambda tmp: torch.save({**d, "state_dict": self.state_dict}, tmp))

    def stale_versions(self) -> dict[str, tuple[int | None, int]]:
        """{name: (stored, this code's)} for every version that differs."""
        return {k: (self.versions.get(k), v) for k, v in code_versions().items() if self.versions.get(k) != v}

    def check_versions(self, where: str | Path) -> None:
        """Refuse weights trained on input made by other versions (features, perception, terms, hashing, text,
        the pointer detector's scaling, the pointer sprite drawn on the recordings).

        Raises:
            ModelLoadError: naming each version that differs.
        """
        stale = self.stale_versions()
        if stale:
            parts = ", ".join(f"{k} {a} (code {b})" for k, (a, b) in stale.items())
            raise ModelLoadError(f"{where}: trained with other feature versions: {parts}")


def _stored(value: Any, folder: Path) -> Path | None:
    """A file named in a checkpoint: None when absent, else absolute (relative names lie in ``folder``)."""
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() else folder / path


def _copy_into(src: Path, dest: Path) -> None:
    publish_file(dest, lambda tmp: shutil.copyfile(src, tmp))


def _relative(path: Path, folder: Path, name: str) -> Path:
    """``path`` relative to ``folder``, or ``name`` when it lies elsewhere (:meth:`Checkpoint.save` copies it)."""
    try:
        return path.resolve().relative_to(folder.resolve())
    except ValueError:
        return Path(name)


def _torch_load(file: Path) -> Any:
    if not file.is_file():
        raise ModelLoadError(f"{file}: file not found (the torch backend needs it)")
    import torch

    # weights_only: a checkpoint holds tensors, dicts, lists, strings and numbers only, and a run folder handed on by
    # someone else must not run code when it is opened
    try:
        return torch.load(file, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, EOFError, RuntimeError) as exc:
        raise ModelLoadError(f"{file}: not a checkpoint this code reads ({exc})") from exc

