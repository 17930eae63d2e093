"""A JSONL log cut in its last record (the run was killed while writing it) loads its good steps with a warning.

A bad line in the middle of a file is still an error naming file and line (tests/formats/test_fmt_osworld.py): only
the cut tail, the shape a crash leaves, is forgiven, and never silently.
"""

from __future__ import annotations

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError


def cut_last_line(path, keep: int = 25) -> int:
    """Cut the file's last record after ``keep`` characters, with no newline after it (a crash mid-write);
    returns its line number."""
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1] + [lines[-1][:keep]]))
    return len(lines)


def test_osworld_run_cut_in_its_last_step_loads_the_steps_before(tmp_path):
    run = b.osworld_dir(tmp_path, video=None)
    log = run["path"] / "traj.jsonl"
    last = cut_last_line(log)
    traj = formats.load(run["path"])
    assert traj.n_steps == len(run["lines"]) - 1 == 3
    assert [s.action for s in traj.steps] == [formats.load(run["path"]).steps[i].action for i in range(3)]
    (warning,) = [w for w in traj.warnings if "truncated" in w]
    assert warning.startswith(f"{log}:{last}: invalid JSON") and "loaded the 3 record(s) before it" in warning


def test_plain_step_log_cut_in_its_last_row(tmp_path):
    run = b.plain_video_dir(tmp_path / "r", log="jsonl")
    log = run["path"] / "steps.jsonl"
    n = len(log.read_text().splitlines())
    cut_last_line(log, keep=12)
    traj = formats.load(run["path"])
    assert traj.n_steps == n - 1
    assert any(f"{log}:{n}: invalid JSON" in w and "truncated" in w for w in traj.warnings)


def test_only_a_cut_tail_is_forgiven(tmp_path):
    from gui_app.core.trajectory.formats import _common as c

    path = tmp_path / "log.jsonl"
    path.write_text('{"index": 0, "t_start": 0}\n{"index": 1, "t_st')
    warnings: list[str] = []
    assert c.read_jsonl_strict(path, warnings) == [(1, {"index": 0, "t_start": 0})] and len(warnings) == 1
    with pytest.raises(TrajectoryFormatError):  # without a place for the warning, it is an error as before
        c.read_jsonl_strict(path)
    path.write_text('{"index": 0, "t_st')  # nothing good before the cut: an error
    with pytest.raises(TrajectoryFormatError):
        c.read_jsonl_strict(path, [])
    path.write_text('{"index": 0, "t_st\n{"index": 1, "t_start": 1}\n')  # a bad line in the middle: an error
    with pytest.raises(TrajectoryFormatError) as exc:
        c.read_jsonl_strict(path, [])
    assert exc.value.line == 1
