"""Any value in any field of a real record either loads or raises TrajectoryFormatError: never a TypeError,
KeyError or AttributeError from deep inside an importer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import builders as b
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.model import Trajectory

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys/indices) into a JSON document."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    target = doc
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    return doc


def _loads_or_format_error(path: Path) -> None:
    try:
        trajs = formats.load_all(path, align=False)
    except TrajectoryFormatError as exc:
        assert str(exc.path) and exc.reason
        return
    assert trajs and all(isinstance(t, Trajectory) for t in trajs)


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def atif_doc(tmp_path_factory):
    run = b.atif_file(tmp_path_factory.mktemp("atif"))
    return run["path"], json.loads(run["path"].read_text())


@SETTINGS
@given(data=st.data())
def test_atif_any_field_any_value(atif_doc, data):
    path, doc = atif_doc
    doc = copy.deepcopy(doc)
    where = data.draw(st.sampled_from(_paths(doc)[1:]))
    doc = _set(doc, where, data.draw(json_values))
    path.write_text(json.dumps(doc))
    _loads_or_format_error(path)


@pytest.fixture(scope="module")
def agentnet_doc(tmp_path_factory):
    run = b.agentnet_file(tmp_path_factory.mktemp("an"))
    return run["path"], run["tasks"][0]


@SETTINGS
@given(data=st.data())
def test_agentnet_any_field_any_value(agentnet_doc, data):
    path, task = agentnet_doc
    task = copy.deepcopy(task)
    task = _set(task, data.draw(st.sampled_from(_paths(task))), data.draw(json_values))
    path.write_text(json.dumps(task) + "\n")
    _loads_or_format_error(path)


@SETTINGS
@given(data=st.data())
def test_whowhen_any_field_any_value(tmp_path_factory, data):
    rec = b.whowhen_record()
    rec = _set(rec, data.draw(st.sampled_from(_paths(rec))), data.draw(json_values))
    path = tmp_path_factory.mktemp("ww") / "r.json"
    path.write_text(json.dumps(rec))
    _loads_or_format_error(path)


@pytest.fixture(scope="module")
def osworld_run(tmp_path_factory):
    run = b.osworld_dir(tmp_path_factory.mktemp("osw"), video=None)
    return run["path"], run["lines"]


@SETTINGS
@given(data=st.data())
def test_osworld_any_field_any_value(osworld_run, data):
    root, lines = osworld_run
    lines = copy.deepcopy(lines)
    k = data.draw(st.integers(0, len(lines) - 1))
    lines[k] = _set(lines[k], data.draw(st.sampled_from(_paths(lines[k]))), data.draw(json_values))
    (root / "traj.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    _loads_or_format_error(root)


@pytest.fixture(scope="module")
def browsergym_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("bg")
    run = b.browsergym_dir(base, marker=base / "UNPICKLED")
    return run["path"], run["summary"], run["marker"]


@SETTINGS
@given(data=st.data())
def test_browsergym_any_summary_value(browsergym_run, data):
    root, summary, marker = browsergym_run
    summary = _set(copy.deepcopy(summary), data.draw(st.sampled_from(_paths(summary))), data.draw(json_values))
    (root / "summary_info.json").write_text(json.dumps(summary))
    _loads_or_format_error(root)
    assert not marker.exists()


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    run = b.plain_video_dir(tmp_path_factory.mktemp("pv"), log="jsonl", codec="mp4v")
    log = run["path"] / "steps.jsonl"
    return log, [json.loads(x) for x in log.read_text().splitlines()]


@SETTINGS
@given(data=st.data())
def test_plain_log_any_field_any_value(plain_run, data):
    log, rows = plain_run
    rows = copy.deepcopy(rows)
    k = data.draw(st.integers(0, len(rows) - 1))
    rows[k] = _set(rows[k], data.draw(st.sampled_from(_paths(rows[k]))), data.draw(json_values))
    log.write_text("\n".join(json.dumps(x) for x in rows) + "\n")
    _loads_or_format_error(log.parent)
