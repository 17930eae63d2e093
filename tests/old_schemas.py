"""Databases as Rollscope left them before the one migration runner (schema SQL copied from that release's code).

The catalog's schema lived in inline strings in gui_app/core/library/catalog.py (versions 1-4); the annotation store's
in gui_app/core/migrations/001_annotations.sql and 002_queues.sql, applied in one transaction with a
schema_migrations log. Tests build files from this text, not from today's migration files, so a change to those
files cannot hide a broken upgrade of what users have on disk.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

CATALOG_V4_SQL = """
CREATE TABLE files (
    path         TEXT PRIMARY KEY,   -- unit path (file or directory), absolute
    format       TEXT,               -- importer that read it
    size         INTEGER NOT NULL,   -- file size, or total size of a directory's direct files
    mtime_ns     INTEGER NOT NULL,   -- file mtime, or the newest mtime of a directory and its direct entries
    n_entries    INTEGER NOT NULL,   -- 1 for a file; number of direct entries of a directory
    scanned_at   REAL NOT NULL
);
CREATE TABLE trajectories (
    key            TEXT PRIMARY KEY, -- what formats.load accepts: unit path, or PATH#N
    id             TEXT NOT NULL,
    path           TEXT NOT NULL,    -- unit path (files.path)
    format         TEXT,
    instruction    TEXT NOT NULL DEFAULT '',
    task           TEXT,
    app            TEXT,
    n_steps        INTEGER,
    duration       REAL,
    success        INTEGER,          -- 1, 0 or NULL (unknown)
    score          REAL,
    outcome_source TEXT,
    has_video      INTEGER NOT NULL DEFAULT 0,
    error          TEXT,             -- load error; NULL when the trajectory loaded
    warnings       INTEGER NOT NULL DEFAULT 0,
    scanned_at     REAL NOT NULL,
    search         TEXT NOT NULL DEFAULT ''  -- lower-cased id, instruction and task, for text search
);
CREATE INDEX trajectories_path ON trajectories(path);
CREATE INDEX trajectories_format ON trajectories(format);
CREATE INDEX trajectories_success ON trajectories(success);
CREATE INDEX trajectories_task ON trajectories(task);
CREATE INDEX trajectories_instruction ON trajectories(instruction COLLATE NOCASE);
CREATE TABLE scores (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- larger = later: the latest score per key wins
    key              TEXT NOT NULL,
    model            TEXT,
    p_success        REAL,
    first_error_step INTEGER,
    step_scores      TEXT,           -- JSON list, one number per step
    tokens_kept      INTEGER,
    tokens_total     INTEGER,
    scored_at        REAL NOT NULL
);
CREATE INDEX scores_key ON scores(key, id);
-- The latest score per key, kept by triggers, so the library joins one small row per trajectory.
CREATE TABLE latest_scores (
    key              TEXT PRIMARY KEY,
    score_id         INTEGER NOT NULL,
    model            TEXT,
    p_success        REAL,
    first_error_step INTEGER,
    scored_at        REAL NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER scores_insert AFTER INSERT ON scores BEGIN
    INSERT OR REPLACE INTO latest_scores VALUES
        (NEW.key, NEW.id, NEW.model, NEW.p_success, NEW.first_error_step, NEW.scored_at);
END;
CREATE TRIGGER scores_delete AFTER DELETE ON scores BEGIN
    DELETE FROM latest_scores WHERE key = OLD.key AND score_id = OLD.id;
    INSERT OR REPLACE INTO latest_scores
        SELECT key, id, model, p_success, first_error_step, scored_at FROM scores
        WHERE key = OLD.key AND NOT EXISTS (SELECT 1 FROM latest_scores WHERE key = OLD.key)
        ORDER BY id DESC LIMIT 1;
END;
CREATE TABLE meta (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    rows_version INTEGER NOT NULL
);
INSERT INTO meta (id, rows_version) VALUES (1, 0);
ALTER TABLE scores ADD COLUMN keyframe_steps TEXT;  -- JSON list: the step of each keyframe
ALTER TABLE scores ADD COLUMN mask_shapes TEXT;     -- JSON list of [rows, cols], one per keyframe
ALTER TABLE scores ADD COLUMN masks BLOB;           -- np.packbits of each mask (row-major), concatenated
ALTER TABLE trajectories ADD COLUMN p_success REAL;
ALTER TABLE trajectories ADD COLUMN first_error_step INTEGER;
ALTER TABLE trajectories ADD COLUMN score_id INTEGER;  -- latest_scores.score_id; NULL: never scored
UPDATE trajectories SET (p_success, first_error_step, score_id) =
    (SELECT p_success, first_error_step, score_id FROM latest_scores s WHERE s.key = trajectories.key);
-- latest_scores changes by INSERT OR REPLACE (a new score) and DELETE (scores_delete): mirror both.
CREATE TRIGGER latest_scores_insert AFTER INSERT ON latest_scores BEGIN
    UPDATE trajectories SET p_success = NEW.p_success, first_error_step = NEW.first_error_step,
        score_id = NEW.score_id WHERE key = NEW.key;
END;
CREATE TRIGGER latest_scores_delete AFTER DELETE ON latest_scores BEGIN
    UPDATE trajectories SET p_success = NULL, first_error_step = NULL, score_id = NULL
        WHERE key = OLD.key AND score_id = OLD.score_id;
END;
-- A trajectory (re)written by a scan takes the score it already has (scores may precede the scan).
CREATE TRIGGER trajectories_insert_score AFTER INSERT ON trajectories
    WHEN EXISTS (SELECT 1 FROM latest_scores WHERE key = NEW.key) BEGIN
    UPDATE trajectories SET (p_success, first_error_step, score_id) =
        (SELECT p_success, first_error_step, score_id FROM latest_scores WHERE key = NEW.key)
        WHERE key = NEW.key;
END;
"""

STORE_V2_SQL = """
-- Annotation records, one per (trajectory, annotator, role). Collections live in their own tables, one row per
-- item, so concurrent writers that touch different labels/steps of one record never overwrite each other.
CREATE TABLE annotations (
    trajectory_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT 'annotator' CHECK (role IN ('annotator', 'adjudicator')),
    verdict TEXT CHECK (verdict IN ('success', 'failure', 'unsure')),
    root_cause_step INTEGER CHECK (root_cause_step >= 0),
    root_cause_module TEXT,
    root_cause_error_type TEXT,
    evidence TEXT,
    correction_guidance TEXT,
    notes TEXT,
    confidence REAL CHECK (confidence BETWEEN 0 AND 1),
    time_spent REAL CHECK (time_spent >= 0),
    mistake_agent TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (trajectory_id, annotator, role)
);
CREATE INDEX annotations_by_annotator ON annotations (annotator, role);

CREATE TABLE annotation_labels (
    trajectory_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    role TEXT NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (trajectory_id, annotator, role, label)
) WITHOUT ROWID;

CREATE TABLE annotation_cascading (
    trajectory_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    role TEXT NOT NULL,
    step INTEGER NOT NULL CHECK (step >= 0),
    effect TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (trajectory_id, annotator, role, step)
) WITHOUT ROWID;

CREATE TABLE annotation_step_comments (
    trajectory_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    role TEXT NOT NULL,
    step INTEGER NOT NULL CHECK (step >= 0),
    comment TEXT NOT NULL,
    PRIMARY KEY (trajectory_id, annotator, role, step)
) WITHOUT ROWID;

-- Every change: who (actor), when, which field, old -> new (JSON text).
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    trajectory_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    role TEXT NOT NULL,
    actor TEXT NOT NULL,
    at REAL NOT NULL,
    field TEXT NOT NULL,
    old TEXT,
    new TEXT
);
CREATE INDEX audit_by_record ON audit (trajectory_id, annotator, role);

