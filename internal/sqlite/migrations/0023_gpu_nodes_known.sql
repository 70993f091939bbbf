-- The GPU nodes mvp saw alive (id, address, totals, labels) and the most it saw alive at once, kept across
-- restarts: Ray lists a dead node with no resources, so a restarted mvp that had not kept them could not tell a
-- gang waiting for a node that is down (nodes_down) from one larger than the cluster (never_fits). A node Ray no
-- longer lists is forgotten.
CREATE TABLE gpu_nodes_known (
    node_id TEXT PRIMARY KEY,
    ip      TEXT NOT NULL,
    total   TEXT NOT NULL, -- JSON object: resource name → total
    labels  TEXT NOT NULL, -- JSON object, or null when the reading could not say
    seen_at INTEGER NOT NULL
) STRICT;

ALTER TABLE gpu_nodes_seen ADD COLUMN most_gpu_nodes INTEGER NOT NULL DEFAULT 0 CHECK (most_gpu_nodes >= 0);
