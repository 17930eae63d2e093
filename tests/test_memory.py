"""gui_app.core.memory.trim gives a worker thread's freed heap back to the system (glibc), as after a scoring."""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from gui_app.core import memory


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_worker_heap_goes_back_to_the_system():
    def work() -> None:
        # Many small blocks (below the mmap threshold): they live in the thread's malloc arena, as decoded
        # patches and padded batches do.
        blocks = [np.ones(4096, np.uint8) for _ in range(40_000)]  # ~160 MB
        del blocks

    worker = threading.Thread(target=work)
    gc.collect()  # what earlier tests left behind is freed and trimmed first, so only this worker's heap is measured
    memory.trim()
    before = rss_mb()
    worker.start()
    worker.join()
    held = rss_mb() - before
    assert memory.trim() is True
    after = rss_mb() - before
    assert held > 50 and after < held / 2, (held, after)
