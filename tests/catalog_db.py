"""A catalog database as an older Rollscope left it, to test upgrades."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def old_catalog(db: Path, version: int) -> sqlite3.Connection:
    """A catalog at schema ``version``: only the first ``version`` migration files applied; the caller inserts
    its rows and closes the connection."""
    from gui_app.core.library.catalog import MIGRATIONS
    from gui_app.core.db import statements

    conn = sqlite3.connect(db, isolation_level=None)
    for migration in MIGRATIONS[:version]:
        for statement in statements(migration.sql):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {int(version)}")
    return conn
