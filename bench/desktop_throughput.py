"""Desktop recording throughput: episodes/minute with 1 and 2 workers, peak memory incl. X servers and apps.

Records real desktop episodes (``gui_app.recorders.desktop.recorder.collect``: Xvfb + openbox per worker,
LibreOffice, Mousepad, PCManFM, galculator, Chromium) into a temp folder, once with one worker and once with two,
while a sampler thread sums the resident memory of this process and all its descendants (workers, Xvfb, openbox,
ffmpeg, every application). Each label is then compared with the outcome the episode's plan intended (a clean
run or a recovered mistake should succeed, any other mistake should fail): the agreement rate.

The agent's thinking pauses are the collector's default (0.4-2.0 s before each action), so the figure is what
``rollscope collect desktop`` gives with its defaults.

    python bench/desktop_throughput.py [--quick] [--json]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from _common import Figures, log, parser
from collect_throughput import PeakSampler

#: One task per application family: a spreadsheet, a document, the editor, the file manager, the browser.
QUICK_TASKS = ["calc_enter_values", "editor_append_line", "files_rename", "chrome_pick_item"]


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    fig = Figures(args.json)
    from gui_app.recorders.desktop.recorder import collect
    from gui_app.recorders.desktop.tasks import TASKS

    tasks = QUICK_TASKS if args.quick else sorted(TASKS)
    per_task = 1  # one episode of each task per worker count: all 19 tasks take ~15 min on 2 cores
    fig.add("tasks", len(tasks))
    with tempfile.TemporaryDirectory(prefix="rollscope-desktop-bench-") as tmp:
        for workers in (1, 2):
            out = Path(tmp) / f"w{workers}"
            log(f"recording {per_task} episode(s) x {len(tasks)} tasks with {workers} worker(s) ...")
            sampler = PeakSampler()
            sampler.start()
            t0 = time.perf_counter()
            rep = collect(tasks, per_task, out, seed=100 + workers, fail_rate=0.3, workers=workers)
            wall = time.perf_counter() - t0
            peak = sampler.stop()
            fig.add(f"episodes_{workers}w", rep.recorded)
            fig.add(f"episodes_per_min_{workers}w", 60.0 * rep.recorded / wall, "episodes/min")
            fig.add(f"peak_rss_{workers}w", peak, "MiB (process tree incl. Xvfb, ffmpeg, apps)")
            fig.add(f"errors_{workers}w", len(rep.errors))
            d = rep.to_dict()
            fig.add(f"label_plan_agreement_{workers}w", d["agreement_rate"], "(checker vs intended outcome)")
            steps, seconds, disagree = [], [], []
            for f in sorted(out.glob("*/*/trajectory.json")):
                doc = json.loads(f.read_text())
                md = doc["metadata"]
                steps.append(len(doc["steps"]))
                seconds.append(doc["video"]["frames"] / doc["video"]["fps"])
                if bool(doc["outcome"]["success"]) != bool(md["intended_success"]):
                    disagree.append(f"{md['task']}:{md['mistake_type'] or 'clean'}:{md['checker']['reason']}")
            fig.add(f"disagreements_{workers}w", "; ".join(disagree) or "none")
            if steps:
                fig.add(f"mean_steps_{workers}w", sum(steps) / len(steps), f"(min {min(steps)}, max {max(steps)})")
                fig.add(f"mean_video_seconds_{workers}w", sum(seconds) / len(seconds), "s")
            # The native copy hard-links the OSWorld media: count each file's bytes once.
            inodes = {(st.st_dev, st.st_ino): st.st_size for st in (f.stat() for f in out.rglob("*") if f.is_file())}
            mb = sum(inodes.values()) / 2**20
            fig.add(f"disk_per_episode_{workers}w", 1024 * mb / max(1, rep.recorded), "KiB (both layouts)")
    fig.emit()


if __name__ == "__main__":
    main()
