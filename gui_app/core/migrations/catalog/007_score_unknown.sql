-- A score says when the model cannot judge a run (unlike its training data, or no instruction): `unknown`.
-- The views then show "unknown" instead of a probability that would read as a confident answer, and the
-- labelling queues do not count its verdict as a disagreement with the outcome. Scores stored before: 0 (known).
ALTER TABLE scores ADD COLUMN unknown INTEGER NOT NULL DEFAULT 0;
ALTER TABLE latest_scores ADD COLUMN unknown INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trajectories ADD COLUMN model_unknown INTEGER;
UPDATE trajectories SET model_unknown = 0 WHERE score_id IS NOT NULL;
DROP TRIGGER scores_insert;
CREATE TRIGGER scores_insert AFTER INSERT ON scores BEGIN
    INSERT OR REPLACE INTO latest_scores
        (key, score_id, model, p_success, first_error_step, scored_at, threshold, success, unknown) VALUES
        (NEW.key, NEW.id, NEW.model, NEW.p_success, NEW.first_error_step, NEW.scored_at, NEW.threshold,
         NEW.success, NEW.unknown);
END;
DROP TRIGGER scores_delete;
CREATE TRIGGER scores_delete AFTER DELETE ON scores BEGIN
    DELETE FROM latest_scores WHERE key = OLD.key AND score_id = OLD.id;
    INSERT OR REPLACE INTO latest_scores
        (key, score_id, model, p_success, first_error_step, scored_at, threshold, success, unknown)
        SELECT key, id, model, p_success, first_error_step, scored_at, threshold, success, unknown FROM scores
        WHERE key = OLD.key AND NOT EXISTS (SELECT 1 FROM latest_scores WHERE key = OLD.key)
        ORDER BY id DESC LIMIT 1;
END;
DROP TRIGGER latest_scores_insert;
CREATE TRIGGER latest_scores_insert AFTER INSERT ON latest_scores BEGIN
    UPDATE trajectories SET p_success = NEW.p_success, first_error_step = NEW.first_error_step,
        score_id = NEW.score_id, threshold = NEW.threshold, model_success = NEW.success,
        model_unknown = NEW.unknown WHERE key = NEW.key;
END;
DROP TRIGGER latest_scores_delete;
CREATE TRIGGER latest_scores_delete AFTER DELETE ON latest_scores BEGIN
    UPDATE trajectories SET p_success = NULL, first_error_step = NULL, score_id = NULL, threshold = NULL,
        model_success = NULL, model_unknown = NULL WHERE key = OLD.key AND score_id = OLD.score_id;
END;
DROP TRIGGER trajectories_insert_score;
CREATE TRIGGER trajectories_insert_score AFTER INSERT ON trajectories
    WHEN EXISTS (SELECT 1 FROM latest_scores WHERE key = NEW.key) BEGIN
    UPDATE trajectories SET (p_success, first_error_step, score_id, threshold, model_success, model_unknown) =
        (SELECT p_success, first_error_step, score_id, threshold, success, unknown FROM latest_scores
         WHERE key = NEW.key)
        WHERE key = NEW.key;
END;
