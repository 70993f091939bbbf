-- What the latest attempt last wrote in its progress file (JSON of mvp.Progress, '' until it wrote one), and the
-- task's heartbeat bound in seconds (0: none).
ALTER TABLE tasks ADD COLUMN progress_json TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN heartbeat_timeout_s INTEGER NOT NULL DEFAULT 0 CHECK (heartbeat_timeout_s >= 0);