-- A human override of the model's (or environment's) outcome, with who and why.
CREATE TABLE score_overrides (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    trajectory_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    at REAL NOT NULL,
    success INTEGER,
    score REAL,
    previous_success INTEGER,
    previous_score REAL,
    reason TEXT NOT NULL CHECK (length(trim(reason)) > 0)
);
CREATE INDEX score_overrides_by_trajectory ON score_overrides (trajectory_id);
-- Labelling queues: an ordered list of trajectories, each assigned to k distinct annotators.
CREATE TABLE queues (
    name TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    k INTEGER NOT NULL CHECK (k >= 1),
    spec TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE queue_assignments (
    queue TEXT NOT NULL REFERENCES queues (name) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    trajectory_id TEXT NOT NULL,
    key TEXT,
    annotator TEXT NOT NULL,
    PRIMARY KEY (queue, trajectory_id, annotator)
);
CREATE INDEX queue_assignments_by_annotator ON queue_assignments (queue, annotator, position);
"""


def _run(conn: sqlite3.Connection, script: str) -> None:
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            conn.execute(buf)
            buf = ""


def old_catalog_v4(path: Path) -> sqlite3.Connection:
    """A catalog at schema version 4 as the old code built it (WAL, meta row); insert rows, then close."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    _run(conn, CATALOG_V4_SQL)
    conn.execute("PRAGMA user_version = 4")
    return conn


def old_store_v2(path: Path) -> sqlite3.Connection:
    """An annotation store at schema version 2 as the old code built it (with its schema_migrations log)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at REAL)")
    _run(conn, STORE_V2_SQL)
    conn.executemany("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                     [(1, "annotations", time.time()), (2, "queues", time.time())])
    conn.execute("PRAGMA user_version = 2")
    conn.execute("COMMIT")
    return conn
