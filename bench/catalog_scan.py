"""Benchmark of the library at scale: a generated corpus of N runs in mixed formats, scanned, rescanned, queried and
opened in the app.

The corpus (``--n``, default 10,000; ``--quick``: 1,000; the issue's size: ``--n 100000``) is generated under
``data/bench/catalog_scan/nN`` and reused when present: 70% native trajectory folders, 20% OSWorld result folders
(``traj.jsonl`` and ``result.txt``, task configs with the instructions under ``evaluation_examples/``), 10% ATIF
files, 500 to a folder, plus 0.5% broken units of every format (truncated JSON, a schema violation, bad step
indices, non-UTF-8 bytes, an empty file, a truncated ``traj.jsonl``, an OSWorld step number that is text, an ATIF
step of an unknown source). No media: this measures the catalog, not decoding.

Measured, into the library's own catalog (``ROOT/.rollscope/catalog.sqlite``, what ``rollscope open ROOT`` opens):

- cold scan; rescan with nothing changed (target <= 5 s: folders skipped by their modification time and entries,
  units by their stat, nothing read); rescan with 1% changed (0.8% of the runs edited in place, 0.2% new runs; undone
  afterwards, so the corpus stays reusable);
- the library query as the library view asks for it (the count and the first page of 200 rows) and whole (every
  row, as a queue or a scoring run takes them): cold (a freshly opened catalog for every repetition, its first
  query; answered in SQL) in the default order, searched (words of 3+ characters, found through the text index, and
  a word of 2, looked for in every row's text), filtered, sorted by a column, and all three at once; and warm (the
  rows cached as the background reader leaves them; every call a new order, search or filter), median and p95
  (targets at p95: cold <= 50 ms, warm <= 10 ms), with half of the runs scored;
- the app (``--app-runs``, default 3; 0: skipped): ``rollscope open ROOT`` in a process of its own (offscreen, fresh
  settings), the time from starting the process to the first library rows painted (target <= 1 s), and its resident
  memory once the rescan it starts has ended and the rows are read again (target <= 400 MB); then a search typed
  into the library's box: the time until its rows are shown (150 ms of it the box's debounce), and the memory then;
- scoring throughput, local and on Ray (``--scoring``): ``bench/cluster_scoring.py``, on the bundled samples (the
  generated runs hold no media to score).

Then a library of E empty folders (``--empty-folders``, default 50,000; ``--quick``: 5,000; 0: skipped) is scanned
cold and rescanned unchanged: the walk alone.

CPU time (this process; the app's own for the app) is printed beside wall time: the bench machine is shared, and
under load the wall time includes waiting for a core. The 1-minute load average before and after is printed too.

Usage: ``python bench/catalog_scan.py [--quick] [--json] [--n N] [--dir DIR] [--app-runs K] [--scoring]
[--empty-folders E]``; ``--queries-only DB``: only the queries, of an existing catalog (copy it first: opening it
brings its schema up to date).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gui_app.core.trajectory.formats import native  # noqa: E402
from gui_app.core.library.catalog import CATALOG_DIR, Catalog  # noqa: E402
from gui_app.core.scoring.score import Score  # noqa: E402
from gui_app.core.trajectory.model import Outcome, Step, Trajectory  # noqa: E402

QUERY_COLD_TARGET_MS = 50.0  # p95
QUERY_WARM_TARGET_MS = 10.0  # p95
RESCAN_TARGET_S = 5.0
FIRST_ROWS_TARGET_S = 1.0
APP_MEMORY_TARGET_MB = 400.0
PAGE = 200  # rows of the library view's first page (gui_app.qt.library_view.PAGE_SIZE)
GROUP = 500  # runs to a folder
_WORDS = ("open", "click", "the", "settings", "menu", "type", "search", "box", "email", "send", "button", "tab",
          "select", "option", "file", "save", "close", "window", "scroll", "down", "enter", "name", "form", "submit")
_APPS = ("chrome", "libreoffice_calc", "gimp", "vs_code", "thunderbird", "os", "miniwob")
_DOMAINS = ("chrome", "gimp", "libreoffice_calc", "os", "thunderbird", "vs_code")
_NS = uuid.UUID("0f3c1b8e-2a4d-4e6b-9c1d-5a7e8f9b0c2d")
# Broken units: (format folder, kind, relative file, content).
_BROKEN: tuple[tuple[str, str, str, bytes], ...] = (
    ("native", "truncated_json", native.FILENAME, b'{"schema_version": 1, "id": "x", "steps": [{"index": 0, "act'),
    ("native", "missing_id", native.FILENAME, b'{"schema_version": 1, "steps": []}'),
    ("native", "bad_indices", native.FILENAME, b'{"schema_version": 1, "id": "x", "steps": [{"index": 1}]}'),
    ("native", "not_utf8", native.FILENAME, b'{"schema_version": 1, "id": "\xff\xfe", "steps": []}'),
    ("native", "empty_file", native.FILENAME, b""),
    ("osworld", "truncated_jsonl", "traj.jsonl", b'{"step_num": 1, "action_timestamp": "20240101@1200'),
    ("osworld", "step_num_text", "traj.jsonl",
     b'{"step_num": "one", "action_timestamp": "20240101@120000000000", "action": "WAIT"}\n'),
    ("atif", "unknown_source", "trial.json",
     b'{"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "a"}, '
     b'"steps": [{"step_id": 1, "source": "robot", "message": "hi"}]}'),
)


# -- the corpus ------------------------------------------------------------------------------------------------------

def _kind(i: int) -> str:
    """The format of run ``i``: 7 in 10 native, 2 OSWorld, 1 ATIF."""
    r = i % 10
    return "native" if r < 7 else "osworld" if r < 9 else "atif"


def _instruction(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12))).capitalize()


def _trajectory(i: int, rng: random.Random) -> Trajectory:
    n = rng.randint(3, 12)
    steps = [Step(index=j, t_start=2.0 * j, t_end=2.0 * j + 1.5, action=f"pyautogui.click(x={rng.randint(0, 1919)}, "
                  f"y={rng.randint(0, 1079)})", action_type="click", x=0.0, y=0.0, thought="next") for j in range(n)]
    app = rng.choice(_APPS)
    return Trajectory(
        id=f"bench-{i:06d}",
        instruction=_instruction(rng),
        steps=steps,
        outcome=Outcome(success=rng.choice((True, False, None)), score=rng.random(), source="env"),
        app=app,
        metadata={"task": f"{app}/task-{rng.randint(0, 49):02d}"},
    )


def _native_files(i: int, rng: random.Random, d: Path) -> dict[Path, bytes]:
    """A native trajectory: the document ``native.save`` writes (checked against the schema), without its fsync,
    which would make generating 100,000 of them take a quarter of an hour."""
    doc = native.to_document(_trajectory(i, rng), d)
    native.validate(doc, d / native.FILENAME)
    return {d / native.FILENAME: json.dumps(doc, indent=1, ensure_ascii=False).encode()}


def _osworld_files(i: int, rng: random.Random, root: Path) -> dict[Path, bytes]:
    """An OSWorld result folder (``results/pyautogui/screenshot/<model>/<domain>/<example id>/``) and its task
    config (``evaluation_examples/examples/<domain>/<example id>.json``), as OSWorld's lib_run_single writes them."""
    domain = rng.choice(_DOMAINS)
    eid = str(uuid.uuid5(_NS, f"osworld-{i}"))
    run = root / "results" / "pyautogui" / "screenshot" / f"model-{i // (10 * GROUP):03d}" / domain / eid
    lines = []
    n_steps = rng.randint(3, 12)
    for j in range(n_steps):
        stamp = f"20250101@{10 + j // 60:02d}{j % 60:02d}00{rng.randint(0, 999999):06d}"
        last = j == n_steps - 1
        lines.append(json.dumps({"step_num": j + 1, "action_timestamp": stamp,
                                 "action": f"pyautogui.click({rng.randint(0, 1919)}, {rng.randint(0, 1079)})",
                                 "response": "next", "reward": 0, "done": last, "info": {},
                                 "screenshot_file": f"step_{j + 1}_{stamp}.png"}))
    config = {"id": eid, "snapshot": domain, "instruction": _instruction(rng), "config": [], "related_apps": [domain],
              "evaluator": {"func": "exact_match"}}
    return {run / "traj.jsonl": ("\n".join(lines) + "\n").encode(),
            run / "result.txt": f"{float(rng.random() < 0.4)}\n".encode(),
            root / "evaluation_examples" / "examples" / domain / f"{eid}.json": json.dumps(config).encode()}


