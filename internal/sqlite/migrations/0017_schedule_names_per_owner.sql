-- A schedule's name is its owner's (issue 15), as a secret's is since 0016: two users may each have a nightly, and
-- a user no longer learns that a name is taken by someone else. Both tables are made again (SQLite cannot change
-- a primary key in place), the links keyed by the schedule's owner and name; every row is kept.
CREATE TABLE schedules_per_owner (
    owner        TEXT NOT NULL,
    name         TEXT NOT NULL,
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
    missed       INTEGER NOT NULL DEFAULT 0 CHECK (missed >= 0),
    PRIMARY KEY (owner, name)
) STRICT;
INSERT INTO schedules_per_owner (owner, name, cron, timezone, overlap, jobspec_json, paused, created_at, updated_at,
    last_fire_at, last_task_id, last_outcome, missed)
    SELECT owner, name, cron, timezone, overlap, jobspec_json, paused, created_at, updated_at, last_fire_at,
        last_task_id, last_outcome, missed FROM schedules;

-- A task made by a schedule; the link goes when the schedule is deleted, the task stays.
CREATE TABLE schedule_tasks_per_owner (
    task_id        TEXT PRIMARY KEY REFERENCES tasks (task_id),
    schedule_owner TEXT NOT NULL,
    schedule_name  TEXT NOT NULL,
    fire_at        INTEGER NOT NULL,
    FOREIGN KEY (schedule_owner, schedule_name) REFERENCES schedules_per_owner (owner, name) ON DELETE CASCADE
) STRICT;
INSERT INTO schedule_tasks_per_owner (task_id, schedule_owner, schedule_name, fire_at)
    SELECT l.task_id, s.owner, l.schedule_name, l.fire_at FROM schedule_tasks l JOIN schedules s ON s.name = l.schedule_name;

DROP TABLE schedule_tasks;
DROP TABLE schedules;
ALTER TABLE schedules_per_owner RENAME TO schedules;
ALTER TABLE schedule_tasks_per_owner RENAME TO schedule_tasks;
CREATE INDEX schedule_tasks_by_schedule ON schedule_tasks (schedule_owner, schedule_name, fire_at);
