-- The task a task was resubmitted from ('' for a task submitted afresh); its resubmits are found through the index.
ALTER TABLE tasks ADD COLUMN origin_id TEXT NOT NULL DEFAULT '';
CREATE INDEX tasks_by_origin ON tasks (origin_id, created_at) WHERE origin_id != '';
-- The ended task whose checkpoint folder a task's run continues from (jobspec resume_from; '' for none).
ALTER TABLE tasks ADD COLUMN resume_from TEXT NOT NULL DEFAULT '';