def _atif_files(i: int, rng: random.Random, d: Path) -> dict[Path, bytes]:
    """An ATIF v1.6 file: the instruction as the user's step, one computer-tool call per agent step."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": _instruction(rng)}]
    for j in range(rng.randint(3, 12)):
        cid = f"toolu_{j:03d}"
        steps.append({"step_id": j + 2, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": cid, "function_name": "computer",
                                      "arguments": {"action": "left_click",
                                                    "coordinate": [rng.randint(0, 1919), rng.randint(0, 1079)]}}],
                      "observation": {"results": [{"source_call_id": cid, "content": "ok"}]}})
    doc = {"schema_version": "ATIF-v1.6", "session_id": str(uuid.uuid5(_NS, f"atif-{i}")),
           "agent": {"name": "bench-agent", "version": "1", "model_name": f"model-{i % 7}"}, "steps": steps}
    return {d / f"run-{i:06d}.json": json.dumps(doc).encode()}


def _unit_files(i: int, root: Path) -> dict[Path, bytes]:
    """The files of run ``i`` and their content: the same every time (each run draws from its own generator), so a
    change can find a run's files again."""
    rng = random.Random(i)
    kind = _kind(i)
    group = f"g{i // GROUP:04d}"
    if kind == "native":
        return _native_files(i, rng, root / "native" / group / f"t{i:06d}")
    if kind == "osworld":
        return _osworld_files(i, rng, root / "osworld")
    return _atif_files(i, rng, root / "atif" / group)


