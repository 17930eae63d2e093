"""The annotation store on a SQLite file (the default: ``LIBRARY/.rollscope/labels.sqlite``), over the shared SQL of
:class:`~gui_app.core.store.interface.SqlAnnotationStore`."""

from __future__ import annotations

import os
import random
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gui_app.core import db
from gui_app.core.store.interface import (
    _SQLITE_MAGIC,
    Cursor,
    SqlAnnotationStore,
    StoreError,
    T,
    _remove_stale_builds,
    migrations,
)


class SqliteAnnotationStore(SqlAnnotationStore):
    """The default store: one SQLite file in WAL mode, safe for several processes on one machine.

    Args:
        path: the database file (created with its folder when missing, unless ``read_only``).
        busy_timeout: seconds a writer waits for another's lock before retrying.
        read_only: open for reading only: nothing is created, migrated or written (writes raise
            :class:`StoreError`), so a store on a read-only disk can still be listed and exported.

    Raises:
        StoreError: the file is missing (read-only), is not an annotation store, or is of a newer schema.
    """

    RETRIES = 20

    def __init__(self, path: str | Path, busy_timeout: float = 10.0, read_only: bool = False):
        self.path = Path(path)
        self.location = str(self.path)
        self.busy_timeout = busy_timeout
        self.read_only = read_only
        self._uri: str | None = None  # how read-only connections open the file (see _connect_read_only)
        self._conns = db.ThreadConnections()  # each thread's own; every use of one is inside its use()
        self._closed = False
        if not read_only:
            self._create_if_missing()
        self._check_file()
        try:
            # What the file is, asked before anything is written to it (not even the switch to WAL mode).
            probe = self._connect_read_only() if read_only else sqlite3.connect(str(self.path), isolation_level=None)
            try:
                self._check_tables(probe)
                version = db.check_version(probe, migrations())
            finally:
                probe.close()
            if read_only and version < migrations()[-1].version:
                raise StoreError(self.path, f"schema version {version} is older than this Rollscope's "
                                            f"({migrations()[-1].version}) and the store is opened read-only; "
                                            "open it once with write access to upgrade it")
            if not read_only:
                db.migrate(self._conn(), migrations())
        except db.MigrationError as exc:
            self.close()
            raise StoreError(self.path, exc.reason) from exc
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(self.path, f"cannot open annotation store: {exc}") from exc
        except StoreError:
            self.close()
            raise

    # --- the file -----------------------------------------------------------------------------------
    def _create_if_missing(self) -> None:
        """Create a missing store whole: built under a temporary name, migrated, then linked into place.

        Opening a missing path with SQLite leaves an empty file until the first commit; one killed in between would
        leave a 0-byte file that is then indistinguishable from any empty file a user names by mistake. Built
        aside, the path holds a complete store or nothing, and :meth:`_check_file` can refuse every other file.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(self.path, f"cannot create the store's folder: {exc.strerror or exc}") from exc
        if os.path.lexists(self.path):
            return
        _remove_stale_builds(self.path)
        tmp = self.path.with_name(f".{self.path.name}.new-{os.getpid()}-{threading.get_ident()}")
        try:
            conn = sqlite3.connect(str(tmp), isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                db.migrate(conn, migrations())
            finally:
                conn.close()  # the last connection checkpoints the WAL into the file and removes it
            try:
                os.link(tmp, self.path)  # never replaces: a store another process created meanwhile wins
            except FileExistsError:
                pass
        except (OSError, sqlite3.Error, db.MigrationError) as exc:
            reason = exc.reason if isinstance(exc, db.MigrationError) else getattr(exc, "strerror", None) or exc
            raise StoreError(self.path, f"cannot create the annotation store: {reason}") from exc
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
                leftover.unlink(missing_ok=True)

    def _check_file(self) -> None:
        """Refuse what is not an SQLite file before SQLite sees it (it would turn an empty file into a database)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise StoreError(self.path, "no annotation store here (use --store PATH or --root LIBRARY)") from None
        except OSError as exc:
            raise StoreError(self.path, f"cannot open annotation store: {exc.strerror or exc}") from exc
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(self.path, "not an annotation store: not a regular file")
        try:
            with open(self.path, "rb") as fh:
                header = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(self.path, f"cannot open annotation store: {exc.strerror or exc}") from exc
        if header != _SQLITE_MAGIC:
            what = "an empty file" if st.st_size == 0 else "not an SQLite database"
            raise StoreError(self.path, f"not an annotation store ({what}); nothing was written to it")

    def _check_tables(self, conn: sqlite3.Connection) -> None:
        """Refuse another program's SQLite database (migrating it would add our tables to it)."""
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                 "AND name NOT LIKE 'sqlite_%'")}
            version = db.schema_version(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(self.path, f"not an annotation store: {exc}") from exc
        if (version == 0 and tables - {"schema_migrations"}) or (version > 0 and "annotations" not in tables):
            raise StoreError(self.path, "not an annotation store (an SQLite database of another kind: "
                                        f"{', '.join(sorted(tables)[:5]) or 'no tables'}); nothing was written to it")

    # --- connections and schema -------------------------------------------------------------------
    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that never writes, not even the WAL index.

        ``mode=ro`` still needs to create the ``-shm`` file of a WAL database; where that cannot be written (a
        read-only folder or disk) the file is opened ``immutable``, which is exact as long as nothing writes to it
        meanwhile -- true of a file this process cannot write -- and as long as no ``-wal`` holds commits not yet
        in the file, which is checked first.
        """
        base = self.path.resolve().as_uri()
        last: sqlite3.Error | None = None
        for uri in ([self._uri] if self._uri else [f"{base}?mode=ro", f"{base}?mode=ro&immutable=1"]):
            if uri.endswith("immutable=1"):
                wal = Path(f"{self.path}-wal")
                if wal.exists() and wal.stat().st_size > 0:
                    raise StoreError(self.path, "cannot be read: it is read-only and its -wal file holds changes "
                                                "not yet in it; open it once with write access")
            try:
                conn = sqlite3.connect(uri, uri=True, timeout=self.busy_timeout, isolation_level=None,
                                       check_same_thread=False)
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError as exc:
                last = exc
                continue
            except sqlite3.DatabaseError as exc:
                raise StoreError(self.path, f"not an annotation store: {exc}") from exc
            self._uri = uri
            return conn
        raise StoreError(self.path, f"cannot open annotation store read-only: {last}")

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use).

        One per thread, not one shared behind a lock: a worker waiting up to ``busy_timeout`` for another
        process's write lock would otherwise hold up every read of the GUI thread as long.
        """
        if self._closed:
            raise StoreError(self.path, "the annotation store is closed")
        conn = self._conns.mine()
        if conn is not None:
            return conn
        if self.read_only:
            conn = self._connect_read_only()
        else:
            try:
                # check_same_thread=False only so close() may close every thread's connection (see
                # db.ThreadConnections).
                conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout, isolation_level=None,
                                       check_same_thread=False)
            except sqlite3.Error as exc:
                raise StoreError(self.path, f"cannot open annotation store: {exc}") from exc
            try:
                db.check_version(conn, migrations())  # a foreign or newer file is left untouched
                conn.execute("PRAGMA journal_mode=WAL")
                # NORMAL in WAL mode: a commit survives the app being killed; only an OS crash could lose the last
                # one.
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA foreign_keys=ON")
            except db.MigrationError as exc:
                conn.close()
                raise StoreError(self.path, exc.reason) from exc
            except sqlite3.Error as exc:
                conn.close()
                raise StoreError(self.path, f"cannot open annotation store: {exc}") from exc
        self._conns.add(conn)
        return conn

    @property
    def schema_version(self) -> int:
        try:
            with self._conns.use():
                return db.schema_version(self._conn())
        except sqlite3.Error as exc:
            raise StoreError(self.path, f"read failed: {exc}") from exc

    # --- transactions -------------------------------------------------------------------------
    def _transaction(self, fn: Callable[[Cursor], T]) -> T:
        """Run ``fn`` in ``BEGIN IMMEDIATE`` (the write lock is taken up front, so the reads inside see the
        latest committed state and nobody can write between our read and our write); retry when busy.

        Each attempt waits up to ``busy_timeout`` for the lock, so a write can take ``RETRIES`` times as long: the
        app runs writes in a worker (``gui_app.qt.workers``), never in the GUI thread.
        """
        with self._conns.use():
            return self._attempts(fn)

    def _attempts(self, fn: Callable[[Cursor], T]) -> T:
        delay = 0.005
        conn = self._conn()
        for _attempt in range(self.RETRIES):
            cur = conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StoreError(self.path, f"cannot start a write: {exc}") from exc
            else:
                try:
                    result = fn(cur)
                    cur.execute("COMMIT")
                    return result
                except BaseException:
                    if conn.in_transaction:
                        cur.execute("ROLLBACK")
                    raise
            time.sleep(delay * (1 + random.random()))  # jitter breaks lock-step between two writers
            delay = min(delay * 2, 0.5)
        raise StoreError(self.path, f"the store stayed locked after {self.RETRIES} attempts")

    def _write(self, fn: Callable[[Cursor], T], *, idempotent: bool = True) -> T:
        # One file on one machine: a commit either happened or raised, so there is nothing to run twice.
        if self.read_only:
            raise StoreError(self.path, "opened read-only; nothing was changed")
        try:
            return self._transaction(fn)
        except sqlite3.Error as exc:
            raise StoreError(self.path, f"write failed, nothing was changed: {exc}") from exc

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._conns.use():
                return self._conn().execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(self.path, f"read failed: {exc}") from exc

    @contextmanager
    def _snapshot(self) -> Iterator[Cursor]:
        try:
            with self._conns.use():
                conn = self._conn()
                conn.execute("BEGIN")
                try:
                    yield conn.cursor()
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(self.path, f"read failed: {exc}") from exc

    @contextmanager
    def _pages(self) -> Iterator[Cursor]:
        ro = self._connect_read_only()  # also where the store's folder cannot be written
        try:
            ro.execute("BEGIN")
            yield ro.cursor()
            ro.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(self.path, f"read failed: {exc}") from exc
        finally:
            ro.close()

    def close(self) -> None:
        """Close every connection this store opened (in any thread); later calls raise :class:`StoreError`."""
        self._closed = True
        self._conns.close_all()


# What ``rollscope labels migrate`` reports, in words, for each count (tables, and the adjudicated records).
