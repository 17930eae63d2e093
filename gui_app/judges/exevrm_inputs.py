"""ExeVRM's input and output, as its repository specifies them, in numpy (no torch, no transformers).

ExeVRM (limenlp/ExeVRM, "Reward Modeling for Computer-Using Agent from Video Execution") fine-tunes Qwen3-VL with
LLaMA-Factory (template ``qwen3_vl_nothink``; ``video_fps: 1.0``, ``video_maxlen: 50``, ``video_max_pixels:
921600``). What it reads, rebuilt here from that repository's training data and its ``mm_plugin.py``:

- **The prompt**: one user turn, the video first, then :data:`PROMPT_WITH_RANGE` (the wording of its ScaleCUA
  samples, which ask for the time range of the deviation; :data:`PROMPT_VERDICT` is the wording of the others) and
  the task. No system turn. Each frame pair of the video is announced by its time, ``<0.5 seconds>``.
- **The video**: frames sampled by :func:`gui_app.judges.frames.sample_video`, then Qwen3-VL's video processor:
  all frames resized alike (:func:`smart_resize`, the factor the patch size times the merge size, the pixel budget of
  the checkpoint's ``video_preprocessor_config.json``), scaled to 0..1, normalised, padded to whole temporal
  patches, and cut into patches (:func:`video_patches`). Rebuilt rather than called because transformers' video
  processor needs torchvision, which the CPU build of torch this project installs has no wheel for; the arithmetic
  is the same, the resize is Pillow's bicubic where transformers uses torchvision's (antialiased bicubic too).
- **The frame times**: the sampled frames are stamped as a 1 fps video (frame ``i`` at ``i`` s), each temporal
  patch by the mean of its two frames (:func:`frame_times`), as training stamped them; a time in the answer is
  therefore a position in the sampled frames, mapped back to a step through them (:func:`step_at`).
- **The answer**: ``\\box{correct}``, or ``\\box{incorrect}`` and ``The video deviates from the user's instruction
  between <3.0 seconds> and <4.0 seconds>.`` (:func:`parse_answer`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PROMPT_VERDICT = ("Given a user task and a computer-using video recording, evaluate whether the user completes the "
                  "task or not. Reply your judgement in the \\box{}.\nIf the video correctly completes the task, reply "
                  "\\box{correct}. Otherwise, reply \\box{incorrect}.\n\n# User Task\n")
# The ScaleCUA wording, spelling and spacing as trained ("timestemp", the space before the second line).
PROMPT_WITH_RANGE = ("Given a user task and a computer-using video recording, evaluate whether the user completes "
                     "the task or not. Reply your judgement in the \\box{}.\nIf the video correctly completes the "
                     "task, reply \\box{correct}. Otherwise, reply \\box{incorrect}. \nIf the video does not complete "
                     "the task (i.e., incorrect), please provide the timestemp range, i.e., from <[time_start] "
                     "seconds> to <[time_end] seconds>, of the video that deviates from the user's instruction.\n\n"
                     "# User Task\n")
CORRECT, INCORRECT = "\\box{correct}", "\\box{incorrect}"
VIDEO_PAD, VISION_START, VISION_END = "<|video_pad|>", "<|vision_start|>", "<|vision_end|>"

_BOX = re.compile(r"\\box\{\s*(correct|incorrect)\s*\}", re.IGNORECASE)
_RANGE = re.compile(r"<\s*([0-9]+(?:\.[0-9]+)?)\s*seconds?\s*>.*?<\s*([0-9]+(?:\.[0-9]+)?)\s*seconds?\s*>",
                    re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class VideoConfig:
    """The video processor settings of a Qwen3-VL checkpoint (defaults: Qwen3-VL's own).

    Attributes:
        patch_size: pixels per patch side.
        temporal_patch_size: frames per patch.
        merge_size: patches merged per token side.
        min_pixels: the least pixels of the whole video after resizing (``size.shortest_edge``).
        max_pixels: the most pixels of the whole video after resizing (``size.longest_edge``).
        image_mean: per channel.
        image_std: per channel.
    """

    patch_size: int = 16
    temporal_patch_size: int = 2
    merge_size: int = 2
    min_pixels: int = 128 * 32 * 32
    max_pixels: int = 32 * 32 * 768
    image_mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    image_std: tuple[float, float, float] = (0.5, 0.5, 0.5)

    @classmethod
    def from_folder(cls, folder: str | Path) -> VideoConfig:
        """Read ``video_preprocessor_config.json`` (else ``preprocessor_config.json``) of a checkpoint folder; what
        it does not say keeps Qwen3-VL's default.

        Raises:
            ValueError: a config file that is not a JSON object, or a setting that is not a number.
        """
        d = Path(folder)
        for name in ("video_preprocessor_config.json", "preprocessor_config.json"):
            f = d / name
            if f.is_file():
                raw = json.loads(f.read_text(encoding="utf-8"))
                if not isinstance(raw, dict):
                    raise ValueError(f"{f}: not a JSON object")
                size = raw["size"] if isinstance(raw.get("size"), dict) else {}
                base = cls()

                def num(value: Any, default: int) -> int:
                    return default if value is None else int(value)

                return cls(patch_size=num(raw.get("patch_size"), base.patch_size),
                           temporal_patch_size=num(raw.get("temporal_patch_size"), base.temporal_patch_size),
                           merge_size=num(raw.get("merge_size"), base.merge_size),
                           min_pixels=num(size.get("shortest_edge", raw.get("min_pixels")), base.min_pixels),
                           max_pixels=num(size.get("longest_edge", raw.get("max_pixels")), base.max_pixels),
                           image_mean=_triple(raw.get("image_mean"), base.image_mean),
                           image_std=_triple(raw.get("image_std"), base.image_std))
        return cls()


def _triple(value: Any, default: tuple[float, float, float]) -> tuple[float, float, float]:
    """A per-channel setting (three numbers), else ``default``."""
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return float(value[0]), float(value[1]), float(value[2])
    return default


def smart_resize(num_frames: int, height: int, width: int, temporal_factor: int, factor: int, min_pixels: int,
                 max_pixels: int) -> tuple[int, int]:
    """The frame size Qwen3-VL resizes a video to: multiples of ``factor``, the whole video's pixels within
    ``[min_pixels, max_pixels]``, the aspect kept (transformers' ``video_processing_qwen3_vl.smart_resize``)."""
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"frames of {width}x{height} px: aspect ratio above 200")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    t_bar = round(num_frames / temporal_factor) * temporal_factor
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt((num_frames * height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (num_frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def video_patches(frames: list[np.ndarray], cfg: VideoConfig) -> tuple[np.ndarray, tuple[int, int, int]]:
    """Qwen3-VL's ``pixel_values_videos`` and ``video_grid_thw`` of one video.

    Args:
        frames: RGB uint8 ``(H, W, 3)``, all one size.
        cfg: the checkpoint's video settings.

    Returns:
        ``(grid_t * grid_h * grid_w, 3 * temporal_patch_size * patch_size ** 2)`` float32 patches and the grid
        ``(grid_t, grid_h, grid_w)``.
    """
    from PIL import Image

    tp, p, m = cfg.temporal_patch_size, cfg.patch_size, cfg.merge_size
    frames = list(frames)
    while len(frames) < tp:  # one frame is a video of one temporal patch
        frames.append(frames[-1])
    h0, w0 = frames[0].shape[:2]
    h, w = smart_resize(len(frames), h0, w0, tp, p * m, cfg.min_pixels, cfg.max_pixels)
    video = np.stack([np.asarray(Image.fromarray(f).resize((w, h), Image.Resampling.BICUBIC)) for f in frames])
    mean, std = np.array(cfg.image_mean, np.float32), np.array(cfg.image_std, np.float32)
    x = ((video.astype(np.float32) / np.float32(255.0) - mean) / std).astype(np.float32)  # (T, H, W, C)
    x = x.transpose(0, 3, 1, 2)  # (T, C, H, W)
    if pad := -len(x) % tp:
        x = np.concatenate([x, np.repeat(x[-1:], pad, axis=0)])
    gt, gh, gw = len(x) // tp, h // p, w // p
    x = x.reshape(gt, tp, 3, gh // m, m, p, gw // m, m, p)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)  # (gt, gh/m, gw/m, m, m, C, tp, p, p)
    return np.ascontiguousarray(x.reshape(gt * gh * gw, 3 * tp * p * p)), (gt, gh, gw)


def frame_times(n_frames: int, fps: float, temporal_patch_size: int) -> list[float]:
    """The time announced before each temporal patch: its frames stamped ``i / fps``, averaged (transformers'
    ``Qwen3VLProcessor._calculate_timestamps``; the last patch padded with the last frame)."""
    idx = list(range(n_frames))
    while len(idx) % temporal_patch_size:
        idx.append(idx[-1])
    t = [i / fps for i in idx]
    return [(t[i] + t[i + temporal_patch_size - 1]) / 2 for i in range(0, len(t), temporal_patch_size)]


def prompt_text(instruction: str, times: list[float], tokens_per_patch: int, ask_range: bool = True) -> str:
    """The whole prompt, the video's tokens written out (``qwen3_vl_nothink``: no system turn)."""
    video = "".join(f"<{t:.1f} seconds>{VISION_START}{VIDEO_PAD * tokens_per_patch}{VISION_END}" for t in times)
    question = PROMPT_WITH_RANGE if ask_range else PROMPT_VERDICT
    return f"<|im_start|>user\n{video}{question}{instruction}\n<|im_end|>\n<|im_start|>assistant\n"


@dataclass(frozen=True)
class ExeVRMAnswer:
    """ExeVRM's answer, read.

    Attributes:
        success: ``\\box{correct}``.
        start: where the deviation starts, in seconds of the sampled video (None: not given).
        end: where it ends (None: not given).
    """

    success: bool
    start: float | None
    end: float | None


def parse_answer(text: str) -> ExeVRMAnswer:
    """Read ExeVRM's answer (the first ``\\box{...}``, and the first time range after it).

    Raises:
        ValueError: no ``\\box{correct}`` or ``\\box{incorrect}`` in it.
    """
    box = _BOX.search(text)
    if box is None:
        raise ValueError("no \\box{correct} or \\box{incorrect} in the answer")
    success = box.group(1).lower() == "correct"
    rng = None if success else _RANGE.search(text, box.end())
    if rng is None:
        return ExeVRMAnswer(success, None, None)
    a, b = float(rng.group(1)), float(rng.group(2))
    return ExeVRMAnswer(success, min(a, b), max(a, b))


def step_at(seconds: float, fps: float, steps: list[int]) -> int:
    """The step on screen at ``seconds`` of the sampled video (frame ``i`` at ``i / fps``): the step of that
    frame, the first step for a frame before any."""
    i = min(max(int(math.floor(seconds * fps + 1e-6)), 0), len(steps) - 1)
    return max(steps[i], 0)
