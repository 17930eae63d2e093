"""Trajectory, Step, Outcome: the one in-memory shape of an agent run, whatever format it came from.

Paths held in memory (video, screenshots) are absolute; the native on-disk format stores them relative to the
trajectory directory (see :mod:`gui_app.core.trajectory.formats.native`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gui_app.core.media.video import VideoRef  # noqa: F401 -- a trajectory's recording, the media package's type

# A step placed in the recording with less confidence than this is flagged (inspect, the app's step table).
LOW_ALIGN_CONFIDENCE = 0.5

ACTION_TYPES = (
    "click",
    "double_click",
    "right_click",
    "move",
    "drag",
    "type",
    "key",
    "hotkey",
    "scroll",
    "select",
    "wait",
    "navigate",
    "done",
    "fail",
    "message",
    "shell",
    "other",
)


@dataclass
class Outcome:
    """How the run ended.

    Attributes:
        success: True/False, or None when unknown.
        score: the raw score (reward, alignment score, ...) when the format has one.
        source: who said so: ``env`` (the environment's checker), ``human`` or ``model``.
    """

    success: bool | None = None
    score: float | None = None
    source: str | None = None


@dataclass
class Step:
    """One agent step.

    Attributes:
        index: 0-based position in the trajectory.
        t_start: start of the step in the video, in seconds (None when there is no video or no alignment).
        t_end: end of the step in the video, in seconds.
        action: the action as text, as the agent wrote it.
        action_type: parsed type, one of :data:`ACTION_TYPES`.
        x: parsed x coordinate (pixels, or normalised in [0, 1] when ``extra['coords'] == 'normalized'``).
        y: parsed y coordinate.
        text: typed text / key / option when the action carries one.
        thought: the agent's reasoning or response for this step.
        screenshot: absolute path of the screenshot taken for this step, if any.
        reward: per-step reward when the format has one.
        align_method: how ``t_start`` was obtained: ``stored`` (the format stored video times), ``timestamp``
            (stamps on the video's own clock), ``timestamp_offset`` (wall-clock stamps plus one offset fitted to
            the recording), ``screenshot_match``, ``interpolated``, ``even_spacing`` or None.
        align_confidence: confidence of the alignment in [0, 1].
        extra: anything else the source format carried for this step.
    """

    index: int
    t_start: float | None = None
    t_end: float | None = None
    action: str = ""
    action_type: str = "other"
    x: float | None = None
    y: float | None = None
    text: str | None = None
    thought: str | None = None
    screenshot: str | None = None
    reward: float | None = None
    align_method: str | None = None
    align_confidence: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trajectory:
    """A whole run: instruction, steps, recording, outcome.

    Attributes:
        id: the format's own identifier, for display and search. Not unique: every model's OSWorld run of a task
            has the task's id, Harbor's golden files all say ``NORMALIZED_SESSION_ID`` (see
            :mod:`gui_app.core.trajectory.identity`); :attr:`key` is what names one trajectory.
        instruction: the task as given to the agent ('' when the format has none).
        instruction_source: where the instruction was found, for the formats that keep it apart from the run:
            ``task_config`` (the run's own task config), ``domain_config`` (one config for a whole domain or
            scenario), ``transcript`` (the agent's own messages), ``override`` (set by a person in the app); None
            when none was found, or when the format's file holds the instruction itself.
        source_format: importer name (``native``, ``osworld``, ``atif``, ...).
        source_path: absolute path of the file or directory it was read from.
        steps: the steps, ordered by index.
        outcome: success/score/source.
        video: the recording, when there is one.
        app: the application or website, when known.
        os: the operating system, when known.
        agent: agent or model name, when known.
        metadata: format-specific extras (labels shipped with the data, first-error step, ...).
        warnings: what could not be read; a partly readable trajectory still loads.
        key: the library key, the one name of this trajectory that labels and scores are keyed by: its path within
            the library, ``#N`` for the N-th of a multi-trajectory file
            (:func:`gui_app.core.trajectory.identity.trajectory_key`).
            Every load sets it (:func:`gui_app.core.trajectory.formats.load`); None only for a trajectory built in
            memory,
            which nothing can label until it is given one.
    """

    id: str
    instruction: str = ""
    instruction_source: str | None = None
    source_format: str = "native"
    source_path: str = ""
    steps: list[Step] = field(default_factory=list)
    outcome: Outcome = field(default_factory=Outcome)
    video: VideoRef | None = None
    app: str | None = None
    os: str | None = None
    agent: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Where it sits in a library, not what it holds: two reads of one run from two places are equal trajectories.
    key: str | None = field(default=None, compare=False)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def duration(self) -> float | None:
        """Length of the run in seconds: the recording's length, else the last step's end."""
        if self.video is not None and self.video.fps and self.video.frames:
            return self.video.frames / self.video.fps
        ends = [t for t in (s.t_end if s.t_end is not None else s.t_start for s in self.steps) if t is not None]
        return max(ends) if ends else None

    @property
    def root(self) -> Path:
        """Directory the trajectory lives in (the source path itself, or its parent for a file)."""
        p = Path(self.source_path)
        return p if p.is_dir() else p.parent

    def alignment_summary(self) -> dict[str, Any]:
        """The dominant alignment method, the mean confidence over steps, the steps placed with low confidence
        (under :data:`LOW_ALIGN_CONFIDENCE`; never those whose times the format stored) and the fitted offset of
        the wall clock into the video (seconds; None unless steps were placed by their timestamps)."""
        methods = [s.align_method for s in self.steps if s.align_method]
        confs = [s.align_confidence for s in self.steps if s.align_confidence is not None]
        method = max(set(methods), key=methods.count) if methods else None
        low = [s.index for s in self.steps if s.align_method not in (None, "even_spacing")
               and s.align_confidence is not None and s.align_confidence < LOW_ALIGN_CONFIDENCE]
        found = self.metadata.get("alignment")
        fitted: dict[str, Any] = found if isinstance(found, dict) else {}
        return {"method": method, "mean_confidence": (sum(confs) / len(confs)) if confs else None,
                "low_confidence_steps": low, "offset": fitted.get("offset")}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trajectory":
        d = dict(d)
        d["steps"] = [Step(**s) for s in d.get("steps", [])]
        d["outcome"] = Outcome(**(d.get("outcome") or {}))
        d["video"] = VideoRef(**d["video"]) if d.get("video") else None
        return cls(**d)


def step_number(index: int) -> int:
    """The number a user reads for the step stored at ``index``: steps are stored from 0 and numbered from 1 in
    everything shown (the app's counters, tables, labels and tooltips), so a 6-step run reads "step 1" to "step 6"."""
    return index + 1


def step_text(index: int) -> str:
    """``step N`` for the step stored at ``index`` (see :func:`step_number`)."""
    return f"step {step_number(index)}"
