-- The database's own id and key, made once. mvp puts the id in the metadata of every Ray job it submits
-- (mvp_instance), so that it can tell its own jobs among the Ray cluster's (another mvp may share the cluster) and
-- notice one of its own that its database does not follow (a database restored from an older copy). With the key
-- it seals what it writes of an attempt's end in the task folder (status.json), which a job, writing in that
-- folder, cannot forge. A copy keeps both.
CREATE TABLE instance (
    id  TEXT NOT NULL,
    key BLOB NOT NULL
) STRICT;
INSERT INTO instance (id, key) VALUES (lower(hex(randomblob(8))), randomblob(32));
