"""Benchmark of the catalog: cold scan, rescan and the library query over 10,000 trajectories.

Generates N small native trajectories (no media; ``--quick``: 1,000) plus a few broken units (truncated JSON, a
schema violation, bad step indices, non-UTF-8 bytes, an empty file) under ``data/bench/catalog_scan/nN`` (reused
when present), scans them into a fresh catalog, rescans without changes, records reward-model scores for half of
them and times the library query (all rows, sorted, latest score joined) with and without a text search.

Then a library of E empty folders (``--empty-folders``, default 50,000; ``--quick``: 5,000; 0: skipped) is scanned
cold and rescanned unchanged: the walk alone, which a rescan skips for every folder whose modification time and
entries did not change.

Usage: ``python bench/catalog_scan.py [--quick] [--json] [--dir DIR] [--empty-folders E]``. Prints named figures; the
query target is <= 50 ms median for 10,000 rows.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gui_app.core.trajectory.formats import native  # noqa: E402
from gui_app.core.library.catalog import Catalog  # noqa: E402
from gui_app.core.scoring.score import Score  # noqa: E402
from gui_app.core.trajectory.model import Outcome, Step, Trajectory  # noqa: E402

QUERY_TARGET_MS = 50.0
_WORDS = ("open", "click", "the", "settings", "menu", "type", "search", "box", "email", "send", "button", "tab",
          "select", "option", "file", "save", "close", "window", "scroll", "down", "enter", "name", "form", "submit")
_APPS = ("chrome", "libreoffice_calc", "gimp", "vs_code", "thunderbird", "os", "miniwob")
_BROKEN = {
    "truncated_json": b'{"schema_version": 1, "id": "x", "steps": [{"index": 0, "act',
    "missing_id": b'{"schema_version": 1, "steps": []}',
    "bad_indices": b'{"schema_version": 1, "id": "x", "steps": [{"index": 1}]}',
    "not_utf8": b'{"schema_version": 1, "id": "\xff\xfe", "steps": []}',
    "empty_file": b"",
}


def _trajectory(i: int, rng: random.Random) -> Trajectory:
    n = rng.randint(3, 12)
    steps = [Step(index=j, t_start=2.0 * j, t_end=2.0 * j + 1.5, action=f"pyautogui.click(x={rng.randint(0, 1919)}, "
                  f"y={rng.randint(0, 1079)})", action_type="click", x=0.0, y=0.0, thought="next") for j in range(n)]
    app = rng.choice(_APPS)
    return Trajectory(
        id=f"bench-{i:05d}",
        instruction=" ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12))).capitalize(),
        steps=steps,
        outcome=Outcome(success=rng.choice((True, False, None)), score=rng.random(), source="env"),
        app=app,
        metadata={"task": f"{app}/task-{rng.randint(0, 49):02d}"},
    )


def generate(root: Path, n: int, n_broken: int) -> Path:
    """N native trajectories (written with ``native.save``) plus ``n_broken`` broken units under ``root``."""
    stamp = root / ".complete"
    if stamp.is_file() and stamp.read_text().strip() == f"{n} {n_broken}":
        return root
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(0)
    for i in range(n):
        native.save(_trajectory(i, rng), root / f"g{i // 500:03d}" / f"t{i:05d}")
    kinds = list(_BROKEN.items())
    for j in range(n_broken):
        kind, content = kinds[j % len(kinds)]
        d = root / "broken" / f"{kind}-{j:03d}"
        d.mkdir(parents=True)
        (d / native.FILENAME).write_bytes(content)
    stamp.write_text(f"{n} {n_broken}")
    return root


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
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with Catalog(db) as cat:
        cold = cat.scan(root)
        c0 = time.process_time()
        again = cat.scan(root)
        cpu = time.process_time() - c0
    return {"empty_folders": n, "empty_cold_scan_s": round(cold.seconds, 3), "empty_rescan_s": round(again.seconds, 3),
            "empty_rescan_cpu_s": round(cpu, 3), "empty_rescan_units": again.units}


def _timed(fn, reps: int, before=None) -> tuple[float, float, int, float]:
    """(median ms, p95 ms, result length, median CPU ms) of ``reps`` calls; ``before`` runs untimed before each.

    The CPU time (this process only) is printed beside the wall time because the bench machine is shared: under
    load the wall time includes waiting for a core, the CPU time does not.
    """
    ts, cpu, out = [], [], None
    for _ in range(reps):
        if before is not None:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        ts.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    ts.sort()
    return (statistics.median(ts), ts[min(len(ts) - 1, int(round(0.95 * (len(ts) - 1))))], len(out),
            statistics.median(cpu))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 trajectories instead of 10,000")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--dir", type=Path, default=None, help="where to generate (default data/bench/catalog_scan)")
    ap.add_argument("--empty-folders", type=int, default=None,
                    help="empty folders to scan and rescan (default 50,000; --quick 5,000; 0: skip)")
    args = ap.parse_args(argv)
    n = 1_000 if args.quick else 10_000
    n_broken = max(5, n // 200)
    reps = 15 if args.quick else 30
    n_empty = args.empty_folders if args.empty_folders is not None else (5_000 if args.quick else 50_000)
    root = (args.dir or REPO / "data" / "bench" / "catalog_scan") / f"n{n}"

    t0 = time.perf_counter()
    generate(root, n, n_broken)
    gen_s = time.perf_counter() - t0

    db = root.parent / f"n{n}.catalog.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    cat = Catalog(db)
    c0 = time.process_time()
    cold = cat.scan(root)
    cold_cpu = time.process_time() - c0
    c0 = time.process_time()
    warm = cat.scan(root)
    warm_cpu = time.process_time() - c0

    rng = random.Random(1)
    keys = cat.keys()
    scored = keys[::2]
    t0 = time.perf_counter()
    for k in scored:
        n_steps = rng.randint(3, 12)
        p = rng.random()
        cat.set_score(k, Score(p_success=p, threshold=0.5, success=p >= 0.5,
                               first_error_step=rng.choice((None, rng.randint(0, n_steps - 1))),
                               step_scores=[rng.random() for _ in range(n_steps)], model="bench-model",
                               tokens_kept=400, tokens_total=3000))
    set_score_ms = (time.perf_counter() - t0) * 1000 / max(1, len(scored))

    # Cold: the first query of a freshly opened catalog, which builds every row from SQLite.
    fresh: list[Catalog] = [cat]

    def reopen():
        if fresh[-1] is not cat:
            fresh[-1].close()
        fresh.append(Catalog(db))

    q_cold = _timed(lambda: fresh[-1].query(order_by="instruction"), reps, before=reopen)
    q_cold_search = _timed(lambda: fresh[-1].query("click settings", order_by="instruction"), reps, before=reopen)
    fresh[-1].close()
    # After a score lands (as during a scoring run): the new score is patched into the cached rows.
    cat.query()
    bump = iter(range(10**9))

    def after_score():
        cat.set_score(keys[next(bump) % len(keys)], Score(p_success=rng.random(), model="bench-model"))

    q_scored = _timed(lambda: cat.query(order_by="p_success", descending=True), reps, before=after_score)
    # Warm: re-sorting, searching and filtering the same data, as the library does on every click and keystroke.
    # Each call differs from the one before (the order flips, the search text changes), so none is answered
    # from the remembered last result; paging through one order is measured on its own.
    flip = itertools.cycle((False, True))
    words = itertools.cycle(("click settings", "open menu", "save file", "search box", "send email", "tab"))
    success = itertools.cycle((False, True))
    q_all = _timed(lambda: cat.query(order_by="instruction", descending=next(flip)), reps)
    q_psucc = _timed(lambda: cat.query(order_by="p_success", descending=next(flip)), reps)
    q_search = _timed(lambda: cat.query(next(words), order_by="instruction"), reps)
    q_filter = _timed(lambda: cat.query(filters={"success": next(success), "scored": True}, order_by="duration"), reps)
    pages = itertools.cycle(range(0, n, 200))
    q_page = _timed(lambda: cat.query(order_by="task", limit=200, offset=next(pages)), reps)
    q_count = _timed(lambda: [cat.count("click settings")], reps)
    cat.close()

    figures = {
        "n_trajectories": n,
        "n_broken_units": n_broken,
        "generate_s": round(gen_s, 2),
        "cold_scan_s": round(cold.seconds, 3),
        "cold_scan_units_per_s": round(cold.units / cold.seconds, 1),
        "cold_scan_cpu_s": round(cold_cpu, 3),
        "cold_scan_trajectories": cold.trajectories,
        "cold_scan_errors": len(cold.errors),
        "rescan_s": round(warm.seconds, 3),
        "rescan_cpu_s": round(warm_cpu, 3),
        "rescan_skipped": warm.skipped,
        "set_score_ms_per_call": round(set_score_ms, 3),
        "query_rows": q_all[2],
        "query_cold_sorted_ms_median": round(q_cold[0], 2),
        "query_cold_sorted_ms_p95": round(q_cold[1], 2),
        "query_cold_sorted_cpu_ms_median": round(q_cold[3], 2),
        "query_cold_search_rows": q_cold_search[2],
        "query_cold_search_ms_median": round(q_cold_search[0], 2),
        "query_cold_search_ms_p95": round(q_cold_search[1], 2),
        "query_after_score_ms_median": round(q_scored[0], 2),
        "query_after_score_ms_p95": round(q_scored[1], 2),
        "query_sorted_ms_median": round(q_all[0], 2),
        "query_sorted_ms_p95": round(q_all[1], 2),
        "query_sorted_cpu_ms_median": round(q_all[3], 2),
        "query_by_p_success_ms_median": round(q_psucc[0], 2),
        "query_by_p_success_ms_p95": round(q_psucc[1], 2),
        "query_search_ms_median": round(q_search[0], 2),
        "query_search_ms_p95": round(q_search[1], 2),
        "query_filter_ms_median": round(q_filter[0], 2),
        "query_filter_ms_p95": round(q_filter[1], 2),
        "query_page_ms_median": round(q_page[0], 3),
        "count_search_ms_median": round(q_count[0], 2),
        "query_target_ms": QUERY_TARGET_MS,
        "query_cold_meets_target": q_cold[0] <= QUERY_TARGET_MS,
        "query_after_score_meets_target": q_scored[0] <= QUERY_TARGET_MS,
        "query_warm_meets_target": max(q_all[0], q_psucc[0], q_search[0], q_filter[0]) <= QUERY_TARGET_MS,
        **(empty_folders(root.parent, n_empty) if n_empty else {}),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpu_count": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        width = max(map(len, figures))
        for name, value in figures.items():
            print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
