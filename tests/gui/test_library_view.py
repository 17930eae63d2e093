"""The library: a paged table model over a real SQLite catalog of generated native trajectories."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView

from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.score import Score
from gui_app.qt.library_view import (COL_DURATION, COL_FORMAT, COL_INSTRUCTION, COL_LABEL, COL_OUTCOME, COL_P,
                                     COL_STEPS, COL_TASK, COLUMNS, PAGE_SIZE, KeyRole, LibraryModel, LibraryView,
                                     format_duration)

from tests.gui.library_fixtures import TASKS, make_library, write_native


@pytest.fixture
def catalog(tmp_path):
    root = make_library(tmp_path / "lib", 40)
    (tmp_path / "lib" / "broken").mkdir()
    (tmp_path / "lib" / "broken" / "trajectory.json").write_text('{"schema_version": 1, "id": "b", "steps": [')
    cat = Catalog.for_root(root)
    report = cat.scan(root)
    assert report.trajectories == 40 and len(report.errors) == 1
    yield cat
    cat.close()


def column(model: LibraryModel, col: int) -> list[str]:
    return [model.data(model.index(r, col)) for r in range(model.rowCount())]


def test_rows_and_columns_show_the_catalog(qapp, catalog):
    model = LibraryModel(catalog)
    assert model.rowCount() == 41 and model.columnCount() == len(COLUMNS)
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(len(COLUMNS))]
    assert headers == ["Instruction", "Task / app", "Format", "Steps", "Duration", "Env outcome",
                       "p(success)", "Harm", "Label", "Agent / model", "Domain", "Run folder"]
    r = model.row_of_key(str(catalog.db_path.parents[1] / "t00003"))
    assert r >= 0
    row = [model.data(model.index(r, c)) for c in range(len(COLUMNS))]
    # t00003: task index 3, 4 steps of 1 s, 3 % 3 == 0 -> failure
    assert row[COL_INSTRUCTION] == "Do thing number 3 in choose-list"
    assert row[COL_TASK] == "choose-list" and row[COL_FORMAT] == "native"
    assert row[COL_STEPS] == "4" and row[COL_DURATION] == "0:04"
    assert row[COL_OUTCOME] == "failure" and row[COL_P] == "" and row[COL_LABEL] == ""
    broken = model.row_of_key(str(catalog.db_path.parents[1] / "broken"))
    assert model.data(model.index(broken, COL_OUTCOME)) == "load error"
    assert "trajectory.json" in model.data(model.index(broken, COL_INSTRUCTION), Qt.ItemDataRole.ToolTipRole)


def test_sorting_is_done_by_the_catalog(qapp, catalog):
    model = LibraryModel(catalog)
    model.sort(COL_STEPS, Qt.SortOrder.DescendingOrder)
    steps = [int(s) for s in column(model, COL_STEPS) if s]
    assert steps == sorted(steps, reverse=True) and steps[0] == 7
    model.sort(COL_INSTRUCTION, Qt.SortOrder.AscendingOrder)
    names = [model.row(r).instruction for r in range(model.rowCount())]
    named = [n for n in names if n]  # the broken one has no instruction; the catalog puts missing values last
    assert named == sorted(named, key=str.lower) and len(named) == 40
    model.sort(COL_LABEL)  # by label status; with no label store every row is unlabelled: instruction order stays
    assert model.order == ("label", False)
    assert [model.row(r).instruction for r in range(model.rowCount())] == names


def test_scores_show_and_sort(qapp, catalog):
    keys = catalog.keys()
    catalog.set_score(keys[5], Score(p_success=0.91, step_scores=[0.1, 0.2], model="test-model"))
    catalog.set_score(keys[7], Score(p_success=0.12, first_error_step=1, step_scores=[0.1, 0.9], model="test-model"))
    model = LibraryModel(catalog)
    model.sort(COL_P, Qt.SortOrder.DescendingOrder)
    assert column(model, COL_P)[:3] == ["0.91", "0.12", ""]
    model.set_query(filters={"scored": True})
    assert model.rowCount() == 2
    model.set_query(filters={"scored": False})
    assert model.rowCount() == 39


def test_search_and_filters(qapp, catalog):
    model = LibraryModel(catalog)
    model.set_query("number 1")  # every word, anywhere in id, instruction or task: "1" in 1, 10..19, 21, 31
    texts = column(model, COL_INSTRUCTION)
    assert sorted(texts) == sorted(f"Do thing number {i} in {TASKS[i % 5]}" for i in range(40) if "1" in str(i))
    model.set_query("LOGIN number")  # words in any order, any case
    assert all("login-user" in t for t in column(model, COL_INSTRUCTION)) and model.rowCount() == 8
    model.set_query("", {"success": True})
    assert set(column(model, COL_OUTCOME)) == {"success"}
    model.set_query("", {"success": False})
    assert set(column(model, COL_OUTCOME)) == {"failure"}
    model.set_query("", {"success": "unknown"})
    assert set(column(model, COL_OUTCOME)) == {""} and model.rowCount() == 4  # 0, 11, 22, 33
    model.set_query("", {"has_error": True})
    assert column(model, COL_OUTCOME) == ["load error"]
    model.set_query("", {"format": "native", "has_error": False})
    assert model.rowCount() == 40
    model.set_query("", {})
    assert model.rowCount() == 41


def test_label_status_comes_from_one_narrow_function(qapp, catalog):
    asked = []

    def status(rows):
        asked.append(len(rows))
        return {r.key: "final: failure" for r in rows if r.id == "traj-00002"}

    model = LibraryModel(catalog, label_status=status)
    labels = column(model, COL_LABEL)
    assert labels.count("final: failure") == 1 and labels.count("") == 40
    assert asked == [41]  # one call per page, not per row


def test_label_status_from_a_real_store(qapp, catalog, tmp_path):
    from gui_app.core.trajectory.identity import migrate_store
    from gui_app.core.store.backends import open_store
    from gui_app.core.library.folder import store_label_status

    store = open_store(tmp_path / "labels.sqlite")
    try:
        store.set_field("traj-00004", "ana", "verdict", "failure")
        store.set_field("traj-00006", "ana", "notes", "opened, nothing decided yet")
        store.set_field("traj-00005", "ana", "verdict", "success")
        store.set_field("traj-00005", "bo", "verdict", "failure")
        migrate_store(store, catalog)  # labels keyed by the trajectories' own ids move to their library keys
        model = LibraryModel(catalog, label_status=store_label_status(store))
        by_id = {model.data(model.index(r, 0), Qt.ItemDataRole.UserRole + 1).id: model.data(model.index(r, COL_LABEL))
                 for r in range(model.rowCount())}
        assert by_id["traj-00004"] == "failure" and by_id["traj-00005"] == "2 annotators"
        assert by_id["traj-00006"] == ""
    finally:
        store.close()


def test_duration_format():
    assert [format_duration(x) for x in (None, 0, 59.6, 61, 3725)] == ["", "0:00", "1:00", "1:01", "1:02:05"]


def test_view_search_filters_and_selection(qtbot, catalog):
    view = LibraryView(LibraryModel(catalog))
    qtbot.addWidget(view)
    assert view.count_label.text() == "41 trajectories"
    assert [view.format_filter.itemText(i) for i in range(view.format_filter.count())] == ["Format", "native"]
    qtbot.keyClicks(view.search, "number 2")
    qtbot.waitUntil(lambda: view.model.text == "number 2", timeout=5000)  # debounced
    expected = sum("2" in str(i) for i in range(40))
    assert view.model.rowCount() == expected and view.count_label.text() == f"{expected} of 41"
    view.outcome_filter.setCurrentIndex(view.outcome_filter.findText("Success"))
    assert view.model.filters == {"success": True}
    assert set(column(view.model, COL_OUTCOME)) == {"success"}
    n = view.model.rowCount()
    with qtbot.waitSignal(view.trajectory_selected, timeout=2000) as sig:
        view.select_row(0)
    assert sig.args == [view.model.key_at(0)]
    keys = []
    view.trajectory_selected.connect(keys.append)
    for _ in range(n + 2):  # j past the end stops at the last row
        view.select_relative(+1)
    assert keys == [view.model.key_at(r) for r in range(1, n)]
    assert view.key_relative(+1) is None and view.key_relative(-1) == view.model.key_at(n - 2)
    assert view.select_relative(-1) == view.model.key_at(n - 2)


def test_selection_survives_a_refresh_without_reopening(qtbot, catalog):
    view = LibraryView(LibraryModel(catalog))
    qtbot.addWidget(view)
    view.select_row(5)
    key = view.current_key()
    opened = []
    view.trajectory_selected.connect(opened.append)
    catalog.set_score(view.model.key_at(0), Score(p_success=0.5, model="m"))
    view.model.refresh()
    assert view.current_key() == key and view.model.key_at(view.current_row()) == key
    assert opened == []


def test_ten_thousand_rows_are_fast(qtbot, big_library):
    with Catalog.for_root(big_library) as cat:
        t0 = time.perf_counter()
        view = LibraryView(LibraryModel(cat))
        qtbot.addWidget(view)
        view.resize(900, 600)
        view.show()
        qtbot.waitExposed(view)
        shown = time.perf_counter() - t0
        model = view.model
        assert model.rowCount() == 10_000
        timings = {}
        for name, action in (
                ("sort by steps", lambda: view.table.sortByColumn(COL_STEPS, Qt.SortOrder.DescendingOrder)),
                ("sort by p", lambda: view.table.sortByColumn(COL_P, Qt.SortOrder.AscendingOrder)),
                ("search", lambda: model.set_query("number 99")),
                ("filter", lambda: model.set_query("", {"success": False})),
                ("clear", lambda: model.set_query("", {})),
                ("scroll to end", lambda: view.table.scrollToBottom()),
                ("select last", lambda: view.select_row(model.rowCount() - 1))):
            t = time.perf_counter()
            action()
            qapp_process(qtbot)
            timings[name] = time.perf_counter() - t
        assert model.data(model.index(9_999, 0), KeyRole) is not None
        # Only the pages looked at were read (the first, the last, and the one selected), never all 10,000 rows.
        assert len(model._pages) <= 3 and PAGE_SIZE * 3 < 10_000
        # Generous bounds (the CI machine is shared); a model that builds 10,000 rows takes far longer.
        assert shown < 3.0, shown
        assert max(timings.values()) < 1.5, timings


def qapp_process(qtbot):
    """Let the view paint what changed (reads the visible rows)."""
    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()


def test_no_catalog_and_a_damaged_catalog_do_not_crash(qtbot, tmp_path):
    view = LibraryView(LibraryModel(None))
    qtbot.addWidget(view)
    assert view.model.rowCount() == 0 and view.count_label.text() == "0 trajectories"
    write_native(tmp_path / "one", id="one", instruction="x")
    cat = Catalog.for_root(tmp_path)
    cat.scan(tmp_path)
    cat._conn().execute("DROP TABLE trajectories")
    view.model.set_catalog(cat)
    assert view.model.rowCount() == 0 and view.model.query_error
    cat.close()


def test_with_a_runner_queries_are_read_in_a_worker_and_the_latest_wins(qtbot, catalog):
    from gui_app.qt.workers import Runner

    runner = Runner()
    model = LibraryModel(catalog, runner=runner)
    qtbot.waitUntil(lambda: not model.pending, timeout=10_000)
    assert model.rowCount() == 41
    resets = []
    model.query_changed.connect(lambda: resets.append(model.rowCount()))
    model.set_query("number 1")
    model.set_query("number 2")  # asked before the first answer: only this one is applied
    assert model.pending
    qtbot.waitUntil(lambda: not model.pending, timeout=10_000)
    expected = sum("2" in str(i) for i in range(40))
    assert model.rowCount() == expected and resets[-1] == expected
    assert all("2" in model.row(r).instruction or "2" in model.row(r).id for r in range(expected))
    model.sort(COL_STEPS, Qt.SortOrder.DescendingOrder)
    qtbot.waitUntil(lambda: not model.pending, timeout=10_000)
    steps = [model.row(r).n_steps for r in range(model.rowCount())]
    assert steps == sorted(steps, reverse=True)
    # The selected key's row is found by the worker with the query, not page by page in the GUI thread.
    last = model.key_at(model.rowCount() - 1)
    model.tracked_key = last
    model.set_query("")
    qtbot.waitUntil(lambda: not model.pending, timeout=10_000)
    model._pages.clear()  # nothing read yet but what row_of_key needs
    r = model.row_of_key(last)
    assert model.key_at(r) == last and len(model._pages) == 1
    runner.shutdown()


def test_p_success_column_shows_the_verdict_disagreement_and_unknown(qapp, catalog):
    root = catalog.db_path.parents[1]
    agree, disagree, unknown, old = (str(root / f"t0000{i}") for i in (1, 3, 4, 5))  # t1, t4, t5 success; t3 fails
    catalog.set_score(agree, Score(p_success=0.81, threshold=0.57, success=True))
    catalog.set_score(disagree, Score(p_success=0.64, threshold=0.57, success=True))  # env: failure
    catalog.set_score(unknown, Score(p_success=0.0, threshold=0.57, success=False, ood=2.0, unknown=True))
    catalog.set_score(old, Score(p_success=0.4))  # stored before thresholds: verdict unknown
    model = LibraryModel(catalog)

    def cell(key: str, role=Qt.ItemDataRole.DisplayRole):
        return model.data(model.index(model.row_of_key(key), COL_P), role)

    assert cell(agree) == "0.81 ✓"
    assert cell(disagree) == "⚠ 0.64 ✓" and "they disagree" in cell(disagree, Qt.ItemDataRole.ToolTipRole)
    assert cell(disagree, Qt.ItemDataRole.ForegroundRole) is not None
    assert cell(unknown) == "unknown" and "cannot judge" in cell(unknown, Qt.ItemDataRole.ToolTipRole)
    assert cell(old) == "0.40"


def test_scrolling_reads_pages_in_a_worker_with_one_store_read_per_page(qtbot, big_library, tmp_path, monkeypatch):
    """Scrolling a 10,000-row library with a real label store: the GUI thread reads neither the catalog nor the store
    (reads are counted by the thread they run in), and each page's label status is one store read, not one per
    row."""
    import threading

    from gui_app.core.store.record import Annotation
    from gui_app.core.library.folder import store_label_status
    from gui_app.core.store.backends import open_store
    from gui_app.qt.workers import Runner

    store = open_store(tmp_path / "labels.sqlite")
    cat = Catalog.for_root(big_library)
    order = cat.query()  # the view's order: by instruction
    labelled = {r: order[r] for r in (PAGE_SIZE * 12 + 3, PAGE_SIZE * 25 + 7, 9_998)}
    store.save_many([Annotation(row.ref or row.id, "ana", verdict="failure") for row in labelled.values()])
    calls: list[tuple[str, bool]] = []  # (what, in the GUI thread)

    def counted(obj, name):
        real = getattr(obj, name)

        def call(*args, **kwargs):
            calls.append((name, threading.current_thread() is threading.main_thread()))
            return real(*args, **kwargs)

        monkeypatch.setattr(obj, name, call)

    runner = Runner()
    view = LibraryView(LibraryModel(runner=runner))
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    qtbot.waitExposed(view)
    model = view.model
    try:
        with qtbot.waitSignal(model.query_changed, timeout=30_000):
            model.set_library(cat, store_label_status(store))
        assert model.rowCount() == 10_000
        for name in ("annotations_of", "annotations", "get", "trajectory_ids"):
            counted(store, name)
        for name in ("query", "count", "get", "formats"):
            counted(cat, name)
        bar = view.table.verticalScrollBar()
        for r in (PAGE_SIZE * 12 + 3, PAGE_SIZE * 25 + 7, 9_998):
            view.table.scrollTo(model.index(r, 0), QAbstractItemView.ScrollHint.PositionAtCenter)
            qtbot.waitUntil(lambda r=r: model.data(model.index(r, COL_LABEL)) == "failure", timeout=10_000)
            assert model.data(model.index(r, 0)) == labelled[r].instruction
        bar.setValue(bar.maximum() // 3)  # a drag of the scroll bar: pages it passes over are not read
        qtbot.waitUntil(lambda: not model._loading, timeout=10_000)
        assert [c for c in calls if c[1]] == []  # nothing read in the GUI thread while scrolling
        store_reads = [name for name, _gui in calls if name in ("annotations_of", "annotations", "get",
                                                                 "trajectory_ids")]
        page_reads = [name for name, _gui in calls if name == "query"]
        assert store_reads == ["annotations_of"] * len(page_reads) and 4 <= len(page_reads) <= 12
        # Moving the selection past the pages read reads that page's rows at once (from the catalog's cached
        # result); its label status still comes from the worker.
        calls.clear()
        view.select_row(PAGE_SIZE * 12 + 3)
        assert view.select_relative(-PAGE_SIZE * 3) == order[PAGE_SIZE * 9 + 3].key
        qtbot.waitUntil(lambda: not model._loading, timeout=10_000)
        assert calls == [("query", True), ("annotations_of", False)]
        # A label saved elsewhere shows after refresh_labels, read in the worker.
        row = order[PAGE_SIZE * 9 + 3]
        store.set_field(row.ref or row.id, "bo", "verdict", "success")
        calls.clear()
        model.refresh_labels(row.ref or row.id)
        qtbot.waitUntil(lambda: model.data(model.index(PAGE_SIZE * 9 + 3, COL_LABEL)) == "success", timeout=10_000)
        assert [c for c in calls if c[1]] == [] and calls.count(("annotations_of", False)) == 1
    finally:
        runner.shutdown()
        store.close()
        cat.close()
