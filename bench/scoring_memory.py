"""Memory of the real main window across library scorings: the app's RSS idle, after one "score the whole
library", after each rescoring; and the scoring process's, which now holds the judge (issue 26, item 6).

Issue 19 measured 195 MB idle, 736 MB after scoring the 16 bundled samples, then 810 and 860 MB on rescoring: memory
grew with every scoring. Issue 26 moved scoring out of the app's process (``gui_app.core.scoring.process``): the
judge's onnxruntime sessions, the decoded frames and the network's buffers live in a child process that exits after a
while idle or when the window closes. Before that move this bench (``--quick``, 22 samples) read 226 MB idle and
647 MB after the first scoring, 700 MB after two rescorings. This bench repeats the path (``MainWindow.score_library``
on a copy of ``resources/samples``, the shipped weights) and prints the resident memory at each point, for both
processes, plus the app's growth from the first scoring to the last (what a leak shows as) and the Python heap's
growth (tracemalloc) over the same span.

Figures:
    rss_idle_mb                      the app (the window's process): the window open on the library, a run open,
                                     nothing scored yet
    rss_after_scoring_mb             the app after the first library scoring: the target, at most
                                     :data:`TARGET_MB`
    rss_after_rescoring_<k>_mb       the app after the k-th scoring more
    rss_growth_per_rescoring_mb      (last - first scoring) / rescorings
    rss_growth_per_rescoring_after_the_first_mb   the same from the first rescoring on: ~0 when nothing leaks
    python_heap_growth_kb            tracemalloc's traced memory, last scoring minus first
    worker_peak_rss_mb               the scoring process's peak resident memory over every scoring (its model
                                     loaded, a batch decoded)
    worker_rss_idle_mb               the scoring process's resident memory after the last scoring, as it waits (it
                                     exits after gui_app.core.scoring.process.IDLE_EXIT_S idle)
    app_and_worker_rss_after_scoring_mb   the two together after the last scoring, while the worker still waits
    rss_after_worker_exit_mb         the app once the scoring process has gone (closed as its idle exit does)
    meets_target                     rss_after_scoring_mb and every rescoring's at most TARGET_MB

Usage: ``bench/scoring_memory.py [--quick] [--json] [--rescorings K]``
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import tracemalloc
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _common import REPO, Figures, log, open_window, parser, peak_rss_mb, rss_mb, run_until  # noqa: E402

TARGET_MB = 400.0  # issue 26, item 6: the app after scoring the demo library


def main() -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rescorings", type=int, default=4, help="scorings after the first (default 4; --quick 2)")
    args = p.parse_args()
    figs = Figures(args.json)
    rescorings = 2 if args.quick else args.rescorings
    os.environ["ROLLSCOPE_CONFIG_DIR"] = tempfile.mkdtemp(prefix="rollscope-bench-")
    samples = REPO / "resources" / "samples"
    root = Path(shutil.copytree(samples, Path(tempfile.mkdtemp(prefix="rollscope-mem-")) / "samples",
                                ignore=shutil.ignore_patterns(".rollscope")))

    opened = open_window(root)
    if opened is None:
        return 1
    app, win = opened
    loaded: list = []
    win.loader.loaded.connect(loaded.append)
    win.library.select_row(0)
    run_until(app, lambda: bool(loaded), 60)
    run_until(app, lambda: False, 1.0)  # settle: the frames of the open run decoded, the library read
    figs.add("trajectories", win.library.model.rowCount())
    figs.add("rss_idle_mb", rss_mb(), "MiB")

    worker_peak = 0.0

    def score_once() -> float:
        nonlocal worker_peak
        scored: list = []
        win.scorer.scored.connect(scored.append)
        win.scorer.score_library()
        if not run_until(app, lambda: bool(scored) and win.scorer.job is None, 600):
            raise RuntimeError(f"scoring did not finish: {win.notifier.history[-2:]}")
        win.scorer.scored.disconnect()
        run_until(app, lambda: not win.library.model.pending, 60)
        run_until(app, lambda: False, 0.5)
        if win.scorer.process.pid is not None:  # its high-water mark covers the scoring just done
            worker_peak = max(worker_peak, peak_rss_mb(win.scorer.process.pid))
        return rss_mb()

    tracemalloc.start()
    first = figs.add("rss_after_scoring_mb", score_once(), "MiB")
    heap0 = tracemalloc.get_traced_memory()[0]
    last = second = first
    highest = first
    for k in range(1, rescorings + 1):
        log(f"rescoring {k}/{rescorings}")
        last = figs.add(f"rss_after_rescoring_{k}_mb", score_once(), "MiB")
        second = last if k == 1 else second
        highest = max(highest, last)
    heap1 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    figs.add("rss_growth_per_rescoring_mb", (last - first) / max(rescorings, 1), "MiB")
    if rescorings > 1:
        figs.add("rss_growth_per_rescoring_after_the_first_mb", (last - second) / (rescorings - 1), "MiB")
    figs.add("python_heap_growth_kb", (heap1 - heap0) / 1024, "KiB")
    worker = win.scorer.process.pid
    figs.add("worker_peak_rss_mb", worker_peak, "MiB")
    worker_idle = figs.add("worker_rss_idle_mb", rss_mb(worker) if worker is not None else 0.0, "MiB")
    figs.add("app_and_worker_rss_after_scoring_mb", last + worker_idle, "MiB")
    win.scorer.close()
    run_until(app, lambda: False, 0.5)
    figs.add("rss_after_worker_exit_mb", rss_mb(), "MiB")
    figs.add("meets_target", highest <= TARGET_MB)
    figs.add("scored_p_success_shown", win.session.scores is not None)
    win.close()
    figs.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
