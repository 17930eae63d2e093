"""Regenerate the bundled samples in ``resources/samples/`` (what ``make demo`` opens).

Records a dozen real MiniWoB++ episodes in headless Chromium (successes and failures of several tasks), derives
two negatives from them (an adversarial instruction rewrite and a truncation, referencing the original media), and
converts two runs into other formats the importers read: an OSWorld-style result directory and a plain screen
recording with a ``steps.csv`` beside it. Stays well under 5 MB.

    .venv/bin/python packaging/make_samples.py [--out resources/samples]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gui_app.core.trajectory.formats import native  # noqa: E402
from gui_app.training import negatives as neg  # noqa: E402
from gui_app.recorders.miniwob import MiniWoBRecorder  # noqa: E402

# (task, mistake or None, expected success, sample name)
PLAN = [
    ("login-user", None, True, "login-user-success"),
    ("login-user", "swapped_fields", False, "login-user-swapped-fields"),
    ("email-inbox", None, True, "email-inbox-success"),
    ("email-inbox", "wrong_element", False, "email-inbox-wrong-email"),
    ("click-checkboxes", "missed_checkbox", False, "click-checkboxes-missed-box"),
    ("click-checkboxes", "wrong_then_recover", True, "click-checkboxes-recovered"),
    ("use-autocomplete", None, True, "use-autocomplete-success"),
    ("choose-list", "wrong_option", False, "choose-list-wrong-option"),
    ("enter-text", "typo", False, "enter-text-typo"),
    ("navigate-tree", None, True, "navigate-tree-success"),
    ("click-dialog", "wrong_element", False, "click-dialog-missed"),
    ("click-tab", None, True, "click-tab-success"),
]
BASE_SEED = 900_000


def record_all(out: Path) -> dict[str, Path]:
    made: dict[str, Path] = {}
    for i, (task, mistake, want, name) in enumerate(PLAN):
        with MiniWoBRecorder(task) as rec:
            # Distinct seeds per sample, so that trajectory ids (task + seed) are unique in the folder.
            for seed in range(BASE_SEED + 100 * i, BASE_SEED + 100 * i + 40):
                target = out / "miniwob" / name
                r = rec.record(seed, seed - BASE_SEED, target, mistake=mistake)
                if r.success == want and r.mistake_type == mistake and r.n_steps >= 1:
                    made[name] = target
                    print(f"{name}: seed {seed}, {r.n_steps} steps, raw reward {r.raw_reward}")
                    break
            else:
                raise SystemExit(f"no seed gave {name}")
    return made


def derived(out: Path, made: dict[str, Path]) -> None:
    src = native.load(made["login-user-success"])
    rw = neg.adversarial(src, {"login-user": [{"username": "kasey", "password": "Xr7"}]}, random.Random(1))
    assert rw is not None
    d = neg.derive(src, "adversarial", instruction=rw.instruction, first_error_step=rw.first_error_step,
                   note=rw.changed)
    native.save(d, out / "derived" / "login-user-adversarial")
    src = native.load(made["email-inbox-success"])
    keep = max(1, src.n_steps - 1)
    d = neg.derive(src, "truncation", first_error_step=keep, keep_steps=keep,
                   note=f"kept {keep} of {src.n_steps} steps")
    native.save(d, out / "derived" / "email-inbox-truncated")


def to_osworld(out: Path, run: Path) -> None:
    """An OSWorld-style result directory: traj.jsonl, step_N_TIMESTAMP.png, result.txt, recording.mp4, task.json."""
    traj = native.load(run)
    dest = out / "osworld" / "miniwob-login-user"
    dest.mkdir(parents=True, exist_ok=True)
    lines = []
    for s in traj.steps:
        stamp = f"20261121@2100{s.index:02d}000000"
        shot = f"step_{s.index + 1}_{stamp}.png"
        shutil.copy2(s.screenshot, dest / shot)
        lines.append({"step_num": s.index + 1, "action_timestamp": stamp, "action": s.action,
                      "response": f"{s.action_type} on {s.extra.get('target', '')}", "reward": 0,
                      "done": s.index == traj.n_steps - 1, "info": {}, "screenshot_file": shot})
    (dest / "traj.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (dest / "result.txt").write_text(f"{1.0 if traj.outcome.success else 0.0}\n")
    shutil.copy2(traj.video.path, dest / "recording.mp4")
    (dest / "task.json").write_text(json.dumps({"id": "miniwob-login-user", "instruction": traj.instruction,
                                                "snapshot": "miniwob", "source": "rollscope samples"}, indent=1))


def to_plain_video(out: Path, run: Path) -> None:
    """A plain recording: video.mp4 with steps.csv (t_start, t_end, action, x, y, text) and meta.json."""
    traj = native.load(run)
    dest = out / "plain_video" / "use-autocomplete"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(traj.video.path, dest / "video.mp4")
    with open(dest / "steps.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["index", "t_start", "t_end", "action", "x", "y", "text"])
        for s in traj.steps:
            w.writerow([s.index, s.t_start, s.t_end, s.action, s.x if s.x is not None else "",
                        s.y if s.y is not None else "", s.text or ""])
    (dest / "meta.json").write_text(json.dumps({"id": "plain-use-autocomplete", "instruction": traj.instruction,
                                                "app": "miniwob", "os": "linux", "agent": "scripted-v1",
                                                "success": traj.outcome.success,
                                                "score": traj.outcome.score}, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(REPO / "resources" / "samples"))
    args = p.parse_args()
    out = Path(args.out)
    for sub in ("miniwob", "derived", "osworld", "plain_video"):
        shutil.rmtree(out / sub, ignore_errors=True)
    made = record_all(out)
    derived(out, made)
    to_osworld(out, made["login-user-success"])
    to_plain_video(out, made["use-autocomplete-success"])
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"samples: {size / 2**20:.2f} MB in {out}")
    if size > 5 * 2**20:
        raise SystemExit("samples exceed 5 MB")


if __name__ == "__main__":
    main()
