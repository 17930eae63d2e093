"""Regenerate the desktop samples in ``resources/samples/desktop/`` (real apps under Xvfb, about a minute).

Records three short real desktop episodes with ``rollscope collect desktop``'s recorder: a success in the text
editor, a file-manager run that renames the wrong file, and a shop page left before the order was confirmed. Each
is written as a native trajectory (``desktop/<task>/<id>/``) and as an OSWorld result tree
(``desktop/osworld/results/...`` with its task config in ``desktop/osworld/evaluation_examples/...``); the two
layouts hold the same PNGs and MP4 (git stores identical files once).

    .venv/bin/python packaging/make_desktop_samples.py [--out resources/samples/desktop]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gui_app.recorders.desktop.recorder import (  # noqa: E402
    AGENT_NAME, DesktopRecorder, episode_id, osworld_root, plan_episode)
from gui_app.recorders.desktop.tasks import TASKS  # noqa: E402
from gui_app.recorders.desktop.writer import osworld_paths  # noqa: E402

# (task, mistake or None, expected success)
PLAN = [
    ("editor_delete_line", None, True),
    ("files_rename", "wrong_file", False),
    ("chrome_pick_item", "premature_stop", False),
]
BASE_SEED = 900_000
BUDGET = 2.4 * 2**20  # bytes as a checkout holds them (hard links become copies); all samples stay under 5 MB


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(REPO / "resources" / "samples" / "desktop"))
    args = p.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    with DesktopRecorder(think=(0.3, 1.0)) as rec:
        for i, (task, mistake, want) in enumerate(PLAN):
            for seed in range(BASE_SEED + 100 * i, BASE_SEED + 100 * i + 5):
                _, rng = plan_episode(task, seed, 0.0)
                r = rec.record(task, seed, seed - BASE_SEED, out, mistake=mistake, rng=rng)
                if r.success == want and r.mistake_type == mistake and 5 <= r.n_steps:
                    print(f"{task}: seed {seed}, {r.n_steps} steps, success={r.success}")
                    break
                shutil.rmtree(r.path, ignore_errors=True)
                res, cfg = osworld_paths(osworld_root(out), TASKS[task].domain, episode_id(task, seed), AGENT_NAME)
                shutil.rmtree(res, ignore_errors=True)
                cfg.unlink(missing_ok=True)
            else:
                raise SystemExit(f"no seed gave {task} with success={want}")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"desktop samples: {size / 2**20:.2f} MB in {out} (both layouts, counted as separate files)")
    if size > BUDGET:
        raise SystemExit(f"desktop samples exceed {BUDGET / 2**20:.1f} MB")


if __name__ == "__main__":
    main()
