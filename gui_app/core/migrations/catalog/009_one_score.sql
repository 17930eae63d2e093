-- One stored score. Until now a score lived in three places: `scores`, a `latest_scores` table and columns of the
-- trajectory row copied from it (p_success, first_error_step, score_id, threshold, model_success, model_unknown),
-- kept in step by triggers and, after a moved library's rescan, by hand; the hand copy forgot `model_unknown`, and
-- runs the model cannot judge then showed a confident verdict. Now `scores` is the only place a score is stored and
-- `latest_scores` is a view over it (each key's row with the largest id), which every reader reads. Every score is
-- kept.
--
-- The library joins the view by key for every row it lists, through the index scores(key, id), which also carries
-- the fields the library shows: SQLite keeps an index in step itself, and with it the library's join never reads
-- a score's own row, which holds its per-step scores and pruning masks (a few KB: without it the first query over
-- 10,000 scored runs took 15 ms longer, reading them).
DROP INDEX scores_key;
CREATE INDEX scores_key ON scores(key, id, p_success, first_error_step, threshold, success, unknown);
DROP TRIGGER trajectories_insert_score;
DROP TRIGGER latest_scores_insert;
DROP TRIGGER latest_scores_delete;
DROP TRIGGER scores_insert;
DROP TRIGGER scores_delete;
DROP TABLE latest_scores;
CREATE VIEW latest_scores AS
    SELECT s.key, s.id AS score_id, s.model, s.p_success, s.first_error_step, s.step_scores, s.tokens_kept,
        s.tokens_total, s.scored_at, s.keyframe_steps, s.mask_shapes, s.masks, s.threshold, s.success, s.ood,
        s.warnings, s.seconds, s.timings, s.unknown
    FROM scores s WHERE s.id = (SELECT MAX(id) FROM scores WHERE key = s.key);
-- The copied columns go by rebuilding the table (ALTER TABLE DROP COLUMN needs SQLite 3.35, newer than some
-- systems' Python links): same columns otherwise, same rowids (the library reads the rows in that order), same
-- indexes.
CREATE TABLE trajectories_new (
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
    search         TEXT NOT NULL DEFAULT '',  -- lower-cased id, instruction and task, for text search
    ref            TEXT              -- the library key (migration 6)
);
INSERT INTO trajectories_new (rowid, key, id, path, format, instruction, task, app, n_steps, duration, success, score,
                              outcome_source, has_video, error, warnings, scanned_at, search, ref)
    SELECT rowid, key, id, path, format, instruction, task, app, n_steps, duration, success, score, outcome_source,
        has_video, error, warnings, scanned_at, search, ref FROM trajectories;
DROP TABLE trajectories;
ALTER TABLE trajectories_new RENAME TO trajectories;
CREATE INDEX trajectories_path ON trajectories(path);
CREATE INDEX trajectories_format ON trajectories(format);
CREATE INDEX trajectories_success ON trajectories(success);
CREATE INDEX trajectories_task ON trajectories(task);
CREATE INDEX trajectories_instruction ON trajectories(instruction COLLATE NOCASE);
CREATE INDEX trajectories_ref ON trajectories(ref);
CREATE INDEX trajectories_id ON trajectories(id);
