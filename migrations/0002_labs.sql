-- Labs of a shared server (besides `default`, which always exists) and the tokens that open them.

CREATE TABLE labs (
    name        TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL,
    -- 1: anyone may read the lab's freshness and reconciliation pages without a token.
    public      INTEGER NOT NULL DEFAULT 0
);

-- A token is `<id>.<secret>`: the id finds the row, the secret is kept only as an argon2 hash.
CREATE TABLE tokens (
    id          TEXT PRIMARY KEY,
    lab         TEXT NOT NULL,
    -- learner (produce, run, reset the lab) or viewer (read its pages).
    role        TEXT NOT NULL,
    hash        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX tokens_by_lab ON tokens (lab);
