-- running_at alone now says whether an attempt ran (mvp.Task.Ran). Attempts recorded before migration 0014 have
-- none: those that ran (Ray reported them RUNNING or ended) get Ray's start_time, as mvp.Attempt.RunningSince
-- took it for them. Attempts recorded since then keep NULL when mvp never saw them RUNNING, even with a start_time
-- (Ray stamps it when it takes the submission).
UPDATE attempts SET running_at = start_time
 WHERE running_at IS NULL AND start_time IS NOT NULL
   AND ray_status IN ('RUNNING', 'STOPPED', 'SUCCEEDED', 'FAILED')
   AND created_at < (SELECT applied_at FROM schema_migrations WHERE version = 14);
