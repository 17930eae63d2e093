-- The PostgreSQL twin of store/004_harm.sql: the safety verdict, its category, the first harmful step and the harm
-- types (text keys collate as "C", as in 001).
ALTER TABLE annotations ADD COLUMN harm_verdict TEXT CHECK (harm_verdict IN ('harmful', 'safe', 'unsure'));
ALTER TABLE annotations ADD COLUMN harm_category TEXT;
ALTER TABLE annotations ADD COLUMN first_harmful_step INTEGER CHECK (first_harmful_step >= 0);

CREATE TABLE annotation_harm_types (
    trajectory_id TEXT COLLATE "C" NOT NULL,
    annotator TEXT COLLATE "C" NOT NULL,
    role TEXT COLLATE "C" NOT NULL,
    harm_type TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (trajectory_id, annotator, role, harm_type)
);
