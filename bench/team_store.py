"""Team label store benchmark: labels saved per second with 1, 2 and 4 writers, on SQLite and on PostgreSQL, and the
p95 latency of one save.

Each writer is a real process (an annotator's app) that opens the store and saves labels one at a time, each in its
own transaction with its audit row, as the label panel does: a verdict, then a taxonomy label, on trajectories of
its own (annotators label different items). The writers start together; throughput is all saves over the wall time
from that start to the last writer's end. SQLite is a WAL file on this machine's disk; PostgreSQL is a server started
here from Debian's package (``initdb`` into a temp dir, default durability settings: fsync on) on a loopback port,
so the figures leave out a network's round trip (add yours to each save's latency).

Figures (``name: value unit`` lines, or one JSON object with ``--json``):
    {sqlite,postgresql}_{1,2,4}w_saves_per_s   labels saved per second, all writers together
    {sqlite,postgresql}_{1,2,4}w_p95_ms        95th percentile of one save's latency
    {sqlite,postgresql}_{1,2,4}w_p50_ms        median latency

Usage: ``bench/team_store.py [--quick] [--json]`` (quick: 100 saves per writer instead of 400).
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, Figures, log, parser  # noqa: E402

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

WRITERS = (1, 2, 4)


def _writer(location: str, who: int, n: int, barrier, out) -> None:
    from gui_app.core.store.backends import open_store

    store = open_store(location)
    lat = []
    barrier.wait(timeout=120)
    t0 = time.perf_counter()
    for i in range(n):
        tid = f"traj-{who}-{i // 2:05d}"
        s = time.perf_counter()
        if i % 2 == 0:
            store.set_field(tid, f"annotator{who}", "verdict", "failure")
        else:
            store.set_label(tid, f"annotator{who}", "computer_use:input.typo", True)
        lat.append(time.perf_counter() - s)
    end = time.perf_counter()
    store.close()
    out.put((t0, end, lat))


def run(location: str, writers: int, n: int) -> tuple[float, float, float]:
    """``writers`` processes saving ``n`` labels each into ``location``: (saves/s, p50 ms, p95 ms)."""
    from gui_app.core.store.backends import open_store

    open_store(location).close()  # schema created before the clock starts
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(writers), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(location, w, n, barrier, out)) for w in range(writers)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    start, end = min(r[0] for r in results), max(r[1] for r in results)
    lat = np.array([x for r in results for x in r[2]]) * 1000
    return writers * n / (end - start), float(np.percentile(lat, 50)), float(np.percentile(lat, 95))


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    fig = Figures(args.json)
    n = 100 if args.quick else 400
    from tests.pg import PgServer  # the same throw-away server the tests start

    with tempfile.TemporaryDirectory(prefix="rollscope-bench-") as tmp, PgServer() as server:
        for backend in ("sqlite", "postgresql"):
            for w in WRITERS:
                location = str(Path(tmp) / f"{w}.sqlite") if backend == "sqlite" else server.create_database()
                log(f"{backend}: {w} writer(s) x {n} saves")
                rate, p50, p95 = run(location, w, n)
                fig.add(f"{backend}_{w}w_saves_per_s", rate, "saves/s")
                fig.add(f"{backend}_{w}w_p50_ms", p50, "ms")
                fig.add(f"{backend}_{w}w_p95_ms", p95, "ms")
    fig.emit()


if __name__ == "__main__":
    main()
