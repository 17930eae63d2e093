"""What only the PostgreSQL store has: its own migration files, a server that is down, and a server restarted in the
middle of labelling (the contract suite in test_store.py runs on it too)."""

from __future__ import annotations

import time

import psycopg
import pytest

from gui_app.core.store.interface import StoreError, StoreUnavailable, migrations
from gui_app.core.store.backends import open_store
from gui_app.core.store.postgresql import PostgresAnnotationStore, redact
from tests.annotation.test_store import check_no_update_lost, run_writers
from tests.pg import PgServer


def test_both_dialects_have_the_same_numbered_migrations(pg_url):
    """One schema history: the PostgreSQL files carry the SQLite files' numbers and names, and the runner logs
    each one it applied."""
    lite, pg = migrations("sqlite"), migrations("postgresql")
    assert [(m.version, m.name) for m in lite] == [(m.version, m.name) for m in pg]
    s = open_store(pg_url)
    assert s.schema_version == len(pg)
    with psycopg.connect(pg_url) as conn:
        logged = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert logged == [(m.version, m.name) for m in pg]
    s.close()
    open_store(pg_url).close()  # opening again applies nothing
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(pg)


def test_a_newer_database_is_refused(pg_url):
    open_store(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)")
    with pytest.raises(StoreError, match="newer"):
        open_store(pg_url)


def test_the_password_never_reaches_a_message():
    assert redact("postgresql://ann:s3cret@db.lab:5432/labels") == "postgresql://ann@db.lab:5432/labels"
    assert redact("postgresql://ann@h/db?password=s3cret&x=1") == "postgresql://ann@h/db?password=***&x=1"
    with pytest.raises(StoreUnavailable) as err:
        PostgresAnnotationStore("postgresql://ann:s3cret@127.0.0.1:1/labels", connect_timeout=2)
    assert "s3cret" not in str(err.value) and "127.0.0.1" in str(err.value)


def test_a_server_that_is_down_is_a_clear_error_never_a_hang():
    """Opening, reading and writing against a stopped server each end in a StoreUnavailable that names the
    server, within the time the store was given; when the server is back, the same store writes again."""
    srv = PgServer({"fsync": "off"})
    try:
        url = srv.create_database()
        s = PostgresAnnotationStore(url, connect_timeout=2, reconnect_s=1.0)
        s.set_field("t", "ann", "verdict", "failure")
        srv.stop_server()
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"127\.0\.0\.1.*(refused|connect)"):
            s.get("t", "ann")
        with pytest.raises(StoreUnavailable, match="nothing was changed"):
            s.set_field("t", "ann", "verdict", "success")
        with pytest.raises(StoreUnavailable):
            open_store(url)
        assert time.monotonic() - t0 < 10
        srv.start()
        assert s.set_field("t", "ann", "verdict", "success")  # the store reconnects by itself
        assert s.get("t", "ann").verdict == "success" and len(s.audit("t")) == 2
        s.close()
    finally:
        srv.stop()


def test_labelling_goes_on_across_a_server_restart():
    """Two processes label one record while the server is restarted under them: each write waits for the server
    and lands once; none is lost, none is applied twice."""
    srv = PgServer({"fsync": "off"})
    try:
        url = srv.create_database()
        open_store(url).close()

        def restart_midway(wait_for) -> None:
            wait_for(60)  # a third of the writes are in
            srv.restart()

        run_writers(url, 2, 90, during=restart_midway)
        check_no_update_lost(url, 2, 90)
        log = (srv.dir / "server.log").read_text(errors="replace")
        assert "database system is shut down" in log and log.count("database system is ready") >= 2
    finally:
        srv.stop()


def test_the_runner_rolls_back_a_failed_migration(pg_url):
    from gui_app.core import db

    steps = (db.Migration(1, "one", "CREATE TABLE a (x INTEGER);\n-- a comment\nINSERT INTO a VALUES (1);"),
             db.Migration(2, "broken", "CREATE TABLE b (y INTEGER);\nCREATE TABLE b (y INTEGER);"))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(db.MigrationError, match="migration to schema version 2 failed") as err:
            db.migrate_postgresql(conn, steps)
        assert err.value.version == 2 and db.postgresql_schema_version(conn) == 1
        assert conn.execute("SELECT to_regclass('b')").fetchone()[0] is None  # its first statement went too
        assert db.migrate_postgresql(conn, steps[:1]) == 1


def _open(url: str, barrier, out) -> None:
    barrier.wait(timeout=60)
    s = open_store(url)
    out.put(s.schema_version)
    s.close()


def test_machines_opening_a_new_database_at_once_apply_each_migration_once(pg_url):
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(pg_url, barrier, out)) for _ in range(4)]
    for p in procs:
        p.start()
    versions = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert versions == [len(migrations("postgresql"))] * 4
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall() == [
            (m.version,) for m in migrations("postgresql")]
