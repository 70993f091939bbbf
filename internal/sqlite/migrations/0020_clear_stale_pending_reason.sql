-- A task that no longer waits has no pending reason (78a8313: a change to a state other than QUEUED or
-- PENDING_RESOURCES clears it). Tasks that left those states under an mvp before that change kept theirs, and a
-- task canceled while it waited went on saying why it waited: cleared once here.
UPDATE tasks SET pending_reason = ''
 WHERE pending_reason != '' AND state NOT IN ('QUEUED', 'PENDING_RESOURCES');
