"""Sorting the library by label status: the order comes from a real annotation store, read once per query."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui_app.core.store.record import Annotation
from gui_app.core.library.catalog import Catalog
from gui_app.core.trajectory.identity import migrate_store
from gui_app.core.library.folder import label_rank, store_label_status
from gui_app.core.store.backends import open_store
from gui_app.qt import library_view
from gui_app.qt.library_view import COL_LABEL, LibraryModel, LibraryView
from gui_app.qt.workers import Runner
from tests.gui.library_fixtures import make_library


@pytest.fixture
def labelled(tmp_path):
    root = make_library(tmp_path / "lib", 12)
    cat = Catalog.for_root(root)
    cat.scan(root)
    store = open_store(root=root)
    store.save(Annotation("traj-00001", "ann", verdict="failure"))
    store.save(Annotation("traj-00002", "ann", verdict="success"))
    store.save(Annotation("traj-00004", "ann", verdict="failure"))
    store.save(Annotation("traj-00004", "bob", verdict="success"))
    store.save(Annotation("traj-00007", "ann", verdict="failure"))
    store.adjudicate("traj-00007", "dana", "ann")
    store.save(Annotation("traj-00009", "ann", notes="opened, nothing decided"))  # counts as unlabelled
    # Written as a store did before library keys: by the trajectories' own ids. Opening a library moves them.
    report = migrate_store(store, cat)
    assert len(report.moved) == 5 and report.moved["traj-00004"] == "t00004" and not report.ambiguous
    yield cat, store
    store.close()
    cat.close()


def ids(model: LibraryModel) -> list[str]:
    return [model.row(r).id for r in range(model.rowCount())]


def labels(model: LibraryModel) -> list[str]:
    return [model.data(model.index(r, COL_LABEL)) for r in range(model.rowCount())]


# Unlabelled (instruction order) first, then labelled once (by verdict text), then several annotators, then final.
UNLABELLED = ["traj-00000", "traj-00010", "traj-00011", "traj-00003", "traj-00005", "traj-00006", "traj-00008",
              "traj-00009"]
ASCENDING = [*UNLABELLED, "traj-00001", "traj-00002", "traj-00004", "traj-00007"]


def test_sorting_by_label_status_orders_by_labelling_progress(qapp, labelled):
    cat, store = labelled
    model = LibraryModel(cat, label_status=store_label_status(store))
    model.sort(COL_LABEL, Qt.SortOrder.AscendingOrder)
    assert model.order == ("label", False)
    assert ids(model) == ASCENDING
    assert labels(model)[-4:] == ["failure", "success", "2 annotators", "final: failure"]
    model.sort(COL_LABEL, Qt.SortOrder.DescendingOrder)
    assert ids(model)[:4] == ["traj-00007", "traj-00004", "traj-00002", "traj-00001"]
    # Filters and search still apply, and a new label shows at its place after the next refresh.
    model.set_query(filters={"success": False})
    assert ids(model) == ["traj-00003", "traj-00006", "traj-00009"]  # env failures, all unlabelled
    store.save(Annotation("t00006", "ann", verdict="unsure"))  # the app writes by library key
    model.refresh()
    assert ids(model)[0] == "traj-00006" and labels(model)[0] == "unsure"
    assert [label_rank(s) for s in ("", "success", "3 annotators", "final: unsure")] == [0, 1, 2, 3]


def test_the_view_sorts_by_label_in_a_worker_and_pages_through_the_order(qtbot, labelled, monkeypatch):
    cat, store = labelled
    monkeypatch.setattr(library_view, "PAGE_SIZE", 5)  # several pages out of 12 rows
    runner = Runner()
    view = LibraryView(LibraryModel(label_status=store_label_status(store), runner=runner))
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.model.query_changed, timeout=10_000):
        view.model.set_library(cat, store_label_status(store))
    with qtbot.waitSignal(view.model.query_changed, timeout=10_000):
        view.table.horizontalHeader().setSortIndicator(COL_LABEL, Qt.SortOrder.AscendingOrder)
    assert view.model.order == ("label", False)
    assert ids(view.model) == ASCENDING and labels(view.model)[-1] == "final: failure"
    assert view.select_key(str(cat.db_path.parents[1] / "t00004"))
    assert view.current_row() == 10
    runner.shutdown()


def test_store_status_reads_the_whole_store_once_for_many_rows(qapp, labelled, monkeypatch):
    cat, store = labelled
    from gui_app.core.library import folder as library

    monkeypatch.setattr(library, "_BULK_STATUS", 2)
    calls: list[str | None] = []
    real = store.annotations

    def counted(trajectory_id=None, *args, **kwargs):
        calls.append(trajectory_id)
        return real(trajectory_id, *args, **kwargs)

    monkeypatch.setattr(store, "annotations", counted)
    status = store_label_status(store)(cat.query())
    assert calls == [None]  # one read of the store, not one per labelled trajectory
    assert status[str(cat.db_path.parents[1] / "t00004")] == "2 annotators"
    assert len(status) == 4  # traj-00009's record has no verdict and no labels: unlabelled
