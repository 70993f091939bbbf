-- A task's dependencies (jobspec after_ok / after_any) as JSON arrays of task ids; '' when none.
ALTER TABLE tasks ADD COLUMN after_ok TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN after_any TEXT NOT NULL DEFAULT '';
