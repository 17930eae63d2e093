"""The annotation store on a team's PostgreSQL server: several annotators on several machines label one library.

Selected with ``--store postgresql://USER@HOST:PORT/DB`` (every command that takes ``--store``) or the app's label
store setting. The queries are :class:`~gui_app.core.store.interface.SqlAnnotationStore`'s, shared with SQLite; this
module
supplies what differs on a server:

* **Locks, not a file lock.** A write runs in one READ COMMITTED transaction and locks the record it changes
  (``SELECT ... FOR UPDATE`` on its ``annotations`` row; a queue's row for a claim) before it reads what it compares
  with, so two machines changing one record queue up instead of losing an update, and machines changing different
  records never wait for each other. A deadlock or serialisation failure (two imports) is run again.
* **Never a hang.** Connecting gives up after ``connect_timeout``, a statement after ``statement_timeout``, a wait
  for a row lock after ``lock_timeout``; TCP keepalives and ``tcp_user_timeout`` notice a server that vanished from
  the network. A server that cannot be reached raises :class:`~gui_app.core.store.interface.StoreUnavailable` (the app
  then
  goes on read-only).
* **Through a restart.** A connection the server dropped (a restart, a failover) is opened again: a write keeps
  trying for ``reconnect_s`` before it gives up, so labelling carries on across a quick restart. A write whose
  connection broke while it committed may have landed: writes that are safe to run twice (every field, label and
  step write compares with what is stored first; a claim finds the item it took) run again, an override does not
  and says so.

psycopg 3 is the ``teams`` extra (``pip install 'rollscope[teams]'``); nothing imports it until a server store is
opened.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, TypeVar

from gui_app.core import db
from gui_app.core.store.interface import Cursor, SqlAnnotationStore, StoreError, StoreUnavailable, migrations

T = TypeVar("T")

# SQLSTATE classes: 08 connection exception, 57P01-57P03 admin shutdown / crash shutdown / cannot connect now.
_CONNECTION_STATES = ("08", "57P01", "57P02", "57P03")
_RETRY_STATES = ("40001", "40P01", "55P03")  # serialisation failure, deadlock, lock not available


def redact(url: str) -> str:
    """``url`` without its password (for messages and logs)."""
    url = re.sub(r"(://[^:/@?]*):[^@/?]*@", r"\1@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


@lru_cache(maxsize=512)
def _pg(sql: str) -> str:
    """A query with ``?`` placeholders (the shared SQL) in psycopg's ``%s`` style."""
    return sql.replace("?", "%s")


class _PgCursor:
    """A psycopg cursor that takes the shared ``?`` queries (see :class:`~gui_app.core.store.interface.Cursor`).

    Args:
        conn: the connection.
        server_side: each query reads through a server-side cursor (a dump of a large table streams instead of
            arriving whole); reads only.
    """

    def __init__(self, conn: Any, server_side: bool = False):
        self._conn, self._server_side, self._n = conn, server_side, 0
        self._cur = conn.cursor()

    @property
    def rowcount(self) -> int:
        return int(self._cur.rowcount)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _PgCursor:
        if self._server_side:
            self._cur.close()
            self._n += 1
            self._cur = self._conn.cursor(name=f"rollscope_page_{self._n}")
        self._cur.execute(_pg(sql), tuple(params) or None)
        return self

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> _PgCursor:
        self._cur.executemany(_pg(sql), [tuple(p) for p in seq])
        return self

    def fetchone(self) -> Any:
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._cur.fetchall())

    def fetchmany(self, size: int) -> list[Any]:
        return list(self._cur.fetchmany(size))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cur)


