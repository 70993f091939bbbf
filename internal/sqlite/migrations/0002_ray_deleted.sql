-- Finished jobs that mvp has removed from Ray's job server (after keeping their status and log in the task folder).
ALTER TABLE attempts ADD COLUMN ray_deleted INTEGER NOT NULL DEFAULT 0;
CREATE INDEX attempts_in_ray ON attempts (end_time) WHERE ray_deleted = 0 AND ray_status IN ('SUCCEEDED', 'FAILED', 'STOPPED');
