"""Grounding signal: does the instruction's quoted word, drawn in a font, match the screen where the run clicked?

    python bench/grounding_signal.py [--quick] [--json] [--data DS]

Measures the cue the reward model has to learn, without any training: for recorded click runs (click-button,
click-link, click-option, click-tab, click-widget; successes and real failures), the quoted word of the
instruction is drawn with Liberation Sans (Arial's metrics) at several sizes and matched against the frame
before the click (normalised cross-correlation); the run is called a success when the best match within 40 px
of the click point scores >= 0.8. Prints that rule's accuracy, the scores of present and absent words, and
the time per template match. Needs recordings (``rollscope collect miniwob`` + ``rollscope dataset build``).
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from models.render import draw_word  # noqa: E402

TASKS = ("click-button", "click-link", "click-option", "click-widget")
SIZES = (18, 20, 22, 24, 26, 28)
_QUOTED = re.compile(r'"([^"]+)"')


def best_match(gray: np.ndarray, term: str, near: tuple[float, float] | None = None, radius: int = 40
               ) -> float:
    """Highest NCC of ``term`` (any size) in ``gray``, optionally only where the template covers ``near``."""
    best = -1.0
    for s in SIZES:
        tpl = draw_word(term, s)
        if tpl.shape[0] >= gray.shape[0] or tpl.shape[1] >= gray.shape[1]:
            continue
        r = cv2.matchTemplate(gray, tpl, cv2.TM_CCOEFF_NORMED)  # (H-h+1, W-w+1): top-left corners
        if near is not None:
            x, y = near
            h, w = tpl.shape
            y0, y1 = max(0, int(y) - h - radius // 2), max(0, int(y) + radius // 2)
            x0, x1 = max(0, int(x) - w - radius // 2), max(0, int(x) + radius // 2)
            r = r[y0:y1, x0:x1]
            if r.size == 0:
                continue
        best = max(best, float(r.max()))
    return best


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--data", default=str(_common.REPO / "data" / "ds"), help="dataset folder (manifest.parquet)")
    args = p.parse_args()
    fig = _common.Figures(args.json)
    from gui_app.core import native
    from models.data import read_manifest

    manifest = Path(args.data) / "manifest.parquet"
    if not manifest.is_file():
        fig.add("skipped_no_recordings", str(manifest))
        fig.emit()
        return 0
    df = read_manifest(args.data)
    df = df.filter(df["task"].is_in(list(TASKS)) & df["negative_kind"].is_in(["none", "real_failure"])
                   & (df["split"] != "train"))
    df = df.sample(n=min(len(df), 40 if args.quick else 300), seed=0)
    correct, present, absent, times = [], [], [], []
    previous = ""
    by_task: dict[str, list[float]] = {}
    for row in df.to_dicts():
        traj = native.load(row["path"])
        quoted = _QUOTED.findall(traj.instruction or "")
        clicks = [s for s in traj.steps if s.action_type == "click" and s.x is not None]
        initial = Path(row["path"]) / "frames" / "initial.png"
        if not quoted or not clicks or not initial.is_file():
            continue
        gray = cv2.imread(str(initial), cv2.IMREAD_GRAYSCALE)
        gray[: int(round(gray.shape[0] * 50 / 210))] = 255  # the instruction box prints the word too: hide it
        term, click = quoted[0], clicks[-1]
        t0 = time.perf_counter()
        score = best_match(gray, term, near=(click.x, click.y))
        times.append((time.perf_counter() - t0) / len(SIZES))
        correct.append((score >= 0.8) == bool(row["success"]))
        by_task.setdefault(row["task"], []).append(present_score := best_match(gray, term))
        present.append(present_score)
        # a word named by another run that is not on this screen
        on_screen = {c.lower() for c in (traj.metadata.get("candidates") or []) if c} | {term.lower()}
        if previous and previous.lower() not in on_screen:
            absent.append(best_match(gray, previous))
        previous = term
    fig.add("runs", len(correct))
    fig.add("rule_accuracy_word_matched_at_click", float(np.mean(correct)) if correct else float("nan"))
    fig.add("ncc_named_word_anywhere_median", statistics.median(present) if present else float("nan"))
    fig.add("ncc_absent_word_median", statistics.median(absent) if absent else float("nan"))
    for task, v in sorted(by_task.items()):
        fig.add(f"ncc_named_word_median_{task}", statistics.median(v))
    fig.add("ms_per_template_match_320x420", statistics.median(times) * 1000 if times else float("nan"), "ms")
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
