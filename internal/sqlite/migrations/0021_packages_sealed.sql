-- The Ray door keeps each package sealed (an HMAC under the instance key), so that a job, which can write on
-- shared_root, cannot replace a package another task will upload. The packages an earlier mvp kept have no seal.
-- Only door tasks that have not ended may still need one of them (a new submission through Ray's client uploads
-- its package again when the kept one is not sealed): where there are such tasks, the first start seals what is
-- kept then (trusting it once) and sets this; everywhere else (a new database included) nothing is to be trusted,
-- and it is set here. No later start seals anything, or a job could have a file of its own sealed by removing a
-- seal and waiting for a restart.
ALTER TABLE instance ADD COLUMN packages_sealed INTEGER NOT NULL DEFAULT 0;
UPDATE instance SET packages_sealed = 1
 WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE workload = 'ray_job'
                    AND state IN ('QUEUED', 'PENDING_RESOURCES', 'SUBMITTING', 'SUBMITTED', 'RUNNING'));
