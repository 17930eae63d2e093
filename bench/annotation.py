"""Annotation benchmarks: export of many labelled trajectories to Parquet, and the latency of saving one label.

Figures (``name: value unit`` lines, or one JSON object with ``--json``):
    fill_*            building the store (generated records through ``save_many``; cached between runs)
    export_seconds    ``export(store, out.parquet)`` for all records, in a fresh process
    export_peak_rss_mb / export_rss_growth_mb   that process's peak memory, and its growth over start-up
    save_label_p50_ms / save_label_p95_ms       one label change (one transaction + audit row), target p95 <= 5 ms

Usage: ``bench/annotation.py [--quick] [--json]`` (quick: 10,000 records instead of 100,000).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
DATA = REPO / "data" / "bench" / "annotation"  # git-ignored; the generated store is reused between runs

TARGET_P95_MS = 5.0


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1]) / 1024
    return 0.0


def generate(n: int, seed: int = 0):
    """``n`` labelled records shaped like real ones: 2 annotators on 30% of trajectories, labels from the
    default taxonomy, root causes on failures, some text."""
    from gui_app.core.annotation import taxonomy
    from gui_app.core.store.record import Annotation, Cascade

    rng = random.Random(seed)
    tax = taxonomy.get()
    leaves = [tax.label_id(lab.code) for lab in tax.leaves()]
    made = 0
    i = 0
    while made < n:
        tid = f"miniwob-{i:07d}"
        for who in ("ann", "bob") if rng.random() < 0.3 else ("ann",):
            if made >= n:
                break
            fail = rng.random() < 0.6
            step = rng.randrange(0, 12) if fail else None
            yield Annotation(
                tid, who, verdict="failure" if fail else rng.choice(("success", "success", "unsure")),
                labels=sorted(rng.sample(leaves, rng.randint(1, 3))) if fail else [],
                root_cause_step=step, root_cause_module="input" if fail else None,
                evidence=f"step {step} typed the wrong value" if fail else None,
                cascading=[Cascade(step + 1, "form rejected")] if fail and rng.random() < 0.3 else [],
                step_comments={0: "ok"} if rng.random() < 0.1 else {},
                confidence=round(rng.random(), 2), time_spent=round(rng.uniform(5, 120), 1))
            made += 1
        i += 1


def fill(path: Path, n: int) -> dict[str, float]:
    from gui_app.core.store.backends import open_store

    if path.exists():
        s = open_store(path)
        count = len(s.trajectory_ids()) and sum(1 for _ in s._read("SELECT 1 FROM annotations"))
        s.close()
        if count == n:
            return {"fill_cached": 1.0}
        for p in path.parent.glob(path.name + "*"):
            p.unlink()
    s = open_store(path)
    t0, c0 = time.perf_counter(), time.process_time()
    changes = s.save_many(generate(n), batch=5000)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    s.close()
    return {"fill_seconds": secs, "fill_cpu_seconds": cpu, "fill_records_per_s": n / secs,
            "fill_field_changes": float(changes), "fill_cached": 0.0}


def _export_child(path: str, out: str, q) -> None:  # runs in a fresh process: clean memory figures
    from gui_app.core.annotation.export import export
    from gui_app.core.store.backends import open_store

    base = _status_mb("VmRSS")
    s = open_store(path)
    t0, c0 = time.perf_counter(), time.process_time()
    res = export(s, out, "parquet")
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    s.close()
    q.put({"seconds": secs, "cpu": cpu, "rows": res.rows, "peak": _status_mb("VmHWM"), "base": base})


def export_figures(path: Path, out: Path) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_export_child, args=(str(path), str(out), q))
    p.start()
    r = q.get(timeout=1800)
    p.join()
    return {"export_rows": float(r["rows"]), "export_seconds": r["seconds"], "export_cpu_seconds": r["cpu"],
            "export_rows_per_s": r["rows"] / r["seconds"], "export_peak_rss_mb": r["peak"],
            "export_rss_growth_mb": r["peak"] - r["base"], "export_file_mb": out.stat().st_size / 2**20}


def save_latency(path: Path, n: int) -> dict[str, float]:
    from gui_app.core.store.backends import open_store

    s = open_store(path)
    rng = random.Random(1)
    times = []
    for i in range(n):
        tid = f"miniwob-{rng.randrange(0, 1000):07d}"
        t0 = time.perf_counter()
        kind = i % 3
        if kind == 0:
            s.set_field(tid, "ann", "verdict", ("success", "failure", "unsure")[i % 3 + rng.randrange(0, 2)])
        elif kind == 1:
            s.toggle_label(tid, "ann", "computer_use:input.typo")
        else:
            s.set_field(tid, "ann", "notes", f"note {i}")
        times.append((time.perf_counter() - t0) * 1000)
    s.close()
    times.sort()

    def pct(q: float) -> float:
        k = (len(times) - 1) * q / 100
        lo = int(k)
        return times[lo] + (times[min(lo + 1, len(times) - 1)] - times[lo]) * (k - lo)

    return {"save_label_n": float(n), "save_label_p50_ms": pct(50), "save_label_p95_ms": pct(95),
            "save_label_max_ms": times[-1], "save_label_p95_target_ms": TARGET_P95_MS,
            "save_label_p95_meets_target": float(pct(95) <= TARGET_P95_MS)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10,000 records instead of 100,000")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    n = 10_000 if args.quick else 100_000
    DATA.mkdir(parents=True, exist_ok=True)
    store = DATA / f"labels-{n}.sqlite"
    figures: dict[str, float] = {"records": float(n), "load_average_1min": os.getloadavg()[0]}
    units = {"seconds": "s", "per_s": "/s", "_mb": "MiB", "_ms": "ms"}

    def show(fs: dict[str, float]) -> None:
        figures.update(fs)
        if not args.json:
            for k, v in fs.items():
                unit = next((u for suffix, u in units.items() if k.endswith(suffix)), "")
                print(f"{k}: {round(v, 3) if abs(v) < 100 else round(v, 1)} {unit}".rstrip(), flush=True)

    print(f"filling a store with {n} records...", file=sys.stderr, flush=True)
    if not args.json:  # the machine is shared: wall times depend on the load, CPU times much less
        print(f"load_average_1min: {figures['load_average_1min']:.2f}")
    show(fill(store, n))
    show(export_figures(store, DATA / f"export-{n}.parquet"))
    show(save_latency(store, 300 if args.quick else 1000))
    if args.json:
        print(json.dumps({k: round(v, 4) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
