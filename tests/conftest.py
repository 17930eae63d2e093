"""Test set-up: headless Qt, isolated settings, shared fixtures."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt loads

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, monkeypatch):
    """Settings, recent folders and caches go to a temp dir, never to the user's home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ROLLSCOPE_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    monkeypatch.setenv("ROLLSCOPE_CACHE_DIR", str(home / "cache"))
    # The user's own OSWorld task roots are not the tests' (a command's --tasks-root is an argument of its loads).
    monkeypatch.setenv("ROLLSCOPE_OSWORLD_TASKS_ROOT", "")


# --- a real PostgreSQL server (Debian's postgresql package) for the store's tests -----------------------------------
@pytest.fixture(scope="session")
def pg_server():
    """One server for the whole run, on a free loopback port, removed afterwards. fsync is off: the tests check
    transactions and locks, not the disk (the restart test's clean shutdown writes everything anyway)."""
    from tests.pg import PgServer

    srv = PgServer({"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"})
    yield srv
    srv.stop()


@pytest.fixture
def pg_url(pg_server):
    """The URL of a new, empty database on the session's server."""
    return pg_server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request, tmp_path):
    """Where a store lives, once per backend: a SQLite file, then a PostgreSQL database (the store contract suite
    runs on both)."""
    if request.param == "sqlite":
        return str(tmp_path / "labels.sqlite")
    return request.getfixturevalue("pg_url")
