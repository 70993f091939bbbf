-- Tasks, their attempts (one Ray job each) and their history. Times are unix nanoseconds, UTC.
CREATE TABLE tasks (
    task_id           TEXT PRIMARY KEY,
    workload          TEXT NOT NULL CHECK (workload IN ('ppo', 'grpo', 'sft')),
    name              TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL CHECK (state IN ('QUEUED', 'PENDING_RESOURCES', 'SUBMITTING', 'SUBMITTED',
                                                     'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED')),
    nnodes            INTEGER NOT NULL CHECK (nnodes >= 1),
    n_gpus_per_node   INTEGER NOT NULL CHECK (n_gpus_per_node >= 1),
    jobspec_yaml      TEXT NOT NULL,
    spec_json         TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    next_run_at       INTEGER,
    pending_reason    TEXT NOT NULL DEFAULT '',
    error_summary     TEXT NOT NULL DEFAULT '',
    latest_attempt_no INTEGER NOT NULL DEFAULT 0
) STRICT;

-- The scheduler's queue (FIFO within the waiting states) and the API's listings (newest first).
CREATE INDEX tasks_by_state ON tasks (state, created_at, task_id);
CREATE INDEX tasks_by_created ON tasks (created_at, task_id);
CREATE INDEX tasks_by_workload ON tasks (workload, created_at, task_id);

CREATE TABLE attempts (
    task_id           TEXT NOT NULL REFERENCES tasks (task_id),
    attempt_no        INTEGER NOT NULL CHECK (attempt_no >= 1),
    ray_submission_id TEXT NOT NULL UNIQUE,
    ray_job_id        TEXT NOT NULL DEFAULT '',
    ray_status        TEXT NOT NULL DEFAULT '',
    failure_kind      TEXT NOT NULL DEFAULT '',
    message           TEXT NOT NULL DEFAULT '',
    driver_node_id    TEXT NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL,
    start_time        INTEGER,
    end_time          INTEGER,
    exit_code         INTEGER,
    PRIMARY KEY (task_id, attempt_no)
) STRICT;

-- Attempts whose Ray job may still be alive: the scheduler follows these.
CREATE INDEX attempts_live ON attempts (task_id) WHERE ray_status IN ('', 'PENDING', 'RUNNING');

CREATE TABLE events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id      TEXT NOT NULL REFERENCES tasks (task_id),
    ts           INTEGER NOT NULL,
    event_type   TEXT NOT NULL,
    payload_json TEXT NOT NULL
) STRICT;

CREATE INDEX events_by_task ON events (task_id, id);
