-- The library key of each row: the unit's path within the library (#N for a multi-trajectory file), unique and
-- stable where a format's own id is not; what labels are keyed by (gui_app.core.trajectory.identity). Rows written before
-- get theirs right after this migration (Catalog._backfill_refs: it needs the library root, which SQL does not
-- know).
ALTER TABLE trajectories ADD COLUMN ref TEXT;
CREATE INDEX trajectories_ref ON trajectories(ref);
CREATE INDEX trajectories_id ON trajectories(id);