def _write(files: dict[Path, bytes]) -> None:
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def generate(root: Path, n: int, n_broken: int) -> Path:
    """N runs in mixed formats plus ``n_broken`` broken units under ``root`` (reused when complete)."""
    stamp = root / ".complete"
    if stamp.is_file() and stamp.read_text().strip() == f"mixed {n} {n_broken}":
        return root
    if root.exists():
        shutil.rmtree(root)
    for i in range(n):
        _write(_unit_files(i, root))
        if i and i % 10_000 == 0:
            print(f"generated {i:,} of {n:,}", file=sys.stderr, flush=True)
    for j in range(n_broken):
        fmt, kind, name, content = _BROKEN[j % len(_BROKEN)]
        unit = root / "broken" / fmt / f"{kind}-{j:04d}"
        _write({unit.with_suffix(".json") if fmt == "atif" else unit / name: content})
    stamp.write_text(f"mixed {n} {n_broken}")
    return root


class Change:
    """1% of the corpus changed: 0.8% of the runs edited in place (a new instruction, an added step) and 0.2% new
    runs beside them; :meth:`undo` puts the corpus back as it was generated."""

    def __init__(self, root: Path, n: int):
        rng = random.Random(2)
        n_changed = max(1, n // 100)
        n_new = max(1, n_changed // 5)
        self.saved: dict[Path, bytes] = {}
        self.added: list[Path] = []
        for i in rng.sample(range(n), n_changed - n_new):
            files = _unit_files(i, root)
            main = next(p for p in files if p.name != "result.txt" and "evaluation_examples" not in p.parts)
            old = main.read_bytes()
            self.saved[main] = old
            if main.name == "traj.jsonl":  # the run went on: one more step
                new = old + old.splitlines(keepends=True)[-1]
            else:  # the instruction was rewritten
                new = old.replace(b'"instruction": "', b'"instruction": "Edited: ', 1).replace(
                    b'"message": "', b'"message": "Edited: ', 1)
            main.write_bytes(new)
        for i in range(n, n + n_new):
            files = _unit_files(i, root)
            _write(files)
            self.added += files
        self.n = len(self.saved) + n_new

    def undo(self) -> None:
        for path, content in self.saved.items():
            path.write_bytes(content)
        for path in self.added:
            path.unlink(missing_ok=True)
        for path in self.added:
            if path.name in (native.FILENAME, "traj.jsonl"):  # the run's own folder, now empty
                path.parent.rmdir()


def generate_empty(root: Path, n: int) -> Path:
    """``n`` empty folders under ``root``, 1,000 to a group folder."""
    stamp = root / ".complete"
    if stamp.is_file() and stamp.read_text().strip() == str(n):
        return root
    if root.exists():
        shutil.rmtree(root)
    for i in range(n):
        (root / f"g{i // 1000:03d}" / f"e{i:06d}").mkdir(parents=True)
    stamp.write_text(str(n))
    return root


def empty_folders(base: Path, n: int) -> dict[str, float | int]:
    """Cold scan and unchanged rescan of ``n`` empty folders into a fresh catalog."""
    root = generate_empty(base / f"empty{n}", n)
    db = base / f"empty{n}.catalog.sqlite"
    _remove_db(db)
    with Catalog(db) as cat:
        cold = cat.scan(root)
        c0 = time.process_time()
        again = cat.scan(root)
        cpu = time.process_time() - c0
    return {"empty_folders": n, "empty_cold_scan_s": round(cold.seconds, 3), "empty_rescan_s": round(again.seconds, 3),
            "empty_rescan_cpu_s": round(cpu, 3), "empty_rescan_units": again.units}


def _remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


# -- timing ----------------------------------------------------------------------------------------------------------

def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def _timed(fn: Callable[[], Any], reps: int, before: Callable[[], Any] | None = None) -> dict[str, float]:
    """Median and p95 wall time and median CPU time (this process) of ``reps`` calls, in ms; ``before`` runs untimed
    before each. The CPU time is printed beside the wall time because the bench machine is shared: under load the
    wall time includes waiting for a core, the CPU time does not."""
    ts, cpu = [], []
    for _ in range(reps):
        if before is not None:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        ts.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {"median": round(statistics.median(ts), 2), "p95": round(_p95(ts), 2),
            "cpu_median": round(statistics.median(cpu), 2)}


def _scan(cat: Catalog, root: Path, prefix: str) -> dict[str, Any]:
    c0 = time.process_time()
    report = cat.scan(root)
    cpu = time.process_time() - c0
    return {f"{prefix}_s": round(report.seconds, 3), f"{prefix}_cpu_s": round(cpu, 3),
            f"{prefix}_units": report.units, f"{prefix}_skipped": report.skipped,
            f"{prefix}_trajectories": report.trajectories, f"{prefix}_errors": len(report.errors)}


def _score_half(cat: Catalog) -> float:
    """Scores for every other row (as a scoring run leaves them); ms per ``set_score``."""
    rng = random.Random(1)
    keys = cat.keys()[::2]
    t0 = time.perf_counter()
    for k in keys:
        n_steps = rng.randint(3, 12)
        p = rng.random()
        cat.set_score(k, Score(p_success=p, threshold=0.5, success=p >= 0.5,
                               first_error_step=rng.choice((None, rng.randint(0, n_steps - 1))),
                               step_scores=[rng.random() for _ in range(n_steps)], model="bench-model",
                               tokens_kept=400, tokens_total=3000))
    return (time.perf_counter() - t0) * 1000 / max(1, len(keys))


def scans(root: Path, db: Path, n: int) -> dict[str, Any]:
    """Cold scan, rescan unchanged, rescan with 1% changed into a fresh catalog at ``db``; then half the runs
    scored."""
    figures: dict[str, Any] = {}
    _remove_db(db)
    with Catalog(db) as cat:
        figures.update(_scan(cat, root, "cold_scan"))
        figures["cold_scan_units_per_s"] = round(figures["cold_scan_units"] / figures["cold_scan_s"], 1)
        figures.update(_scan(cat, root, "rescan"))
        figures["rescan_meets_target"] = figures["rescan_s"] <= RESCAN_TARGET_S
        change = Change(root, n)
        try:
            figures["changed_units"] = change.n
            figures.update(_scan(cat, root, "rescan_changed"))
        finally:
            change.undo()
        cat.scan(root)  # back to the corpus as generated
        figures["set_score_ms_per_call"] = round(_score_half(cat), 3)
        figures["rows"] = len(cat)
    return figures


# The library's kinds of query, asked of a freshly opened catalog: (name, text, filters, order_by). A word of 3
# characters or more and one of 2 (shorter than the trigrams the catalog's text index holds, so answered otherwise).
_COLD_QUERIES = (("default", "", None, "instruction"),
                 ("searched", "click settings", None, "instruction"),
                 ("searched_2char", "ta", None, "instruction"),
                 ("filtered", "", {"success": True, "scored": True}, "instruction"),
                 ("sorted", "", None, "duration"),
                 ("searched_filtered_sorted", "settings", {"success": True, "scored": True}, "duration"))


def _page(cat: Catalog, text: str, filters: dict[str, Any] | None, order_by: str, descending: bool = False) -> None:
    """What the library view reads for a query: the count and the first page."""
    cat.count(text, filters)
    cat.query(text, filters, order_by, descending, limit=PAGE)


def _whole(cat: Catalog, text: str, filters: dict[str, Any] | None, order_by: str, descending: bool = False) -> None:
    cat.query(text, filters, order_by, descending)


def queries(db: Path, reps: int) -> dict[str, Any]:
    """The library query cold and warm (see the module docstring)."""
    out: dict[str, Any] = {}
    opened: list[Catalog] = []

    def reopen() -> None:
        while opened:
            opened.pop().close()
        opened.append(Catalog(db))

    # Cold: a fresh Catalog for every repetition (its rows not read yet), then its first query.
    for name, text, filters, order_by in _COLD_QUERIES:
        for shape, fn in (("page", _page), ("whole", _whole)):
            t = _timed(lambda: fn(opened[-1], text, filters, order_by), reps, before=reopen)
            out.update({f"query_cold_{name}_{shape}_ms_{k}": v for k, v in t.items()})
    while opened:
        opened.pop().close()

    # Warm: the rows are read, with what a search derives from them (their search texts, their outcome words), as
    # the library's first query leaves them in the background (Catalog.warm). Every call asks something not asked
    # before: a search holds a word never searched (a run number), a filter a threshold never used, so no result is
    # remembered; what a query derives for the next one (a column's order, a filter column, a searched word) is, as
    # in the app. Sorting is measured twice: re-sorting by columns sorted before (a header clicked back and forth),
    # and the first sort by each column and direction.
    rng = random.Random(3)
    with Catalog(db) as cat:
        cat.warm()
        combos = list(itertools.product(("instruction", "task", "p_success", "n_steps", "duration", "format"),
                                        (False, True)))
        first = iter(combos)
        t = _timed(lambda: _page(cat, "", None, *next(first)), len(combos))
        out.update({f"query_first_sort_by_column_ms_{k}": v for k, v in t.items()})
        columns = itertools.cycle(combos)
        common = itertools.cycle(("click", "settings", "open menu", "save", "failure", "chrome", "email", "", "ta"))
        numbers = iter(rng.sample(range(100, 1000), 900))
        flip = itertools.cycle((True, False, None))
        warm: dict[str, Callable[[Callable[..., None]], Callable[[], None]]] = {
            "sorted": lambda fn: lambda: fn(cat, "", None, *next(columns)),
            "searched": lambda fn: lambda: fn(cat, f"{next(numbers)} {next(common)}", None, "instruction"),
            "filtered": lambda fn: lambda: fn(cat, "", {"success": next(flip), "min_p_success": rng.random()},
                                              "instruction"),
        }
        for name, make in warm.items():
            for shape, fn in (("page", _page), ("whole", _whole)):
                t = _timed(make(fn), reps)
                out.update({f"query_warm_{name}_{shape}_ms_{k}": v for k, v in t.items()})
        pages = itertools.cycle(range(0, len(cat), PAGE))
        t = _timed(lambda: cat.query(order_by="task", limit=PAGE, offset=next(pages)), reps)
        out["query_next_page_ms_p95"] = t["p95"]
    cold_p95 = max(v for k, v in out.items() if k.startswith("query_cold_") and k.endswith("_page_ms_p95"))
    warm_p95 = max(v for k, v in out.items() if k.startswith("query_warm_") and k.endswith("_page_ms_p95"))
    out.update({"query_cold_page_worst_p95_ms": cold_p95, "query_cold_meets_target": cold_p95 <= QUERY_COLD_TARGET_MS,
                "query_warm_page_worst_p95_ms": warm_p95, "query_warm_meets_target": warm_p95 <= QUERY_WARM_TARGET_MS})
    return out


# -- the app ---------------------------------------------------------------------------------------------------------

def app_child(root: str, started: float) -> int:
    """``rollscope open ROOT`` as the command runs it, watched from inside: prints one JSON line with the seconds
    from ``started`` (the parent's clock when it started this process) to the first paint of the library table with
    rows in it, to the end of the rescan the app starts, and the resident memory then."""
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication

    from gui_app.cli import main as cli_main
    from gui_app.qt.app import make_app
    from gui_app.qt.main_window import MainWindow

    got: dict[str, float] = {}
    app = make_app()

    class Painted(QObject):
        def __init__(self, win: MainWindow):
            super().__init__(win)
            self.win = win

        def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 -- Qt's name
            if event.type() == QEvent.Type.Paint and "first_rows_s" not in got \
                    and self.win.library.model.rowCount() > 0:
                got["first_rows_s"] = time.time() - started
                got["first_rows_rss_mb"] = _rss_mb()
            return False

    def attach() -> None:  # the first turn of the event loop: the window is built, the library opening
        win = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))
        win.library.table.viewport().installEventFilter(Painted(win))

        def scanned(_report: object) -> None:
            got["scan_ended_s"] = time.time() - started
            settle()

        def settle() -> None:  # the rows are read again after the scan (in a worker): wait for them
            if win.library.model.pending or "first_rows_s" not in got:
                QTimer.singleShot(20, settle)
                return
            got["rows_read_s"] = time.time() - started
            got["rows"] = win.library.model.rowCount()
            got["rss_mb"] = _rss_mb()
            got["peak_rss_mb"] = _status_kb("VmHWM") / 1024
            got["cpu_s"] = time.process_time()
            search()

        def search() -> None:  # a search typed into the library's box: shown after its debounce and the query
            typed = time.time()

            def shown() -> None:
                if win.library.model.pending or win.library.model.rowCount() >= got["rows"]:
                    QTimer.singleShot(10, shown)
                    return
                got["search_shown_s"] = time.time() - typed
                got["search_rss_mb"] = _rss_mb()
                print(json.dumps(got), flush=True)
                win.close()

            win.library.search.setText("click settings")
            shown()

        win.scanner.scanned.connect(scanned)

    QTimer.singleShot(0, attach)
    app.setQuitOnLastWindowClosed(True)
    return cli_main(["open", root])


