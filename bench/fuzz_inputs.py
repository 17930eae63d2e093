"""Benchmark of hostile-input handling: a fuzz campaign over every format's fixtures, and its counts.

Each input is a real-shaped unit of one format (the bundled samples, the test builders, the real fixtures under
``tests/fixtures/real``), mutated once (truncation, bit flips, a wrong type, a huge number, deep nesting, a long
string, a BOM, a path out of the trajectory, a FIFO, a symlink loop...), then scanned into a fresh catalog and
inspected in-process (see ``tests/hostile/fuzz.py``); a sample also goes through the real command line in
subprocesses. Prints the counts the issue asks for: inputs tried, clean errors, loads with warnings, tracebacks and
hangs (both must be 0), plus clean loads, memory blow-ups, bad messages and the time per input.

Usage: ``python bench/fuzz_inputs.py [--quick] [--json] [--n N] [--cli N] [--seed S]``
(default: 2,000 inputs in-process and 40 through the CLI; ``--quick``: 200 and 10).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _common import Figures, log, parser  # noqa: E402

from tests.hostile import fuzz  # noqa: E402


def main() -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=None, help="inputs tried in-process (default 2,000; --quick 200)")
    p.add_argument("--cli", type=int, default=None, help="inputs tried through the CLI (default 40; --quick 10)")
    p.add_argument("--seed", type=int, default=18)
    args = p.parse_args()
    n = args.n if args.n is not None else (200 if args.quick else 2000)
    n_cli = args.cli if args.cli is not None else (10 if args.quick else 40)
    fig = Figures(args.json)

    def note(done: int, res: fuzz.Result) -> None:
        if done % 100 == 0 or res.outcome in fuzz.FAILURES:
            log(f"  {done}/{n}: {res.seed}: {res.mutation[:80]} -> {res.outcome} {res.detail[:120]}")

    log(f"fuzzing {n} inputs in-process (seed {args.seed})")
    camp = fuzz.run(n, args.seed, quick=args.quick, progress=note)
    d = camp.to_dict()
    fig.add("inputs_tried", d["inputs"])
    fig.add("clean_errors", d["clean_errors"])
    fig.add("loads_with_warnings", d["loads_with_warnings"])
    fig.add("clean_loads", d["clean_loads"], "(mutation did no harm)")
    fig.add("tracebacks", d["tracebacks"])
    fig.add("hangs", d["hangs"])
    fig.add("memory_blowups", d["memory"])
    fig.add("bad_messages", d["bad_messages"], "(multi-line, over 600 chars, or naming no file)")
    fig.add("formats_seeded", d["seeds"])
    fig.add("ms_per_input", 1000 * d["seconds"] / max(1, d["inputs"]), "ms")
    fig.add("slowest_input", d["slowest_input_s"], "s")
    failures = list(camp.failures)
    if n_cli:
        log(f"fuzzing {n_cli} inputs through the command line")
        cli = fuzz.run_cli(n_cli, args.seed + 1, quick=args.quick).to_dict()
        fig.add("cli_inputs_tried", cli["inputs"])
        fig.add("cli_tracebacks", cli["tracebacks"])
        fig.add("cli_hangs", cli["hangs"])
        failures += [fuzz.Result(**f) for f in cli["failures"]]
    for f in failures[:20]:
        log(f"FAILED {f.seed}: {f.mutation}: {f.outcome}: {f.detail}")
    fig.emit()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
