"""Validate every MiniWoB task type with both scripted agents: env success without and with mistakes, label checks.

For each agent (A = scripted-v1, B = scripted-v2) it records ``--episodes`` episodes of every task type (training
and held-out) in randomised recording styles with ``--fail-rate`` (so roughly half the episodes carry an injected
mistake) and reports per task and agent:

- ``clean``: episodes without a mistake and how many the environment scored as solved (should be all);
- ``mistake``: episodes with a mistake and how many ended as failures (a recovered mistake is meant to succeed and
  is counted apart as ``recovered``);
- ``labels``: episodes whose stored label equals the environment's raw reward (terminated with raw reward 1), the
  page globals having been cross-checked by the recorder at record time;
- episodes per minute (wall time of the agent's whole run, browser start included).

    python bench/collect_validate.py [--quick] [--json] [--agents A,B] [--episodes 4] [--workers 1]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from _common import Figures, log, parser

QUICK_TASKS = ["click-test", "login-user", "social-media"]


def per_task(out: Path) -> dict[str, dict[str, int]]:
    """Counts per task from the recorded trajectories' metadata."""
    rows: dict[str, dict[str, int]] = {}
    for f in sorted(out.glob("*/*/trajectory.json")):
        doc = json.loads(f.read_text())
        md = doc["metadata"]
        r = rows.setdefault(md["task"], {"episodes": 0, "clean": 0, "clean_ok": 0, "mistake": 0, "mistake_fail": 0,
                                         "recover": 0, "recovered": 0, "labels_ok": 0, "steps": 0})
        ok = bool(doc["outcome"]["success"])
        env_says = bool(md["env_done"]) and float(md["raw_reward"]) == 1.0
        r["episodes"] += 1
        r["steps"] += len(doc["steps"])
        r["labels_ok"] += int(ok == env_says and doc["outcome"]["source"] == "env")
        kind = md.get("mistake_type")
        if kind is None:
            r["clean"] += 1
            r["clean_ok"] += int(ok)
        elif kind == "wrong_then_recover":  # a mistake the agent undoes: the run is meant to succeed
            r["recover"] += 1
            r["recovered"] += int(ok)
        else:
            r["mistake"] += 1
            r["mistake_fail"] += int(not ok)
    return rows


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--agents", default="A,B")
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--fail-rate", type=float, default=0.5)
    p.add_argument("--styles", default="all")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--tasks", default="all")
    p.add_argument("--keep", default="", help="record into this folder (kept) instead of a temp folder")
    args = p.parse_args()
    fig = Figures(args.json)
    from gui_app.recorders import registry
    from gui_app.recorders.miniwob import collect

    tasks = QUICK_TASKS if args.quick else (list(registry.ALL_TASKS) if args.tasks == "all"
                                            else args.tasks.split(","))
    n = 2 if args.quick else args.episodes
    table = {}
    with tempfile.TemporaryDirectory(prefix="rollscope-validate-") as tmp:
        for agent in args.agents.split(","):
            out = Path(args.keep or tmp) / f"agent-{agent}"
            log(f"agent {agent}: {n} episodes x {len(tasks)} tasks, fail rate {args.fail_rate}, styles {args.styles}")
            t0 = time.perf_counter()
            rep = collect(tasks, n, out, seed=7, fail_rate=args.fail_rate, workers=args.workers, chunk=n,
                          agent=agent, styles=args.styles)
            wall = time.perf_counter() - t0
            rows = per_task(out)
            for t in tasks:
                r = rows.get(t, {})
                table[f"{agent}/{t}"] = {**r, "errors": rep.by_task.get(t, {}).get("error", 0)}
            tot = {k: sum(r.get(k, 0) for r in rows.values()) for k in
                   ("episodes", "clean", "clean_ok", "mistake", "mistake_fail", "recover", "recovered", "labels_ok",
                    "steps")}
            fig.add(f"{agent}_episodes", rep.recorded)
            fig.add(f"{agent}_errors", len(rep.errors), "(agent could not act: no label written)")
            fig.add(f"{agent}_clean_success", tot["clean_ok"] / max(1, tot["clean"]),
                    f"({tot['clean_ok']}/{tot['clean']} episodes without mistake solved)")
            fig.add(f"{agent}_mistake_failure", tot["mistake_fail"] / max(1, tot["mistake"]),
                    f"({tot['mistake_fail']}/{tot['mistake']} episodes with a mistake failed)")
            fig.add(f"{agent}_recovered_success", tot["recovered"] / max(1, tot["recover"]),
                    f"({tot['recovered']}/{tot['recover']} episodes with an undone mistake solved)")
            fig.add(f"{agent}_label_agreement", tot["labels_ok"] / max(1, tot["episodes"]),
                    f"({tot['labels_ok']}/{tot['episodes']} labels equal the env raw reward)")
            fig.add(f"{agent}_episodes_per_min", 60.0 * rep.recorded / wall, f"episodes/min ({args.workers} worker)")
            fig.add(f"{agent}_steps_per_episode", tot["steps"] / max(1, tot["episodes"]))
    if not args.json:
        print(f"{'agent/task':<34}{'clean ok':>10}{'mistake fail':>14}{'recovered':>10}{'labels':>9}{'err':>5}")
        for key, r in table.items():
            print(f"{key:<34}{r.get('clean_ok', 0):>5}/{r.get('clean', 0):<4}{r.get('mistake_fail', 0):>8}/"
                  f"{r.get('mistake', 0):<5}{r.get('recovered', 0):>6}/{r.get('recover', 0):<3}"
                  f"{r.get('labels_ok', 0):>5}/"
                  f"{r.get('episodes', 0):<3}{r.get('errors', 0):>5}")
    fig.values["per_task"] = {"value": table, "unit": ""}
    fig.emit()


if __name__ == "__main__":
    main()
