-- What a verdict read (model v3): the video always, and the step log's actions, click points, typed text, claims
-- and answer where the run had them (a JSON list of names), and how many text crops the model read. Scores
-- stored before have neither (NULL: not recorded). The latest_scores view carries them like the other fields.
ALTER TABLE scores ADD COLUMN evidence TEXT;
ALTER TABLE scores ADD COLUMN text_reads INTEGER;
DROP VIEW latest_scores;
CREATE VIEW latest_scores AS
    SELECT s.key, s.id AS score_id, s.model, s.p_success, s.first_error_step, s.step_scores, s.tokens_kept,
        s.tokens_total, s.scored_at, s.keyframe_steps, s.mask_shapes, s.masks, s.threshold, s.success, s.ood,
        s.warnings, s.seconds, s.timings, s.unknown, s.evidence, s.text_reads
    FROM scores s WHERE s.id = (SELECT MAX(id) FROM scores WHERE key = s.key);
