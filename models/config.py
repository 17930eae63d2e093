"""The network's config: one dataclass whose defaults are the shipped recipe.

A checkpoint stores ``asdict(cfg)`` so it can rebuild its own network (:meth:`ModelConfig.from_dict` ignores keys
it does not know). What the network is *given* (perception, features) has its own settings
(:class:`models.perception.PerceptionConfig`) and versions (:func:`models.versions.versions`), stored with the
weights and checked at load.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


#: Networks in the shipped judge: five of :class:`ModelConfig`'s shape, trained apart (seeds 0-4) and joined
#: (``rollscope train --ensemble``); a training run trains one.
SHIPPED_MEMBERS = 5


@dataclass
class ModelConfig:
    """Network shape.

    Attributes:
        d_model: transformer width.
        n_layers: encoder depth.
        n_heads: attention heads.
        mlp_ratio: hidden size of the MLP blocks, as a multiple of ``d_model``.
        dropout: dropout in the encoder (training only).
        patch: side of a visual token's grey patch (the perception's patch size).
        max_frames: size of the keyframe position table, and the one keyframe limit: a longer run is judged on
            this many keyframes, uniformly subsampled (:func:`models.features.keyframe_steps`).
        max_words: size of the instruction word position table.
        run_hidden: width of the MLP over the run's term coverage, whose logit joins the CLS logit.
        members: networks of this shape trained apart and averaged (:class:`models.network.Ensemble`); 1 is one
            network.
    """

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    mlp_ratio: int = 3
    dropout: float = 0.25
    patch: int = 16
    max_frames: int = 50
    max_words: int = 40
    run_hidden: int = 32
    members: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @classmethod
    def tiny(cls, **overrides: Any) -> "ModelConfig":
        """A config small enough for unit tests (export, parity, a training smoke run) to take seconds."""
        base: dict[str, Any] = dict(d_model=32, n_layers=1, n_heads=2, mlp_ratio=2, run_hidden=8)
        base.update(overrides)
        return cls(**base)