def _status_kb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    return 0.0


def _rss_mb() -> float:
    return _status_kb("VmRSS") / 1024


def app_runs(root: Path, runs: int, timeout_s: float = 900) -> dict[str, Any]:
    """``runs`` app processes on ``root`` (see :func:`app_child`): first rows and memory, median and worst."""
    results = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ROLLSCOPE_CONFIG_DIR": f"{home}/config",
                   "XDG_CONFIG_HOME": f"{home}/xdg", "ROLLSCOPE_CACHE_DIR": f"{home}/cache"}
            started = time.time()
            res = subprocess.run([sys.executable, __file__, "--app-child", str(root), str(started)], env=env,
                                 capture_output=True, text=True, timeout=timeout_s)
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
        if res.returncode != 0 or not lines:
            return {"app_error": (res.stderr or res.stdout)[-2000:]}
        results.append(json.loads(lines[-1]))
    out: dict[str, Any] = {"app_runs": runs, "app_rows": results[-1]["rows"]}
    for k in ("first_rows_s", "first_rows_rss_mb", "scan_ended_s", "rows_read_s", "rss_mb", "peak_rss_mb", "cpu_s",
              "search_shown_s", "search_rss_mb"):
        xs = [r[k] for r in results]
        out[f"app_{k}_median"] = round(statistics.median(xs), 3)
        out[f"app_{k}_max"] = round(max(xs), 3)
    out["app_first_rows_meets_target"] = out["app_first_rows_s_max"] <= FIRST_ROWS_TARGET_S
    out["app_memory_meets_target"] = out["app_rss_mb_max"] <= APP_MEMORY_TARGET_MB
    return out


