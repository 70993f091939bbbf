-- An ended job's driver log is kept in the task folder before its Ray job may be deleted: log_kept says it is
-- (rows from before this migration were fetched when they ended), log_tries counts failed fetches.
ALTER TABLE attempts ADD COLUMN log_kept INTEGER NOT NULL DEFAULT 1;
ALTER TABLE attempts ADD COLUMN log_tries INTEGER NOT NULL DEFAULT 0;
CREATE INDEX attempts_log_unkept ON attempts (end_time) WHERE log_kept = 0 AND ray_deleted = 0;
-- Time limits of a task, in seconds (0: none): max_runtime_s bounds one attempt's run, max_queued_s the wait.
ALTER TABLE tasks ADD COLUMN max_runtime_s INTEGER NOT NULL DEFAULT 0 CHECK (max_runtime_s >= 0);
ALTER TABLE tasks ADD COLUMN max_queued_s INTEGER NOT NULL DEFAULT 0 CHECK (max_queued_s >= 0);
