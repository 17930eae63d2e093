"""``rollscope labels import`` of a large labels file: time, rows per second, peak memory and lines printed.

A labels file of N rows in the shape ``rollscope export --format csv`` (or ``jsonl``, ``parquet``) writes is generated
(one row per trajectory: verdict, taxonomy labels, root-cause step, evidence, notes, confidence, cascading steps on
some failures), then imported into a fresh store by the real command in a process of its own, into a library whose
catalog is empty (as a library scanned before its runs were copied in): every row names a trajectory the catalog
does not know, the case that once printed one note per row.

Figures (``name: value unit`` lines, or one JSON object with ``--json``):
    rows                  rows in the file
    import_seconds        wall time of ``rollscope labels import`` (start-up included)
    import_cpu_seconds    its CPU time (user + system): the steadier figure on a shared machine
    import_rows_per_s     rows / import_seconds
    import_peak_rss_mb    that process's peak resident memory
    import_stderr_lines   lines it printed on stderr (notes and errors)

Usage: ``bench/labels_import.py [--quick] [--json] [--rows N] [--format csv|jsonl|parquet] [--code CHECKOUT]`` (default
1,000,000 rows; quick: 20,000). ``--code`` times another checkout's import on the same file, e.g. the commit before a
change: ``git archive HEAD | tar -x -C /tmp/before && bench/labels_import.py --code /tmp/before``.

Measured (1,000,000 CSV rows, a shared two-core machine under load): the import before streaming (commit 8345d79)
253.7 s wall, 172.9 s CPU, 2,696 MiB, 1,000,000 lines on stderr; streamed and batched, 51.3 s, 46.8 s CPU,
231 MiB, 21 lines. What is left is about 45 us of CPU per row: parsing and checking the row (~13), building each
field's change and audit entry (~17), SQLite writing ~4.5 audit rows, the record and its labels (~15).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, Figures, log, parser

LABELS = ["computer_use:input.typo", "computer_use:grounding.wrong_element", "computer_use:planning.skipped_step",
          "computer_use:perception.misread", "computer_use:termination.premature"]


def generate(path: Path, n: int, fmt: str, seed: int = 0) -> None:
    """``n`` rows of an export of ``fmt``, written by the export's own writer (csv: list columns as JSON text, every
    text cell quoted)."""
    from gui_app.core.annotation.export import SCHEMA, Table, write_table

    rng = random.Random(seed)
    fail = [rng.random() < 0.6 for _ in range(n)]
    steps = [rng.randrange(12) if f else None for f in fail]
    cols = {
        "trajectory_id": [f"results/run-{i:07d}" for i in range(n)],
        "annotator": ["ann"] * n,
        "role": ["annotator"] * n,
        "verdict": ["failure" if f else "success" for f in fail],
        "labels": [sorted(rng.sample(LABELS, rng.randint(1, 2))) if f else [] for f in fail],
        "root_cause_step": steps,
        "evidence": [f"step {s} typed the wrong value" if s is not None else None for s in steps],
        "cascading": [[{"step": s + 1, "effect": "form rejected"}] if s is not None and s % 3 == 0 else []
                      for s in steps],
        "notes": [None if i % 4 else f"checked twice, batch {i % 97}" for i in range(n)],
        "confidence": [round(rng.random(), 2) for _ in range(n)],
    }
    write_table(Table(cols, {k: SCHEMA[k] for k in cols}), path, fmt)


def main() -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=None, help="rows in the file (default 1,000,000; --quick 20,000)")
    p.add_argument("--format", dest="fmt", choices=("csv", "jsonl", "parquet"), default="csv")
    p.add_argument("--code", type=Path, default=REPO,
                   help="the Rollscope checkout whose import is timed (default: this one; e.g. an older version "
                        "unpacked with git archive, for a before/after figure)")
    args = p.parse_args()
    n = args.rows or (20_000 if args.quick else 1_000_000)
    figs = Figures(args.json)
    work = Path(tempfile.mkdtemp(prefix="rollscope-bench-import-"))
    code = args.code.resolve()
    env = {**os.environ, "PYTHONPATH": str(code) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "ROLLSCOPE_CONFIG_DIR": str(work / "config")}
    try:
        lib = work / "lib"
        lib.mkdir()
        scan = subprocess.run([sys.executable, "-m", "gui_app", "scan", str(lib)], capture_output=True, text=True,
                              cwd=code, env=env, check=False)
        if scan.returncode != 0:
            log(f"scan of the empty library failed: {scan.stderr.strip()}")
            return 1
        src = work / f"labels.{args.fmt}"
        log(f"generating {n:,} rows of {args.fmt}")
        # In a process of its own: a child forked from a process that built a million rows would report that
        # process's memory as its own peak (the peak survives exec).
        maker = mp.get_context("spawn").Process(target=generate, args=(src, n, args.fmt))
        maker.start()
        maker.join()
        if maker.exitcode != 0:
            log("generating the file failed")
            return 1
        log(f"importing {src} ({src.stat().st_size / 2**20:.1f} MiB)")
        out, err = work / "stdout.txt", work / "stderr.txt"
        with out.open("wb") as fo, err.open("wb") as fe:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "gui_app", "labels", "import", str(src), "--annotator",
                                     "imp", "--root", str(lib)], stdout=fo, stderr=fe, cwd=code, env=env)
            _pid, status, usage = os.wait4(proc.pid, 0)  # this process's own peak memory, not the scan's
            seconds = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        if rc != 0:
            log(f"import failed ({rc}): {err.read_text(errors='replace')[-2000:]}")
            return 1
        log(out.read_text().strip())
        with err.open("rb") as fh:
            stderr_lines = sum(1 for _ in fh)
        figs.add("rows", n)
        figs.add("import_seconds", seconds, "s")
        figs.add("import_rows_per_s", n / seconds, "rows/s")
        figs.add("import_cpu_seconds", usage.ru_utime + usage.ru_stime, "s")
        figs.add("import_peak_rss_mb", usage.ru_maxrss / 1024, "MiB")
        figs.add("import_stderr_lines", stderr_lines)
        figs.emit()
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
