-- rein store schema 3: call records (store.Call), one row per call key of
-- a run, written in the transaction of the transition that carries them
-- (each insert applies only if the transition's journal row was). ord
-- keeps the order keys were first written: a record committed again under
-- its key (started, then settled) is updated in place.
CREATE TABLE rein_calls (
    run_id      text NOT NULL REFERENCES rein_runs (id) ON DELETE CASCADE,
    key         text NOT NULL,
    ord         bigserial NOT NULL,
    step_id     text NOT NULL,
    item        integer NOT NULL,
    round       integer NOT NULL,
    plan        integer NOT NULL,
    plan_step   text NOT NULL,
    turn        integer NOT NULL,
    idx         integer NOT NULL,
    fallback    boolean NOT NULL,
    attempt     integer NOT NULL,
    kind        text NOT NULL,
    name        text NOT NULL,
    args_sha    text NOT NULL,
    status      text NOT NULL,
    output      bytea,
    error_class text NOT NULL,
    error       text NOT NULL,
    tokens_in   bigint NOT NULL,
    tokens_out  bigint NOT NULL,
    started_at  timestamptz,
    duration_ns bigint NOT NULL,
    PRIMARY KEY (run_id, key)
);

CREATE INDEX rein_calls_order ON rein_calls (run_id, ord);
