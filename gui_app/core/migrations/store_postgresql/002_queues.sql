-- The PostgreSQL twin of store/002_queues.sql.
CREATE TABLE queues (
    name TEXT COLLATE "C" PRIMARY KEY,
    created_at DOUBLE PRECISION NOT NULL,
    k INTEGER NOT NULL CHECK (k >= 1),
    spec TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE queue_assignments (
    queue TEXT COLLATE "C" NOT NULL REFERENCES queues (name) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    trajectory_id TEXT COLLATE "C" NOT NULL,
    key TEXT,
    annotator TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (queue, trajectory_id, annotator)
);
CREATE INDEX queue_assignments_by_annotator ON queue_assignments (queue, annotator, position);
