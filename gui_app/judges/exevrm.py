"""ExeVRM as a judge: a Qwen3-VL fine-tune that watches the run's video and answers correct or incorrect, with the
time range where the run first deviates.

``rollscope score --judge exevrm --weights DIR`` (``pip install 'rollscope[exevrm]'``: transformers and torch) loads
a local checkpoint folder with transformers, offline (nothing is downloaded; a missing folder is one error line), on
CUDA when there is one (bfloat16) and on the CPU otherwise (float32, with a warning: the 8B model takes minutes a
run there). Each run is sampled as the model was trained (:func:`gui_app.judges.frames.sample_video`: 1 fps, at most
50 frames, 720p), prompted and read as its repository specifies (:mod:`gui_app.judges.exevrm_inputs`), and scored:

- ``success`` is the box it answers; an answer without one is an error for that run, never a guess;
- ``p_success`` is the model's own probability of ``correct`` against ``incorrect`` at the token where the two
  answers part (None when its answer does not start with the box);
- ``first_error_step`` is the step on screen at the start of the time range it gives, through the run's timeline.

A batch is judged one run at a time (videos of different lengths do not share a padded forward pass without
changing what the model sees), and a run's video is read only when its turn comes, so memory holds one run's video
whatever the batch or the corpus; ``score --ray`` spreads runs over workers, each loading the model once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core.errors import RollscopeError
from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Trajectory
from gui_app.judges.exevrm_inputs import (CORRECT, INCORRECT, VIDEO_PAD, VideoConfig, frame_times, parse_answer,
                                          prompt_text, step_at, video_patches)
from gui_app.judges.frames import StepFrames, sample_video
from gui_app.judges.registry import JudgeError, JudgeOption, JudgeSpec, option_float, option_int

NAME = "exevrm"
THRESHOLD = 0.5
CPU_WARNING = "ExeVRM runs on the CPU (no CUDA device): expect minutes per run with the 8B model"


@dataclass
class Prepared:
    """One run to judge. Its video is read when it is judged, not before: a batch waiting for the model holds no
    frames, so memory holds one run's video whatever the batch size."""

    key: str
    traj: Trajectory


@dataclass
class Inputs:
    """One run's video and prompt, as the model reads them."""

    sample: StepFrames
    patches: np.ndarray  # (grid_t * grid_h * grid_w, 3 * temporal_patch_size * patch_size ** 2) float32
    grid: tuple[int, int, int]
    prompt: str


