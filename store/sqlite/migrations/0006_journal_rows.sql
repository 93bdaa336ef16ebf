-- rein store schema 6: a journal SQL can read. The journal becomes one row
-- per record — each event, and each step record a transition writes —
-- with typed columns, instead of one row of frames (some S2-packed) per
-- transition. The rows written before are converted in Go
-- (migrate_events.go) after this script, which drops journal_frames and
-- journal_frames_index once their records are in the new journal.
ALTER TABLE journal RENAME TO journal_frames;
ALTER TABLE journal_index RENAME TO journal_frames_index;

-- One row per record, in commit order (id), so concurrent runs' records
-- share pages and a commit writes at the table's end: events and step
-- records in one table, because every table a commit writes costs it a
-- page more (docs/performance.md). A transition's rows are consecutive.
--
-- Every row has typed columns and JSON. step_id, status and attempt are
-- the record's own; seq, the event's (an event row), or the run's last
-- event seq after the transition (a step record alone).
--
-- An event row (kind set): kind, at (the event's time, Unix ns; NULL for
-- none) and call_key (a call event's key) are the event's fields; payload
-- is the event's JSON as journal.AppendEvent writes it, less the fields
-- that have a column (seq, time, kind, step_id, status, attempt) and its
-- run (rk names it). Any other field of the event, of this rein or a
-- newer one, is in payload.
--
-- A step record: record is its journal.StepRecord JSON; output, input and
-- error are its payloads, JSON text (one above the blob threshold is in
-- blobs, as the record says, and its column NULL). It shares the row of
-- its transition's last event of the same step, status and attempt when
-- there is one (a settled step's record rides on its step_settled event),
-- and else has a row of its own (kind NULL, payload NULL).
--
-- version is the record version (journal.Version); run_version the run's
-- version after the transition that appended the row, and committed_at
-- that transition's time (Unix ns): the run's newest row gives its version
-- and last seq. rows, on the first row of a transition not indexed yet, is
-- how many rows the transition has (what journal_index needs).
CREATE TABLE journal (
    id           INTEGER PRIMARY KEY,
    rk           INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    version      INTEGER NOT NULL,
    kind         TEXT,
    step_id      TEXT,
    status       TEXT,
    attempt      INTEGER,
    at           INTEGER,
    call_key     TEXT,
    payload      TEXT,
    record       TEXT,
    output       TEXT,
    input        TEXT,
    error        TEXT,
    run_version  INTEGER NOT NULL,
    committed_at INTEGER NOT NULL,
    rows         INTEGER
);
-- journal_index finds a run's transitions: the rows id to last. It is
-- written in bulk, not per commit: rows with id > journal_mark.indexed are
-- not in it yet, and readers scan that short tail (a few hundred rows at
-- most). The view run_journal does both.
CREATE TABLE journal_index (
    rk   INTEGER NOT NULL,
    id   INTEGER NOT NULL,
    last INTEGER NOT NULL,
    PRIMARY KEY (rk, id)
) WITHOUT ROWID;

-- Views for readers with SQL (docs/durability.md "Reading the store with
-- SQL"), by run ID, through the index and its tail.
CREATE VIEW run_journal AS
    SELECT r.id AS run_id, j.*
    FROM runs r JOIN journal_index x ON x.rk = r.rk JOIN journal j ON j.id BETWEEN x.id AND x.last
    UNION ALL
    SELECT r.id, j.*
    FROM journal j JOIN runs r ON r.rk = j.rk
    WHERE j.id > (SELECT indexed FROM journal_mark WHERE one = 1);

-- A run's events.
CREATE VIEW run_events AS
    SELECT run_id, seq, kind, step_id, status, attempt, at, call_key, payload, version, id
    FROM run_journal WHERE kind IS NOT NULL;

-- A run's steps: the last record of each, its record's fields as columns.
CREATE VIEW run_steps AS
    SELECT run_id, step_id, status, attempt, record ->> '$.type' AS type, output, input, error,
        record ->> '$.output_sha256' AS output_sha256, record ->> '$.started_at' AS started_at,
        record ->> '$.settled_at' AS settled_at, record, version, id
    FROM (SELECT *, row_number() OVER (PARTITION BY run_id, step_id ORDER BY id DESC) AS newest
        FROM run_journal WHERE record IS NOT NULL)
    WHERE newest = 1;

-- A run's call records: its call events (the last one of each key is the
-- call's record), with the record's fields as columns.
CREATE VIEW run_calls AS
    SELECT run_id, seq, call_key AS key, step_id,
        payload ->> '$.call.kind' AS kind, payload ->> '$.call.name' AS name,
        payload ->> '$.call.status' AS status, payload ->> '$.call.attempt' AS attempt,
        payload ->> '$.call.args_sha256' AS args_sha256, payload ->> '$.call.error_class' AS error_class,
        payload -> '$.call' AS record
    FROM run_events WHERE call_key IS NOT NULL;
