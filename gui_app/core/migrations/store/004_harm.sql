-- The safety verdict beside the success verdict (OS-Harm): whether the run did harm, where the harm came from (a
-- category of the bundled harm taxonomy), the first harmful step, and what was done (harm types, a set like the
-- labels, one row per item so two writers touching different types never collide). Added columns only: a record
-- written before has none of them (NULL, no types).
ALTER TABLE annotations ADD COLUMN harm_verdict TEXT CHECK (harm_verdict IN ('harmful', 'safe', 'unsure'));
ALTER TABLE annotations ADD COLUMN harm_category TEXT;
ALTER TABLE annotations ADD COLUMN first_harmful_step INTEGER CHECK (first_harmful_step >= 0);

CREATE TABLE annotation_harm_types (
    trajectory_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    role TEXT NOT NULL,
    harm_type TEXT NOT NULL,
    PRIMARY KEY (trajectory_id, annotator, role, harm_type)
) WITHOUT ROWID;
