"""``labels import`` never undoes someone's work: it writes only its own columns, each against the record as stored
when it writes (an edit made meanwhile survives), and it lands whole or not at all (a SIGKILL at any moment leaves
the store as before or fully imported)."""

from __future__ import annotations

import random
import threading
import time

import polars as pl
import pytest
from hostile_helpers import kill_after, rollscope, spawn

from gui_app.core.annotation import Annotation
from gui_app.core.export import import_labels, row_fields
from gui_app.core.store import open_store

N = 6000


def write_file(path, n: int = N, verdict: str = "failure") -> None:
    """A labels file without a ``notes`` column: what an import from another tool looks like."""
    pl.DataFrame({"trajectory_id": [f"t{i:05d}" for i in range(n)], "verdict": [verdict] * n,
                  "labels": ["computer_use:input.typo"] * n}).write_csv(path)


def test_an_import_writes_only_the_columns_of_its_file(tmp_path):
    s = open_store(tmp_path / "labels.sqlite")
    s.save(Annotation("t00001", "ann", verdict="success", notes="keep me", confidence=0.5))
    write_file(tmp_path / "in.csv", n=3)
    res = import_labels(tmp_path / "in.csv", s, "ann")
    rec = s.get("t00001", "ann")
    assert res.records == 3
    assert rec.verdict == "failure" and rec.labels == ["computer_use:input.typo"]
    assert rec.notes == "keep me" and rec.confidence == 0.5
    assert row_fields({"id": "x", "notes": None, "deviation": {"step": 2}}) == {"notes", "root_cause_step"}
    s.close()


def test_notes_edited_during_an_import_are_never_reverted(tmp_path):
    """An annotator edits notes while an import without a notes column runs: every acknowledged edit stays.

    The old import read every record before its write transactions and wrote those stale copies back, reverting
    the edits made in between (2,038 of 8,826 trajectories in the report that found it)."""
    path = tmp_path / "labels.sqlite"
    s = open_store(path)
    s.save_many(Annotation(f"t{i:05d}", "ann", verdict="success", notes="before") for i in range(N))
    write_file(tmp_path / "in.csv")
    acked: dict[str, str] = {}
    done = threading.Event()
    started = threading.Event()

    def editor() -> None:
        ed = open_store(path)  # another connection, as another window or process would have
        rng = random.Random(7)
        k = 0
        while not done.is_set() or k < 50:
            tid = f"t{rng.randrange(N):05d}"
            ed.set_field(tid, "ann", "notes", f"edit {k}")
            acked[tid] = f"edit {k}"  # acknowledged: set_field returned after its commit
            k += 1
            started.set()
        ed.close()

    t = threading.Thread(target=editor)
    t.start()
    assert started.wait(30)
    try:
        import_labels(tmp_path / "in.csv", s, "ann")
    finally:
        done.set()
        t.join()
    assert len(acked) >= 50
    lost = {tid: (want, s.get(tid, "ann").notes) for tid, want in acked.items() if s.get(tid, "ann").notes != want}
    assert not lost, f"{len(lost)} acknowledged edits reverted, e.g. {list(lost.items())[:3]}"
    assert {a.verdict for a in s.annotations()} == {"failure"}
    s.close()


def _state(path) -> tuple[int, int]:
    s = open_store(path, read_only=True)
    try:
        recs = s.annotations(annotator="imp")
        return len(recs), sum(a.verdict == "failure" for a in recs)
    finally:
        s.close()


@pytest.mark.slow
def test_a_killed_import_leaves_nothing_half_applied(tmp_path):
    """SIGKILL ``rollscope labels import`` of 6,000 rows at random moments: the store holds the import whole or
    not at all, and a rerun completes it. (The old import committed every 2,000 rows: 5 of 28 kills left it half
    applied.)"""
    store = tmp_path / "labels.sqlite"
    s = open_store(store)
    s.save_many(Annotation(f"t{i:05d}", "imp", verdict="success") for i in range(N))  # what the import overwrites
    s.close()
    write_file(tmp_path / "in.csv")
    t0 = time.perf_counter()
    full = rollscope("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--store",
                     str(tmp_path / "timing.sqlite"))
    assert full.returncode == 0, full.stderr
    span = time.perf_counter() - t0
    rng = random.Random(18)
    kills = 0
    for _ in range(8):
        proc = spawn("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--store", str(store))
        kills += kill_after(proc, rng.uniform(0.3, 1.0) * span)
        n, failures = _state(store)
        assert n == N and failures in (0, N), f"half applied: {failures} of {N} rows imported"
        if failures == N:  # it finished before the kill: start again from the old labels
            s = open_store(store)
            s.merge([(Annotation(f"t{i:05d}", "imp", verdict="success"), {"verdict"}) for i in range(N)])
            s.close()
    assert kills >= 4  # the kills did land while it ran
    again = rollscope("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--store", str(store))
    assert again.returncode == 0, again.stderr
    assert _state(store) == (N, N)
    leftovers = [p.name for p in tmp_path.iterdir() if ".new-" in p.name or p.name.endswith(".tmp")]
    assert not leftovers