class PostgresAnnotationStore(SqlAnnotationStore):
    """The annotation store in a PostgreSQL database (created tables and all on first use).

    Args:
        url: ``postgresql://USER[:PASSWORD]@HOST:PORT/DB`` (any libpq URL; ``?options=-csearch_path%3Dteam`` keeps
            several teams' stores in one database).
        connect_timeout: seconds to wait for the server when connecting.
        statement_timeout: seconds one statement may run on the server.
        lock_timeout: seconds one statement may wait for a row lock before the write is run again.
        reconnect_s: how long a write keeps trying through a dropped connection or a busy record before it gives
            up with :class:`~gui_app.core.store.interface.StoreUnavailable` (or
            :class:`~gui_app.core.store.interface.StoreError`).

    Raises:
        StoreError: psycopg is missing, or the database is of a newer schema.
        StoreUnavailable: the server cannot be reached.
    """

    FOR_UPDATE = " FOR UPDATE"

    def __init__(self, url: str, *, connect_timeout: float = 5.0, statement_timeout: float = 30.0,
                 lock_timeout: float = 10.0, reconnect_s: float = 15.0):
        self.url, self.location = url, redact(url)
        self.connect_timeout, self.statement_timeout = connect_timeout, statement_timeout
        self.lock_timeout, self.reconnect_s = lock_timeout, reconnect_s
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(self.location, "a PostgreSQL store needs psycopg: pip install 'rollscope[teams]'") \
                from exc
        self._psycopg = psycopg
        self._local = threading.local()
        self._conns: list[Any] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._conninfo = self._make_conninfo()
        conn = self._conn()
        try:
            db.migrate_postgresql(conn, migrations("postgresql"))
        except db.MigrationError as exc:
            self.close()
            if self._is_connection_error(exc.__cause__):
                raise self._error(exc.__cause__, exc.reason) from exc
            raise StoreError(self.location, exc.reason) from exc
        except self._psycopg.Error as exc:
            self.close()
            raise self._error(exc, "cannot open the annotation store") from exc

    # --- connections ----------------------------------------------------------------------------
    def _make_conninfo(self) -> str:
        """The URL's connection parameters with the timeouts added (the user's own ``options`` kept)."""
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        try:
            params = conninfo_to_dict(self.url)
        except self._psycopg.Error as exc:
            raise StoreError(self.location, f"not a PostgreSQL URL: {exc}") from exc
        ms = {name: int(seconds * 1000) for name, seconds in (
            ("statement_timeout", self.statement_timeout), ("lock_timeout", self.lock_timeout))}
        # A client that died mid-transaction (a killed app) must not keep its locks for long.
        ms["idle_in_transaction_session_timeout"] = 60_000
        options = " ".join([str(params.pop("options", "") or ""), *(f"-c {k}={v}" for k, v in ms.items())]).strip()
        return make_conninfo(
            "", **{k: v for k, v in params.items() if v is not None}, options=options,
            # libpq counts whole seconds and treats anything under 2 as 2.
            connect_timeout=max(2, math.ceil(self.connect_timeout)),
            application_name=params.get("application_name") or "rollscope",
            keepalives=1, keepalives_idle=10, keepalives_interval=5, keepalives_count=3,
            tcp_user_timeout=int(1000 * (self.statement_timeout + 5)))

    def _conn(self) -> Any:
        """This thread's connection (opened on first use, and again after the server dropped it)."""
        if self._closed:
            raise StoreError(self.location, "the annotation store is closed")
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._forget(conn)
        try:
            conn = self._psycopg.connect(self._conninfo, autocommit=True)
        except self._psycopg.Error as exc:
            raise self._error(exc, "cannot reach the PostgreSQL server") from exc
        try:
            db.check_postgresql_version(conn, migrations("postgresql"))
        except db.MigrationError as exc:
            conn.close()
            raise StoreError(self.location, exc.reason) from exc
        except self._psycopg.Error as exc:
            conn.close()
            raise self._error(exc, "cannot open the annotation store") from exc
        self._local.conn = conn
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _forget(self, conn: Any) -> None:
        """Drop a connection the server closed (its thread opens a new one next time)."""
        if conn is None:
            return
        self._local.conn = None
        with self._conns_lock:
            if conn in self._conns:
                self._conns.remove(conn)
        try:
            conn.close()
        except self._psycopg.Error:
            pass  # already gone: nothing to release

    @staticmethod
    def _is_connection_error(exc: BaseException | None) -> bool:
        state = getattr(getattr(exc, "diag", None), "sqlstate", None)
        if state is not None:
            return bool(state.startswith(_CONNECTION_STATES))
        # libpq errors raised before a server answered (refused, timed out, broken socket) carry no SQLSTATE.
        return type(exc).__name__ in ("OperationalError", "InterfaceError")

    def _error(self, exc: BaseException | None, doing: str) -> StoreError:
        """A domain error for a driver error: :class:`StoreUnavailable` when the server is out of reach."""
        text = " ".join(str(exc).split()) if exc is not None else "unknown error"
        if self._is_connection_error(exc):
            return StoreUnavailable(self.location, f"{doing}: {text}")
        if getattr(getattr(exc, "diag", None), "sqlstate", None) == "57014":  # query_canceled: statement_timeout
            return StoreUnavailable(self.location, f"{doing}: the server did not answer within "
                                                   f"{self.statement_timeout:g} s")
        return StoreError(self.location, f"{doing}: {text}")

    @property
    def schema_version(self) -> int:
        try:
            return db.postgresql_schema_version(self._conn())
        except self._psycopg.Error as exc:
            raise self._error(exc, "read failed") from exc

    # --- transactions ---------------------------------------------------------------------------
    def _write(self, fn: Callable[[Cursor], T], *, idempotent: bool = True) -> T:
        """Run ``fn`` in one transaction; again after a deadlock, a lock wait that timed out or a dropped
        connection, until ``reconnect_s`` has passed.

        Raises:
            StoreUnavailable: the server stayed out of reach (nothing was written).
            StoreError: the write failed (nothing was changed), or the connection broke while an override was
                committing (it may or may not be stored).
        """
        deadline = time.monotonic() + self.reconnect_s
        delay = 0.05
        while True:
            committing = False
            try:
                conn = self._conn()
                cur = _PgCursor(conn)
                try:
                    conn.execute("BEGIN")
                    result = fn(cur)
                    committing = True
                    conn.execute("COMMIT")
                    return result
                except BaseException:
                    if not committing and not conn.broken and not conn.closed:
                        try:
                            conn.execute("ROLLBACK")
                        except self._psycopg.Error:
                            self._forget(conn)
                    raise
            except self._psycopg.Error as exc:
                state = getattr(exc.diag, "sqlstate", None) or ""
                if self._is_connection_error(exc):
                    self._forget(getattr(self._local, "conn", None))
                    if committing and not idempotent:
                        raise StoreError(self.location, "the connection to the server broke while the change was "
                                                        f"being committed; it may or may not be stored: {exc}") \
                            from exc
                    if time.monotonic() > deadline:
                        raise self._error(exc, f"write failed after trying for {self.reconnect_s:g} s, "
                                               "nothing was changed") from exc
                elif state.startswith(_RETRY_STATES):
                    if time.monotonic() > deadline:
                        raise StoreError(self.location, f"the record stayed locked for {self.reconnect_s:g} s, "
                                                        f"nothing was changed: {exc}") from exc
                else:
                    raise self._error(exc, "write failed, nothing was changed") from exc
            except StoreUnavailable as exc:
                if time.monotonic() > deadline:  # connecting again failed all along
                    raise StoreUnavailable(self.location, f"write failed after trying for {self.reconnect_s:g} s, "
                                                          f"nothing was changed: {exc.reason}") from exc
            time.sleep(delay * (1 + random.random()))  # jitter: writers that collided do not collide again
            delay = min(delay * 2, 1.0)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        for attempt in (0, 1):
            try:
                return _PgCursor(self._conn()).execute(sql, params).fetchall()
            except self._psycopg.Error as exc:
                if attempt == 0 and self._is_connection_error(exc):
                    self._forget(getattr(self._local, "conn", None))  # dropped since the last read: once more
                    continue
                raise self._error(exc, "read failed") from exc
        raise AssertionError("unreachable")

    @contextmanager
    def _snapshot(self) -> Iterator[Cursor]:
        conn = self._conn()
        try:
            if conn.broken:
                raise self._psycopg.OperationalError("the connection was dropped")
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        except self._psycopg.Error:
            self._forget(conn)  # dropped since the last read (a restart): one new connection, then the error
            conn = self._conn()
            try:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            except self._psycopg.Error as exc:
                raise self._error(exc, "read failed") from exc
        try:
            yield _PgCursor(conn)
        except self._psycopg.Error as exc:
            raise self._error(exc, "read failed") from exc
        finally:
            if not conn.broken and not conn.closed:
                try:
                    conn.execute("COMMIT")
                except self._psycopg.Error:
                    self._forget(conn)

    @contextmanager
    def _pages(self) -> Iterator[Cursor]:
        try:
            conn = self._psycopg.connect(self._conninfo, autocommit=True)
        except self._psycopg.Error as exc:
            raise self._error(exc, "read failed") from exc
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield _PgCursor(conn, server_side=True)
            conn.execute("COMMIT")
        except self._psycopg.Error as exc:
            raise self._error(exc, "read failed") from exc
        finally:
            conn.close()

    def _identity_written(self, cur: Cursor, table: str) -> None:
        cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table}), false)")

    def ping(self) -> None:
        self._read("SELECT 1")

    def close(self) -> None:
        """Close every connection this store opened (in any thread); later calls raise :class:`StoreError`."""
        with self._conns_lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.close()
            except self._psycopg.Error:
                pass  # a connection the server already dropped
        self._local = threading.local()
