-- Queues claimed across machines: the items of a queue in their own table (a queue may have items nobody has taken
-- yet), and each assignment fills one of the item's k slots. The unique (queue, trajectory_id, slot) index is what
-- makes two annotators on two machines unable to take the same slot, whatever their clients do.
CREATE TABLE queue_items (
    queue TEXT NOT NULL REFERENCES queues (name) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    trajectory_id TEXT NOT NULL,
    key TEXT,
    PRIMARY KEY (queue, trajectory_id)
);
CREATE INDEX queue_items_by_position ON queue_items (queue, position);
INSERT INTO queue_items (queue, position, trajectory_id, key)
    SELECT queue, MIN(position), trajectory_id, MIN(key) FROM queue_assignments GROUP BY queue, trajectory_id;
ALTER TABLE queue_assignments ADD COLUMN slot INTEGER;
UPDATE queue_assignments SET slot = (
    SELECT COUNT(*) FROM queue_assignments b
    WHERE b.queue = queue_assignments.queue AND b.trajectory_id = queue_assignments.trajectory_id
      AND b.annotator < queue_assignments.annotator);
CREATE UNIQUE INDEX queue_assignments_slot ON queue_assignments (queue, trajectory_id, slot);
