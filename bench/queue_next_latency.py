"""Enter → the next queue item ready: the real main window, labelling a queue from the keyboard.

A library of N recorded trajectories (real H.264 videos) is opened, a queue built with Ctrl+1 (failures first),
and each item labelled as an annotator does: ``f`` (failure), then Enter. The time measured runs from Enter to the
next item being ready: the session shows the next key and the video view has painted that item's first frame. What
lies in between is the label write landing (a worker, in order), the queue picking the next unlabelled item and
opening it (prefetched while the previous one was labelled), and the first frame drawn.

Figures:
    enter_to_next_median_ms / enter_to_next_p95_ms / enter_to_next_max_ms   over the items of the queue
    enter_to_next_gui_cpu_median_ms / ..._p95_ms   the GUI thread's own CPU time over the same span: the steadier
                                          figure on a shared machine, where the wall time also holds waiting for
                                          a core
    prefetched_share                      items that were ready in memory when Enter was pressed
    labels_saved                          records in the store at the end (each item labelled once)

Usage: ``bench/queue_next_latency.py [--quick] [--json] [--n N] [--think-ms MS]``
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _common import DATA, Figures, log, open_window, parser, percentile, run_until  # noqa: E402
from gui_stall import make_video_library  # noqa: E402


def main() -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=40, help="trajectories in the library (default 40; --quick 12)")
    p.add_argument("--think-ms", type=float, default=300.0,
                   help="time an annotator spends on an item, half before its label key, half before Enter")
    args = p.parse_args()
    figs = Figures(args.json)
    n = 12 if args.quick else args.n
    os.environ["ROLLSCOPE_CONFIG_DIR"] = tempfile.mkdtemp(prefix="rollscope-bench-")
    root = make_video_library(DATA / "queue_library", n, steps=5, fps=5)

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    opened = open_window(root, annotator="bench")
    if opened is None:
        return 1
    app, win = opened
    handle = win.windowHandle()
    QTest.keyClick(handle, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)  # the queue: failures first
    if not run_until(app, lambda: win.queue.active and win.session.trajectory is not None, 120):
        log(f"the queue did not open: {win.notifier.history[-3:]}")
        return 1
    items = len(win.queue.items)
    figs.add("queue_items", items)

    def ready(prev: str | None) -> bool:
        s = win.session
        return s.key is not None and s.key != prev and s.frame >= 0 and win.video.shown_frame == s.frame

    latencies: list[float] = []
    cpu: list[float] = []
    prefetched = 0
    for i in range(items - 1):
        run_until(app, lambda: False, args.think_ms / 2000)  # the annotator looks at the run, labels it, checks
        QTest.keyClick(handle, Qt.Key.Key_F)
        run_until(app, lambda: False, args.think_ms / 2000)
        prev = win.session.key
        nxt = win.queue.peek_next()
        prefetched += nxt in win.loader._ready
        t0, c0 = time.perf_counter(), time.thread_time()
        QTest.keyClick(handle, Qt.Key.Key_Return)
        if not run_until(app, lambda prev=prev: ready(prev), 60):
            log(f"item {i + 1} did not open: {win.notifier.history[-3:]}")
            return 1
        latencies.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    QTest.keyClick(handle, Qt.Key.Key_F)
    run_until(app, lambda: win.labelling.pending_writes == 0, 30)
    figs.add("enter_to_next_median_ms", percentile(latencies, 50), "ms")
    figs.add("enter_to_next_p95_ms", percentile(latencies, 95), "ms")
    figs.add("enter_to_next_max_ms", max(latencies), "ms")
    figs.add("enter_to_next_gui_cpu_median_ms", percentile(cpu, 50), "ms")
    figs.add("enter_to_next_gui_cpu_p95_ms", percentile(cpu, 95), "ms")
    figs.add("prefetched_share", prefetched / max(len(latencies), 1))
    store = win.session.library.store if win.session.library is not None else None
    figs.add("labels_saved", len(store.annotations(annotator="bench")) if store is not None else 0)
    win.close()
    figs.emit()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
