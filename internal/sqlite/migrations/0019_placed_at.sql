-- When Ray placed the last of an attempt's gang of placement groups, as the live probe read it (NULL until mvp
-- saw the whole gang placed, and for workloads without groups). max_runtime_s counts from it when it is later
-- than running_at: a driver that waits for its gang has not begun its run.
ALTER TABLE attempts ADD COLUMN placed_at INTEGER;
