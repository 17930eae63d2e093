-- What the last walk of the library decided for each folder it walked, with the folder's signature (its mtime and its
-- direct entries' sizes and mtimes, as files keeps for units): a rescan reuses the decisions of every folder whose
-- signature did not change instead of asking every importer again (50,000 unchanged empty folders took 19 s).
CREATE TABLE folders (
    path        TEXT PRIMARY KEY,   -- the folder, absolute
    size        INTEGER NOT NULL,   -- total size of its direct files
    mtime_ns    INTEGER NOT NULL,   -- the newest mtime of the folder and its direct entries
    n_entries   INTEGER NOT NULL,   -- number of direct entries
    importer    TEXT,               -- the importer that claimed the folder as a unit; NULL: none (it was walked into)
    files       TEXT NOT NULL DEFAULT '{}',  -- JSON {file name: importer or null} of its direct files, when walked
    scanned_at  REAL NOT NULL
);
