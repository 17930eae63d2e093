"""Shared plumbing of the benchmarks: ``--quick``/``--json`` arguments, named figures, memory readings.

A benchmark prints each figure as a ``name: value unit`` line, or all of them as one JSON object under
``--json`` (``{"name": {"value": ..., "unit": ...}, ...}``), so CI logs and reports can quote them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
DATA = REPO / "data" / "bench"  # git-ignored: generated media is reused between runs


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the two options every benchmark takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="small sizes, for a smoke run (CI)")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    return p


def data_or_samples(p: argparse.ArgumentParser, args: argparse.Namespace, what: str) -> str:
    """The folder a benchmark reads (``args.data``): the bundled samples on a ``--quick`` smoke run without one,
    else an error naming ``what`` it must hold."""
    if args.data is None:
        if not args.quick:
            p.error(f"DATA is required ({what})")
        args.data = str(REPO / "resources" / "samples")
    return str(args.data)


class Figures:
    """Named figures collected during a run, printed at the end (or as they come, in text mode)."""

    def __init__(self, json_mode: bool):
        self.json_mode = json_mode
        self.values: dict[str, dict[str, Any]] = {}

    def add(self, name: str, value: Any, unit: str = "") -> Any:
        """Record a figure; in text mode print it at once (a long bench shows progress)."""
        if isinstance(value, float):
            value = round(value, 4 if abs(value) < 10 else 2)
        self.values[name] = {"value": value, "unit": unit}
        if not self.json_mode:
            print(f"{name}: {value} {unit}".rstrip(), flush=True)
        return value

    def emit(self) -> None:
        """Print the JSON object (``--json``); nothing more in text mode."""
        if self.json_mode:
            print(json.dumps(self.values, indent=1))


def log(msg: str) -> None:
    """Progress notes go to stderr so that stdout holds only figures."""
    print(msg, file=sys.stderr, flush=True)


def run_until(app: Any, done: Callable[[], bool], timeout_s: float, step_ms: int = 20) -> bool:
    """Run ``app``'s event loop until ``done()`` (True) or ``timeout_s`` passes (False): how a benchmark waits for
    the real window without sleeping."""
    from PySide6.QtCore import QEventLoop

    end = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > end:
            return False
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, step_ms)
    return True


def open_window(root: Path, annotator: str | None = None) -> tuple[Any, Any] | None:
    """(app, main window) with ``root`` opened and its library read, as a user would have it; None (logged)
    when the scan does not finish in five minutes."""
    from gui_app.qt.app import make_app
    from gui_app.qt.main_window import MainWindow

    app = make_app([sys.argv[0]])
    win = MainWindow()
    win.resize(1400, 860)
    win.show()
    if annotator:
        win.set_annotator(annotator)
    scanned: list = []
    win.scanner.scanned.connect(scanned.append)
    win.open_path(root)
    if not run_until(app, lambda: bool(scanned) and not win.library.model.pending, 300):
        log("scan did not finish")
        return None
    return app, win


def rss_mb(pid: int | None = None) -> float:
    """Resident memory of this process (or of process ``pid``) in MiB (Linux ``/proc``; 0 where unavailable)."""
    return _status_kb("VmRSS", pid) / 1024


def peak_rss_mb(pid: int | None = None) -> float:
    """Peak resident memory of this process (or of process ``pid``) in MiB."""
    return _status_kb("VmHWM", pid) / 1024


def _status_kb(field: str, pid: int | None = None) -> float:
    try:
        for line in Path(f"/proc/{pid or 'self'}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        pass
    return 0.0


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
