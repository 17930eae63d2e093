-- Instructions users give the runs of a task that have none (an OSWorld result without its task config), so they
-- can be judged: typed in the app, or read from a task config in a folder the user pointed at. One per scope key
-- (gui_app.core.scoring.instructions.scopes): `task:<id>` (every run of a task), `domain:<name>` (every run of a
-- domain) or `run:<library key>` (one run). Scoring judges a run without an instruction against the most specific
-- one that applies. Not derived data: a rescan keeps them.
CREATE TABLE instruction_overrides (
    task_key     TEXT PRIMARY KEY,   -- the scope key
    instruction  TEXT NOT NULL,
    source       TEXT NOT NULL,      -- 'user' (typed) or 'task_config' (read from a task config)
    origin       TEXT,               -- the task config it was read from; NULL when typed
    set_at       REAL NOT NULL
);
