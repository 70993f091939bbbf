-- The database's own id, made once: mvp puts it in the metadata of every Ray job it submits (mvp_instance), so
-- that it can tell its own jobs among the Ray cluster's (another mvp may share the cluster) and notice one of its
-- own that its database does not follow (a database restored from an older copy). A copy keeps the id.
CREATE TABLE instance (
    id TEXT NOT NULL
) STRICT;
INSERT INTO instance (id) VALUES (lower(hex(randomblob(8))));
