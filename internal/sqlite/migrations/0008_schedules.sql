-- Recurring schedules (a jobspec submitted on a cron schedule) and the tasks each one made. Times are unix
-- nanoseconds, UTC. last_fire_at is the scheduled time of the last run considered; runs are compare-and-set on it.
CREATE TABLE schedules (
    name         TEXT PRIMARY KEY,
    cron         TEXT NOT NULL,
    timezone     TEXT NOT NULL,
    overlap      TEXT NOT NULL CHECK (overlap IN ('skip', 'queue', 'replace')),
    jobspec_json TEXT NOT NULL,
    paused       INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    last_fire_at INTEGER NOT NULL,
    last_task_id TEXT NOT NULL DEFAULT '',
    last_outcome TEXT NOT NULL DEFAULT '',
    missed       INTEGER NOT NULL DEFAULT 0 CHECK (missed >= 0)
) STRICT;

-- A task made by a schedule; the link goes when the schedule is deleted, the task stays.
CREATE TABLE schedule_tasks (
    task_id       TEXT PRIMARY KEY REFERENCES tasks (task_id),
    schedule_name TEXT NOT NULL REFERENCES schedules (name) ON DELETE CASCADE,
    fire_at       INTEGER NOT NULL
) STRICT;

CREATE INDEX schedule_tasks_by_schedule ON schedule_tasks (schedule_name, fire_at);
