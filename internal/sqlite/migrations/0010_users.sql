-- Users (issue 15): every task records its owner (the v2.auth.users name whose token submitted it; 'operator'
-- for the internal token, and for rows from before this migration) and its priority 0..100 (jobspec priority,
-- default 50), which orders the queue within the scheduling policy.
ALTER TABLE tasks ADD COLUMN owner TEXT NOT NULL DEFAULT 'operator';
ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100);
-- A user's listing and a user's count of waiting tasks (max_queued).
CREATE INDEX tasks_by_owner ON tasks (owner, state, created_at, task_id);
-- Fair share reads the attempts that ran lately (decayed usage).
CREATE INDEX attempts_by_end ON attempts (end_time);
-- A secret and a schedule belong to the user who made them (the operator for rows from before): only they and the
-- operator see or change them, and a schedule's tasks are its owner's.
ALTER TABLE secrets ADD COLUMN owner TEXT NOT NULL DEFAULT 'operator';
ALTER TABLE schedules ADD COLUMN owner TEXT NOT NULL DEFAULT 'operator';
