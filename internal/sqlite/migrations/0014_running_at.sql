-- When mvp first saw Ray report an attempt's job RUNNING. Ray's start_time (start_time) is when Ray took the
-- submission: a job PENDING for minutes (its runtime env being set up) was judged by max_runtime_s and its
-- heartbeat from then. NULL for attempts recorded before this column, and for those mvp never saw running.
ALTER TABLE attempts ADD COLUMN running_at INTEGER;
