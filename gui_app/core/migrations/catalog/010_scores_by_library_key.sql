-- Scores keyed by the library key. Until now a score was stored under its row's catalog key (the unit's absolute
-- path, or PATH#N), while labels and `Trajectory.key` use the library key (the row's `ref`: the path relative to
-- the library root); a moved library's rescan then had to rewrite every score's key. Now a score is stored under
-- the row's `ref`, which a move does not change, and every reader joins `t.ref = s.key`. A score whose key no row
-- holds (a run scored before it was scanned, a vanished unit's) keeps its key.
UPDATE scores SET key = (SELECT t.ref FROM trajectories t WHERE t.key = scores.key)
    WHERE EXISTS (SELECT 1 FROM trajectories t WHERE t.key = scores.key AND t.ref IS NOT NULL);
-- The view and the index scores(key, id, ...) read the column by name: neither needs rebuilding. The library's join
-- now looks each row up by its ref, through trajectories_ref.
