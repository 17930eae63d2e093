-- The harm verdict beside success (`Score.safety`, gui_app.core.scoring.score.Safety): stored whole as its JSON
-- (`safety_json`: p_harm, verdict, first harmful step, category, types, evidence lines, threshold, unknown, per-step
-- harm scores), which is what Catalog.latest_score reads back, and its few fields the library lists, sorts, filters
-- and queues by as columns of the same row, written from the same Safety: `p_harm`, `harmful` (1/0, NULL when the
-- judge gives no verdict), `harm_unknown` (1 when the judge cannot say; NULL with no safety verdict at all),
-- `first_harmful_step` and `harm_category`. Scores stored before, and scores of judges that give no harm verdict,
-- have NULL in all of them (no safety verdict). The latest_scores view carries them like the other fields.
ALTER TABLE scores ADD COLUMN p_harm REAL;
ALTER TABLE scores ADD COLUMN harmful INTEGER;
ALTER TABLE scores ADD COLUMN harm_unknown INTEGER;
ALTER TABLE scores ADD COLUMN first_harmful_step INTEGER;
ALTER TABLE scores ADD COLUMN harm_category TEXT;
ALTER TABLE scores ADD COLUMN safety_json TEXT;
-- The library's join reads the fields it shows from the index alone (migration 9): the harm columns join them.
DROP INDEX scores_key;
CREATE INDEX scores_key ON scores(key, id, p_success, first_error_step, threshold, success, unknown, p_harm, harmful,
    harm_unknown);
DROP VIEW latest_scores;
CREATE VIEW latest_scores AS
    SELECT s.key, s.id AS score_id, s.model, s.p_success, s.first_error_step, s.step_scores, s.tokens_kept,
        s.tokens_total, s.scored_at, s.keyframe_steps, s.mask_shapes, s.masks, s.threshold, s.success, s.ood,
        s.warnings, s.seconds, s.timings, s.unknown, s.evidence, s.text_reads, s.p_harm, s.harmful, s.harm_unknown,
        s.first_harmful_step, s.harm_category, s.safety_json
    FROM scores s WHERE s.id = (SELECT MAX(id) FROM scores WHERE key = s.key);