class ExeVRMJudge:
    """A loaded ExeVRM checkpoint (see the module docstring).

    Attributes:
        name: ``exevrm:FOLDER:FPSfps-Nf-PIXELSpx`` (the folder's name and the sampling that changes its verdicts).
    """

    def __init__(self, weights: str | Path, device: str = "auto", fps: float = 1.0, max_frames: int = 50,
                 max_pixels: int = 1280 * 720, max_new_tokens: int = 64, ask_range: bool = True):
        folder = Path(weights).expanduser()
        if not folder.is_dir():
            raise JudgeError(f"{folder}: no such checkpoint folder (ExeVRM's weights: a local folder, nothing is "
                             "downloaded)")
        if not (folder / "config.json").is_file():
            raise JudgeError(f"{folder}: not a transformers checkpoint (no config.json)")
        try:
            import torch
            from transformers import AutoTokenizer, Qwen3VLForConditionalGeneration
        except ImportError as exc:
            raise JudgeError(f"the exevrm judge needs transformers and torch: pip install 'rollscope[exevrm]' "
                             f"({exc})") from exc
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        # Said once by whoever loads it (``rollscope score`` prints it), and with every score it gives.
        self.notes = [] if self.device.startswith("cuda") else [CPU_WARNING]
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # one line per run is what `score` prints, not loading bars
        try:
            # Any: transformers' own annotations of these are looser than what this code reads of them.
            self.tokenizer: Any = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            model: Any = Qwen3VLForConditionalGeneration.from_pretrained(folder, local_files_only=True, dtype=dtype)
        except (OSError, ValueError) as exc:
            raise JudgeError(f"{folder}: cannot load the checkpoint: {' '.join(str(exc).split())}") from exc
        self.model: Any = model.to(self.device).eval()
        self.video = VideoConfig.from_folder(folder)
        self.fps, self.max_frames, self.max_pixels = fps, max_frames, max_pixels
        self.max_new_tokens, self.ask_range = max_new_tokens, ask_range
        self.video_token_id = self.tokenizer.convert_tokens_to_ids(VIDEO_PAD)
        self._verdict_ids = self._parting_tokens()
        self.name = f"{NAME}:{folder.resolve().name}:{fps:g}fps-{max_frames}f-{max_pixels}px"

    def _parting_tokens(self) -> tuple[list[int], int, int] | None:
        """The tokens both answers start with, and the first token of each after them (where the model chooses);
        None when the tokenizer does not part them."""
        yes = self.tokenizer.encode(CORRECT, add_special_tokens=False)
        no = self.tokenizer.encode(INCORRECT, add_special_tokens=False)
        n = 0
        while n < min(len(yes), len(no)) and yes[n] == no[n]:
            n += 1
        if n >= min(len(yes), len(no)):
            return None
        return yes[:n], yes[n], no[n]

    # -- the Scorer protocol -----------------------------------------------------------------------------------
    def prepare(self, traj: Trajectory, prune: bool = True) -> Prepared:
        """The run, to be read when it is judged (``prune`` does not apply: it is the built-in model's)."""
        return Prepared(traj.key or traj.source_path, traj)

    def inputs(self, traj: Trajectory) -> Inputs:
        """The run's video, sampled as in training, and its prompt.

        Raises:
            VideoError: no readable recording or screenshots.
        """
        sample = sample_video(traj, self.fps, self.max_frames, self.max_pixels)
        patches, grid = video_patches(sample.frames, self.video)
        per_patch = grid[1] * grid[2] // self.video.merge_size ** 2
        times = frame_times(len(sample.frames), self.fps, self.video.temporal_patch_size)
        return Inputs(sample, patches, grid, prompt_text(traj.instruction, times, per_patch, self.ask_range))

    def score_prepared(self, prepared: Sequence[Prepared]) -> list[Score | RollscopeError]:
        """Judge each run, one forward pass at a time (a run whose video cannot be read fails alone)."""
        out: list[Score | RollscopeError] = []
        for p in prepared:
            t0 = time.perf_counter()
            try:
                x = self.inputs(p.traj)
            except (RollscopeError, OSError, ValueError) as exc:
                out.append(exc if isinstance(exc, RollscopeError) else JudgeError(str(exc)))
                continue
            out.append(self._judge(x, time.perf_counter() - t0))
        return out

    def _judge(self, p: Inputs, decode_seconds: float) -> Score | RollscopeError:
        import torch

        t0 = time.perf_counter()
        ids = self.tokenizer(p.prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]  # (1, L)
        n_video = int((ids == self.video_token_id).sum())
        if n_video != len(p.patches) // self.video.merge_size ** 2:
            return JudgeError(f"the prompt holds {n_video} video tokens for "
                              f"{len(p.patches) // self.video.merge_size ** 2} (tokenizer and checkpoint disagree)")
        inputs: dict[str, Any] = {
            "input_ids": ids.to(self.device),
            "attention_mask": torch.ones_like(ids).to(self.device),
            "mm_token_type_ids": ((ids == self.video_token_id).long() * 2).to(self.device),  # 2: video
            "pixel_values_videos": torch.from_numpy(p.patches).to(self.device, self.model.dtype),
            "video_grid_thw": torch.tensor([p.grid], device=self.device),
        }
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      output_logits=True, return_dict_in_generate=True)
        new = out.sequences[0, ids.shape[1]:].tolist()
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        seconds = time.perf_counter() - t0
        try:
            answer = parse_answer(text)
        except ValueError as exc:
            return JudgeError(f"ExeVRM gave no verdict that can be read ({exc}); it answered: "
                              f"{' '.join(text.split())[:200]!r}")
        first = None
        if not answer.success and answer.start is not None:
            first = step_at(answer.start, self.fps, p.sample.steps)
        timings = {"decode": decode_seconds, "generate": seconds}
        return Score(p_success=self._p_correct(new, out.logits), threshold=THRESHOLD, success=answer.success,
                     first_error_step=first, model=self.name, seconds=sum(timings.values()), timings=timings,
                     warnings=list(self.notes), tokens_kept=int(ids.shape[1]), tokens_total=int(ids.shape[1]),
                     usage={"prompt_tokens": int(ids.shape[1]), "completion_tokens": len(new)},
                     rationale=" ".join(text.split())[:500], evidence=["video"])

    def _p_correct(self, new: list[int], logits: Sequence[Any]) -> float | None:
        """The model's probability of ``correct`` against ``incorrect`` where its answer chose between them (its raw
        logits there, before any processing of the generation)."""
        if self._verdict_ids is None:
            return None
        prefix, yes, no = self._verdict_ids
        n = len(prefix)
        if new[:n] != prefix or len(logits) <= n:
            return None
        pair = logits[n][0].float()[[yes, no]]  # (2,)
        return float(pair.softmax(-1)[0])


def _load(options: dict[str, str]) -> ExeVRMJudge:
    return ExeVRMJudge(options["weights"], device=options["device"], fps=option_float(options, "fps"),
                       max_frames=option_int(options, "max-frames"), max_pixels=option_int(options, "max-pixels", 1024),
                       max_new_tokens=option_int(options, "max-new-tokens"), ask_range=options["ask-range"] == "on")


SPEC = JudgeSpec(
    name=NAME,
    summary="ExeVRM, a Qwen3-VL fine-tune that watches the run's video (1 fps, 50 frames, 720p) from a local "
            "checkpoint folder; CUDA when present",
    options=(
        JudgeOption("weights", "the checkpoint folder (config.json, safetensors, tokenizer)", required=True),
        JudgeOption("device", "auto (CUDA when present), cpu, cuda, cuda:N", default="auto"),
        JudgeOption("fps", "video frames a second", default="1"),
        JudgeOption("max-frames", "video frames at most", default="50"),
        JudgeOption("max-pixels", "pixels of a frame at most (1280x720)", default=str(1280 * 720)),
        JudgeOption("max-new-tokens", "longest answer in tokens", default="64"),
        JudgeOption("ask-range", "ask for the time range of the deviation (ExeVRM's ScaleCUA wording)", default="on",
                    choices=("on", "off")),
    ),
    load=_load,
    extra="exevrm",
)
