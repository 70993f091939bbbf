-- The Ray-Jobs-compatible door (/ray): tasks of workload ray_job. SQLite changes a CHECK only by rebuilding the
-- table, so tasks is rebuilt (the migration runs with foreign keys off and checks them before it commits):
--   workload may be 'ray_job', whose gang is optional (nnodes = n_gpus_per_node = 0: no gang, the driver only);
--   submission_id is the Ray submission id the door knows the task by (NULL for jobspec tasks), unique among the
--   tasks not deleted through the door (door_deleted), as Ray refuses a second job with one id;
--   driver_json is the driver's own resources of a ray_job ('' means the configured default).
-- Every column (0001–0006's), index and row of tasks is kept; attempts, events and schedule_tasks keep referring
-- to it by task_id.
CREATE TABLE tasks_new (
    task_id           TEXT PRIMARY KEY,
    workload          TEXT NOT NULL CHECK (workload IN ('ppo', 'grpo', 'sft', 'ray_job')),
    name              TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL CHECK (state IN ('QUEUED', 'PENDING_RESOURCES', 'SUBMITTING', 'SUBMITTED',
                                                     'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED')),
    nnodes            INTEGER NOT NULL,
    n_gpus_per_node   INTEGER NOT NULL,
    jobspec_yaml      TEXT NOT NULL,
    spec_json         TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    next_run_at       INTEGER,
    pending_reason    TEXT NOT NULL DEFAULT '',
    error_summary     TEXT NOT NULL DEFAULT '',
    latest_attempt_no INTEGER NOT NULL DEFAULT 0,
    max_runtime_s     INTEGER NOT NULL DEFAULT 0 CHECK (max_runtime_s >= 0),
    max_queued_s      INTEGER NOT NULL DEFAULT 0 CHECK (max_queued_s >= 0),
    progress_json     TEXT NOT NULL DEFAULT '',
    heartbeat_timeout_s INTEGER NOT NULL DEFAULT 0 CHECK (heartbeat_timeout_s >= 0),
    after_ok          TEXT NOT NULL DEFAULT '',
    after_any         TEXT NOT NULL DEFAULT '',
    origin_id         TEXT NOT NULL DEFAULT '',
    resume_from       TEXT NOT NULL DEFAULT '',
    submission_id     TEXT,
    door_deleted      INTEGER NOT NULL DEFAULT 0,
    driver_json       TEXT NOT NULL DEFAULT '',
    CHECK ((nnodes >= 1 AND n_gpus_per_node >= 1)
           OR (workload = 'ray_job' AND nnodes = 0 AND n_gpus_per_node = 0))
) STRICT;

INSERT INTO tasks_new (task_id, workload, name, state, nnodes, n_gpus_per_node, jobspec_yaml, spec_json, created_at,
                       updated_at, next_run_at, pending_reason, error_summary, latest_attempt_no, max_runtime_s,
                       max_queued_s, progress_json, heartbeat_timeout_s, after_ok, after_any, origin_id, resume_from)
SELECT task_id, workload, name, state, nnodes, n_gpus_per_node, jobspec_yaml, spec_json, created_at, updated_at,
       next_run_at, pending_reason, error_summary, latest_attempt_no, max_runtime_s, max_queued_s, progress_json,
       heartbeat_timeout_s, after_ok, after_any, origin_id, resume_from
FROM tasks;

DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;

CREATE INDEX tasks_by_state ON tasks (state, created_at, task_id);
CREATE INDEX tasks_by_created ON tasks (created_at, task_id);
CREATE INDEX tasks_by_workload ON tasks (workload, created_at, task_id);
CREATE INDEX tasks_by_origin ON tasks (origin_id, created_at) WHERE origin_id != '';
CREATE UNIQUE INDEX tasks_by_submission_id ON tasks (submission_id) WHERE submission_id IS NOT NULL AND door_deleted = 0;
