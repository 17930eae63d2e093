"""Batch scoring on a real local Ray instance (``rollscope score --ray``): the same results as local scoring on the
bundled samples, one error line for a bad trajectory, scores written to the driver's catalog, and a worker killed
mid-run whose trajectories are sent again.

One Ray instance serves the module (2 CPUs, no dashboard, a small object store): starting Ray takes seconds."""

from __future__ import annotations

import argparse
import json
import os
import signal
from functools import partial
from pathlib import Path

import pytest

from gui_app.commands import score as score_cmd
from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.cluster import RayScoring
from gui_app.core.scoring.batch import ScoreOutcome, score_many
from models.runtime import RewardModel

SAMPLES = Path(__file__).resolve().parents[1] / "resources" / "samples"


@pytest.fixture(scope="module")
def ray_instance():
    import ray
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024 ** 2, log_to_driver=False,
             logging_level="WARNING")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def samples() -> list[str]:
    return score_cmd.expand([str(SAMPLES)])


@pytest.fixture(scope="module")
def local(samples) -> dict[str, dict]:
    """The samples scored here, as ``rollscope score --json`` prints them (without timings). The samples are one
    library: derived runs read their media from the runs they were derived from, inside it."""
    return {oc.key: comparable(oc) for oc in score_many(samples, RewardModel.load(), library_root=SAMPLES)}


def comparable(oc: ScoreOutcome) -> dict:
    d = oc.to_json()
    for cost in ("seconds", "timings", "text_reads"):  # wall time, and the reader's cache hits, differ run to run
        d.pop(cost, None)
    return d


def same(got: dict, want: dict) -> bool:
    """Equal outcomes: every field exactly, but probabilities to 1e-5 (a batch padded to another length rounds the
    last float32 bits differently)."""
    close = {"p_success": pytest.approx(want.get("p_success"), abs=1e-5),
             "step_scores": pytest.approx(want.get("step_scores"), abs=1e-5),
             "ood": pytest.approx(want.get("ood"), abs=1e-4)}
    want = {**want, **{k: v for k, v in close.items() if want.get(k) is not None}}
    if got != want:  # say which field, not only that the dicts differ
        print({k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)})
    return got == want


def factory():
    return partial(RewardModel.load, None)


def test_ray_scores_equal_local_scores_with_an_error_line_and_the_catalog(ray_instance, samples, local, tmp_path):
    assert len(samples) >= 10
    junk = tmp_path / "broken_run"
    junk.mkdir()
    (junk / "trajectory.json").write_text("{ not json")
    catalog = Catalog(tmp_path / "catalog.sqlite")
    with RayScoring(factory(), workers=2, chunk=3) as pool:
        assert len(set(pool.stats.pids)) == 2 and os.getpid() not in pool.stats.pids  # model loaded per worker
        got = list(pool.run([*samples, str(junk)], catalog=catalog, library_root=str(SAMPLES)))
    by_key = {oc.key: oc for oc in got}
    assert len(got) == len(samples) + 1 and set(by_key) == {*samples, str(junk)}
    bad = by_key.pop(str(junk))
    assert bad.result is None and "trajectory.json" in bad.error  # one error line, the rest scored
    assert set(by_key) == set(local)
    for key, oc in by_key.items():
        assert same(comparable(oc), local[key]), key
    for key, oc in by_key.items():  # written whole by the driver
        stored = catalog.latest_score(key)
        assert stored is not None and stored.p_success == oc.result.p_success
        assert stored.first_error_step == oc.result.first_error_step
    catalog.close()


def test_a_worker_killed_mid_run_gets_its_items_sent_again(ray_instance, samples, local):
    items = samples * 2  # enough work that the killed worker holds some when it dies
    with RayScoring(factory(), workers=2, chunk=1) as pool:
        victim = pool.stats.pids[0]
        got = []
        for oc in pool.run(items, library_root=str(SAMPLES)):
            got.append(oc)
            if len(got) == 1:
                os.kill(victim, signal.SIGKILL)
        stats = pool.stats
    assert stats.replaced == 1 and stats.retried >= 1 and victim not in stats.pids[2:]
    assert len(got) == len(items) and all(oc.result is not None for oc in got), [oc.error for oc in got]
    assert sorted(oc.key for oc in got) == sorted(items)
    for oc in got:
        assert same(comparable(oc), local[oc.key]), oc.key


def test_the_command_prints_the_same_json_lines_as_local_scoring(ray_instance, samples, local, capsys):
    parser = argparse.ArgumentParser()
    score_cmd.add_arguments(parser)
    args = parser.parse_args([str(SAMPLES / "miniwob"), "--json", "--ray", "--workers", "2"])
    assert score_cmd.run(args) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == len([s for s in samples if "/miniwob/" in s])
    for d in lines:
        for cost in ("seconds", "timings", "text_reads"):
            d.pop(cost, None)
        assert same(d, local[d["path"]]), d["path"]


def test_workers_read_the_tasks_root_and_refuse_a_run_without_instruction(ray_instance, tmp_path, capsys):
    """The same rule as local scoring on the workers: an OSWorld run whose instruction is not found is one error line
    and exit 1; with ``--tasks-root`` (applied after this module's Ray instance started: the workers get it from the
    driver, as they get its having none) it is scored."""
    from gui_app import cli
    from tests.formats import builders as b

    run = str(b.osworld_dir(tmp_path / "results" / "gpt-4o", video=None, sidecar=None, domain="chrome")["path"])
    capsys.readouterr()
    assert cli.main(["score", run, "--json", "--ray", "--workers", "1"]) == 1
    out, err = capsys.readouterr()
    assert "no instruction" in json.loads(out)["error"]
    (line,) = [x for x in err.splitlines() if x.startswith("rollscope: error: ")]
    assert line.startswith(f"rollscope: error: {run}: no instruction, so it cannot be judged; not scored.")
    tasks = b.REAL / "osworld" / "evaluation_examples" / "examples"
    assert cli.main(["score", run, "--json", "--tasks-root", str(tasks), "--ray", "--workers", "1"]) == 0
    out, err = capsys.readouterr()
    assert 0.0 <= json.loads(out)["p_success"] <= 1.0 and "error" not in err


def test_the_base_install_never_imports_ray():
    """Building the CLI and importing the cluster module load no Ray: only ``--ray`` does."""
    import subprocess
    import sys

    code = ("import sys\nfrom gui_app.cli import build_parser\nbuild_parser()\nimport gui_app.core.scoring.cluster\n"
            "print('ray' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
