-- rein store schema 4: call records (store.Call), one row per call key of
-- a run, written in the transaction of the transition that carries them.
-- seq keeps the order keys were first written: a record committed again
-- under its key (started, then settled) is updated in place. Times are Unix
-- nanoseconds, durations nanoseconds.
CREATE TABLE calls (
    seq         INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    step_id     TEXT NOT NULL,
    item        INTEGER NOT NULL,
    round       INTEGER NOT NULL,
    plan        INTEGER NOT NULL,
    plan_step   TEXT NOT NULL,
    turn        INTEGER NOT NULL,
    idx         INTEGER NOT NULL,
    fallback    INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    args_sha    TEXT NOT NULL,
    status      TEXT NOT NULL,
    output      BLOB,
    error_class TEXT NOT NULL,
    error       TEXT NOT NULL,
    tokens_in   INTEGER NOT NULL,
    tokens_out  INTEGER NOT NULL,
    started_at  INTEGER,
    duration    INTEGER NOT NULL,
    UNIQUE (run_id, key)
);
CREATE INDEX calls_step ON calls (run_id, step_id, seq);
