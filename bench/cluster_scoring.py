"""Batch scoring throughput: trajectories scored per minute here (``rollscope score``) and on Ray with 1 and 2 workers
(``rollscope score --ray``) on this machine, and the Ray nodes that score ExeVR-53k (53,000 trajectories) in an hour.

The corpus is the bundled samples (real MiniWoB++ recordings and step screenshots, an OSWorld run, a plain video),
repeated to ``--n`` trajectories. Local scoring runs ``score_many`` with the model loaded once; Ray scoring runs the
same through :class:`gui_app.core.scoring.cluster.RayScoring` on a Ray instance started here. Start-up (Ray, and each
worker
loading the model) is measured apart from the scoring itself: it is paid once per run, not per trajectory.

The projection takes the 2-worker Ray rate on this 2-core machine as one node's rate (a node of this size), so
``nodes_for_53k_per_hour = ceil(53000 / (rate_per_minute * 60))``; a node with more cores runs more workers.

Figures (``name: value unit`` lines, or one JSON object with ``--json``):
    local_per_min              trajectories per minute, in this process
    ray_{1,2}w_per_min         trajectories per minute on Ray with 1 and 2 workers
    ray_{1,2}w_startup_s       Ray start plus the workers loading the model
    nodes_for_53k_per_hour     Ray nodes like this one that score 53,000 trajectories in one hour

Usage: ``bench/cluster_scoring.py [--quick] [--json] [--n N]`` (quick: 16 trajectories instead of 48).
"""

from __future__ import annotations

import math
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, Figures, log, parser  # noqa: E402

CORPUS = 53_000


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=None, help="trajectories to score (default 48; quick 16)")
    args = p.parse_args()
    fig = Figures(args.json)
    import ray

    from gui_app.commands.score import expand
    from gui_app.core.scoring.cluster import RayScoring
    from gui_app.core.scoring.batch import score_many
    from models.runtime import RewardModel

    root = str(REPO / "resources" / "samples")  # one library: derived runs read media of the runs they came from
    samples = expand([root])
    n = args.n or (16 if args.quick else 48)
    items = (samples * (n // len(samples) + 1))[:n]

    model = RewardModel.load()
    score_many(items[:2], model, library_root=root)  # warm caches (decoders, onnxruntime arenas) as a long run has them
    t0 = time.perf_counter()
    out = score_many(items, model, library_root=root)
    local = len(out) / (time.perf_counter() - t0) * 60
    assert all(oc.result is not None for oc in out)
    fig.add("local_per_min", local, "trajectories/min")

    rates = {}
    for workers in (1, 2):
        log(f"ray: {workers} worker(s), {n} trajectories")
        t0 = time.perf_counter()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="WARNING",
                 object_store_memory=100 * 1024 ** 2)
        with RayScoring(partial(RewardModel.load, None), workers=workers) as pool:
            fig.add(f"ray_{workers}w_startup_s", time.perf_counter() - t0, "s")
            list(pool.run(items[:2 * workers], library_root=root))  # each worker's first chunk warms it, as above
            t0 = time.perf_counter()
            got = list(pool.run(items, library_root=root))
            rates[workers] = len(got) / (time.perf_counter() - t0) * 60
            assert all(oc.result is not None for oc in got)
        ray.shutdown()
        fig.add(f"ray_{workers}w_per_min", rates[workers], "trajectories/min")
    fig.add("nodes_for_53k_per_hour", math.ceil(CORPUS / (rates[2] * 60)), "nodes")
    fig.emit()


if __name__ == "__main__":
    main()
