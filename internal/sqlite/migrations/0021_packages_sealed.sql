-- The Ray door keeps each package with a seal beside it (an HMAC under the instance key), so that a job, which
-- can write on shared_root, cannot replace a package another task will upload. The packages an earlier mvp kept
-- have no seal: the first start with sealing seals them once (trusting them as they are then) and sets this; no
-- later start seals anything, or a job could have its own package sealed by removing a seal and waiting.
ALTER TABLE instance ADD COLUMN packages_sealed INTEGER NOT NULL DEFAULT 0;
