-- How many GPU nodes were alive at mvp's last healthy look at Ray, kept across restarts (one row). A restarted mvp,
-- or one started while Ray is down, holds admissions until as many have joined (at most the loop's rejoin wait),
-- as after an outage it lived through, so that a gang is not overtaken on a cluster still coming back.
CREATE TABLE gpu_nodes_seen (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    gpu_nodes INTEGER NOT NULL CHECK (gpu_nodes >= 0),
    seen_at   INTEGER NOT NULL
) STRICT;
