-- What a judge spent on a verdict and its own words for it, kept with the score like its other fields: `usage`, the
-- tokens a language-model judge read and wrote (`Score.usage` as a JSON object: prompt_tokens, completion_tokens,
-- cached), and `rationale` (`Score.rationale`, the judge's one-sentence reason). Both NULL for scores stored before
-- and for judges that give neither (the built-in model: its tokens_kept / tokens_total say what it read). The
-- latest_scores view carries them like the other fields, so Catalog.latest_score returns them.
ALTER TABLE scores ADD COLUMN usage TEXT;
ALTER TABLE scores ADD COLUMN rationale TEXT;
DROP VIEW latest_scores;
CREATE VIEW latest_scores AS
    SELECT s.key, s.id AS score_id, s.model, s.p_success, s.first_error_step, s.step_scores, s.tokens_kept,
        s.tokens_total, s.scored_at, s.keyframe_steps, s.mask_shapes, s.masks, s.threshold, s.success, s.ood,
        s.warnings, s.seconds, s.timings, s.unknown, s.evidence, s.text_reads, s.p_harm, s.harmful, s.harm_unknown,
        s.first_harmful_step, s.harm_category, s.safety_json, s.usage, s.rationale
    FROM scores s WHERE s.id = (SELECT MAX(id) FROM scores WHERE key = s.key);
