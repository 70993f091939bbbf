-- The web page's logged-out sessions. A session cookie is signed, not stored, so a logout is a note that the
-- session with this key (the SHA-256 of its nonce, never the cookie) no longer opens the page. It is kept until
-- the session would have expired anyway; kept in memory only, a restart of mvp forgot it and the cookie worked
-- again.
CREATE TABLE web_logouts (
    session_key TEXT PRIMARY KEY,
    until       INTEGER NOT NULL
) STRICT;
