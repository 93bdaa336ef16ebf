-- rein store schema 6: a journal SQL can read. The journal's events are
-- rows of events, with typed columns and the event's JSON, and the step
-- projection is the table steps, one row per step with its columns,
-- instead of frames of records in one journal row per transition.
-- Conversion of the rows written before (frames, some packed) is in Go
-- (migrate_events.go), after this script; it drops journal and
-- journal_index once their records are in the new tables.

-- One row per event, in commit order (id), so concurrent runs' events share
-- pages and a commit writes at the table's end. kind, step_id, at (the
-- event's time, Unix ns) and call_key (a call event's key) are the event's
-- own fields; payload is the event's JSON as journal.AppendEvent writes it
-- (its run_id empty: rk names the run), version its record version
-- (journal.Version). run_version is the run's version after the
-- transition that appended the event and committed_at that transition's
-- time (Unix ns): the run's newest event gives its version and last seq.
CREATE TABLE events (
    id           INTEGER PRIMARY KEY,
    rk           INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    version      INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    step_id      TEXT,
    at           INTEGER NOT NULL,
    call_key     TEXT,
    payload      TEXT NOT NULL,
    run_version  INTEGER NOT NULL,
    committed_at INTEGER NOT NULL
);
-- events_index finds a run's events. It is written in bulk, not per
-- commit: events with id > journal_mark.indexed are not in it yet, and
-- readers scan that short tail (a few hundred rows at most). The view
-- run_events does both.
CREATE TABLE events_index (
    rk  INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    id  INTEGER NOT NULL,
    PRIMARY KEY (rk, seq)
) WITHOUT ROWID;

-- The step projection: a step's last record, replaced in place by each
-- transition that writes it. ord orders a run's steps as they were first
-- written; version is the record version (journal.Version). output, input
-- and error are JSON text; an output or input above the blob threshold is
-- in blobs (output_blob = 1: the blob output_sha; input_blob: its sha256)
-- and its column is NULL. Times are Unix ns.
CREATE TABLE steps (
    rk          INTEGER NOT NULL,
    step_id     TEXT NOT NULL,
    ord         INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    type        TEXT NOT NULL,
    status      TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    output      TEXT,
    output_sha  TEXT NOT NULL,
    output_blob INTEGER NOT NULL,
    input       TEXT,
    input_blob  TEXT NOT NULL,
    idempotent  INTEGER NOT NULL,
    error       TEXT,
    started_at  INTEGER,
    settled_at  INTEGER,
    PRIMARY KEY (rk, step_id)
) WITHOUT ROWID;

-- Views for readers with SQL (docs/durability.md "Reading the store with
-- SQL"): by run ID, through the index and its tail.
CREATE VIEW run_events AS
    SELECT r.id AS run_id, e.seq, e.kind, e.step_id, e.at, e.call_key, e.payload, e.version, e.id
    FROM runs r JOIN events_index x ON x.rk = r.rk JOIN events e ON e.id = x.id
    UNION ALL
    SELECT r.id, e.seq, e.kind, e.step_id, e.at, e.call_key, e.payload, e.version, e.id
    FROM events e JOIN runs r ON r.rk = e.rk
    WHERE e.id > (SELECT indexed FROM journal_mark WHERE one = 1);

CREATE VIEW run_steps AS
    SELECT r.id AS run_id, s.step_id, s.ord, s.type, s.status, s.attempt, s.output, s.output_sha, s.output_blob,
        s.input, s.input_blob, s.idempotent, s.error, s.started_at, s.settled_at, s.version
    FROM runs r JOIN steps s ON s.rk = r.rk;

-- A run's call records: the payloads of its call events (the last one of
-- each key is the call's record), with the record's fields as columns.
CREATE VIEW run_calls AS
    SELECT run_id, seq, call_key AS key, step_id,
        payload ->> '$.call.kind' AS kind, payload ->> '$.call.name' AS name,
        payload ->> '$.call.status' AS status, payload ->> '$.call.attempt' AS attempt,
        payload ->> '$.call.args_sha256' AS args_sha256, payload ->> '$.call.error_class' AS error_class,
        payload -> '$.call' AS record
    FROM run_events WHERE call_key IS NOT NULL;
