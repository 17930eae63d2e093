-- What tells runs of one task apart in the library: the run's folder (`metadata["run_folder"]`), its domain
-- (`metadata["domain"]`) and the agent or model that ran it (`Trajectory.agent`), shown, sorted and searched like the
-- other columns; and the scope an instruction given to the run covers by default (`task:<id>`, `domain:<name>` or
-- `run:<library key>`: gui_app.core.scoring.instructions.task_key), so the library can tell which runs still have
-- nothing to be judged against without loading them. The task column of a run without a task id now holds its
-- domain instead of its app.
ALTER TABLE trajectories ADD COLUMN run_folder TEXT;
ALTER TABLE trajectories ADD COLUMN domain TEXT;
ALTER TABLE trajectories ADD COLUMN agent TEXT;
ALTER TABLE trajectories ADD COLUMN task_key TEXT;
-- Rows written before hold none of these: the next scan reads every unit again (a unit is skipped only when its
-- size and modification time match what `files` holds, and no file has this time).
UPDATE files SET mtime_ns = -1;