def scoring(quick: bool) -> dict[str, Any]:
    """Scoring throughput from ``bench/cluster_scoring.py`` (local and on Ray), run as it is; its error when the
    model cannot score here (weights of another feature version, Ray missing)."""
    res = subprocess.run([sys.executable, str(REPO / "bench" / "cluster_scoring.py"), "--json",
                          *(["--quick"] if quick else [])], capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        return {"scoring_error": (res.stderr.strip().splitlines() or ["failed"])[-1]}
    start = res.stdout.index("{")
    return {f"scoring_{k}": v["value"] for k, v in json.loads(res.stdout[start:]).items()}


# -- main ------------------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 runs, fewer repetitions, no app, no scoring")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--n", type=int, default=None, help="runs in the corpus (default 10,000; --quick 1,000)")
    ap.add_argument("--dir", type=Path, default=None, help="where to generate (default data/bench/catalog_scan)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions of each query (default 30; --quick 10)")
    ap.add_argument("--app-runs", type=int, default=None, help="app processes to time (default 3; --quick 0)")
    ap.add_argument("--scoring", action="store_true", help="also run bench/cluster_scoring.py (minutes)")
    ap.add_argument("--reuse-catalog", action="store_true",
                    help="keep the catalog a previous run left (scans and scores skipped): queries and the app only")
    ap.add_argument("--queries-only", type=Path, default=None, metavar="DB",
                    help="only the queries, of this existing catalog (nothing generated, scanned or opened in the app)")
    ap.add_argument("--empty-folders", type=int, default=None,
                    help="empty folders to scan and rescan (default 50,000; --quick 5,000; 0: skip)")
    ap.add_argument("--app-child", nargs=2, metavar=("ROOT", "STARTED"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.app_child:
        return app_child(args.app_child[0], float(args.app_child[1]))
    if args.queries_only:
        return _print(queries_only(args.queries_only, args.reps or 30), args.json)
    n = args.n or (1_000 if args.quick else 10_000)
    n_broken = max(len(_BROKEN), n // 200)
    reps = args.reps or (10 if args.quick else 30)
    n_apps = args.app_runs if args.app_runs is not None else (0 if args.quick else 3)
    n_empty = args.empty_folders if args.empty_folders is not None else (5_000 if args.quick else 50_000)
    base = args.dir or REPO / "data" / "bench" / "catalog_scan"
    root = base / f"n{n}"
    figures: dict[str, Any] = {"n_runs": n, "n_broken_units": n_broken, "cpu_count": os.cpu_count(),
                               "load_average_1min_before": round(os.getloadavg()[0], 2)}

    t0 = time.perf_counter()
    generate(root, n, n_broken)
    figures["generate_s"] = round(time.perf_counter() - t0, 2)

    db = root / CATALOG_DIR / "catalog.sqlite"  # the library's own: what the app opens
    if not (args.reuse_catalog and db.is_file()):
        figures.update(scans(root, db, n))
    figures.update(queries(db, reps))
    if n_apps:
        figures.update(app_runs(root, n_apps))
    if args.scoring:
        figures.update(scoring(args.quick))
    if n_empty:
        figures.update(empty_folders(base, n_empty))
    figures["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    return _print(figures, args.json)


def queries_only(db: Path, reps: int) -> dict[str, Any]:
    """The queries of an existing catalog (``--queries-only``), with its row count and the load around them."""
    if not db.is_file():
        raise SystemExit(f"{db}: no such catalog")
    figures: dict[str, Any] = {"cpu_count": os.cpu_count(), "load_average_1min_before": round(os.getloadavg()[0], 2)}
    with Catalog(db) as cat:
        figures["rows"] = len(cat)
    figures.update(queries(db, reps))
    figures["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    return figures


def _print(figures: dict[str, Any], as_json: bool) -> int:
    """The figures as one JSON object, or one per line."""
    if as_json:
        print(json.dumps(figures))
    else:
        width = max(map(len, figures))
        for name, value in figures.items():
            print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
