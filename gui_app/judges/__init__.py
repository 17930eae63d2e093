"""Judges: whatever turns a trajectory into a :class:`~gui_app.core.scoring.score.Score`, as plug-ins.

A judge is the core's :class:`~gui_app.core.scoring.batch.Scorer` (``name``, ``prepare``, ``score_prepared``) built
from a few string options. Judges are found through the ``rollscope.judges`` entry-point group: another package
adds one by declaring, in its own ``pyproject.toml``::

    [project.entry-points."rollscope.judges"]
    my-judge = "my_package.judge:SPEC"

where ``SPEC`` is a :class:`~gui_app.judges.registry.JudgeSpec` (its name, a one-line summary, the options it takes
and a ``load(options)`` that returns the scorer). Rollscope's own three are declared the same way:

- ``rollscope``: the built-in video reward model (:mod:`gui_app.judges.builtin`), the default;
- ``openai-compatible``: any vision-language model behind an OpenAI-compatible endpoint
  (:mod:`gui_app.judges.openai_compatible`);
- ``exevrm``: ExeVRM, a Qwen3-VL fine-tune, from a local checkpoint folder (:mod:`gui_app.judges.exevrm`).

Every judge writes the same ``Score``; its ``model`` names the judge and the settings that change its verdicts, so
the catalog keeps each judge's scores apart and the "models disagree" queue compares any two of them.

This package sits above the model and the core (it wraps :class:`models.runtime.RewardModel`) and below the commands
and the Qt layer. Listing the judges imports nothing heavy: a judge's module imports its libraries (transformers,
torch, an HTTP client) only when it is loaded.
"""
