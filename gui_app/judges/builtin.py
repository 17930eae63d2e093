"""The built-in judge: Rollscope's own video reward model (:class:`models.runtime.RewardModel`), the default.

Its scores keep the model's own name (the weights folder and backend, ``weights:onnx``), as every score stored before
judges existed has it, so a library scored before and after compares one model with itself.
"""

from __future__ import annotations

from gui_app.judges.registry import JudgeOption, JudgeSpec


def _load(options: dict[str, str]):  # -> models.runtime.RewardModel (imported here: onnxruntime loads with it)
    from gui_app.core.settings import active_model
    from models.runtime import RewardModel

    return RewardModel.load(options.get("model") or active_model(), backend=options["backend"])


def load_weights(folder: str | None):  # -> models.runtime.RewardModel
    """The reward model of the weights (or run) folder ``folder`` (None: the shipped weights), whatever the settings
    name: how Model → Use model… checks a folder before it becomes the active model."""
    from models.runtime import RewardModel

    return RewardModel.load(folder)


SPEC = JudgeSpec(
    name="rollscope",
    summary="Rollscope's video reward model: local, CPU, about a second a run",
    options=(
        JudgeOption("model", "weights or run folder (default: the active model, see `rollscope model`)"),
        JudgeOption("backend", "inference backend", default="onnx", choices=("onnx", "torch")),
    ),
    load=_load,
)
