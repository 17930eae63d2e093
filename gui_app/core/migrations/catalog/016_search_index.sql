-- A text index of the rows' search text, so a search on a catalog just opened finds its rows without reading every
-- row (Catalog.query's first search; the rows it caches are read later). FTS5's trigram tokenizer indexes every
-- three characters, so a search word of three characters or more is found as a substring, as the library searches;
-- case_sensitive 1 because the search text and the searched words are both lower-cased by Python already. The index
-- holds no copy of the text (content='trajectories'): triggers keep it in step with every insert, delete and change
-- of a row's search text (the catalog's connections turn recursive_triggers on, so an INSERT OR REPLACE that deletes
-- a row says so). A SQLite built without FTS5 or its trigram tokenizer fails this file: the catalog then stays at
-- version 15 and searches as before (see Catalog._migrate).
CREATE VIRTUAL TABLE trajectories_search USING fts5(search, content='trajectories', content_rowid='rowid',
    tokenize='trigram case_sensitive 1', detail='full');
CREATE TRIGGER trajectories_search_insert AFTER INSERT ON trajectories BEGIN
    INSERT INTO trajectories_search(rowid, search) VALUES (NEW.rowid, NEW.search);
END;
CREATE TRIGGER trajectories_search_delete AFTER DELETE ON trajectories BEGIN
    INSERT INTO trajectories_search(trajectories_search, rowid, search) VALUES ('delete', OLD.rowid, OLD.search);
END;
CREATE TRIGGER trajectories_search_update AFTER UPDATE OF search ON trajectories BEGIN
    INSERT INTO trajectories_search(trajectories_search, rowid, search) VALUES ('delete', OLD.rowid, OLD.search);
    INSERT INTO trajectories_search(rowid, search) VALUES (NEW.rowid, NEW.search);
END;
INSERT INTO trajectories_search(trajectories_search) VALUES ('rebuild');
-- The filters a first query answers in SQL: a load error (has_error, the outcome filter's "unknown").
CREATE INDEX trajectories_error ON trajectories(error IS NULL);
