-- rein store schema 1: runs, the event journal, step and approval
-- projections, content-addressed blobs. Times are Unix nanoseconds (UTC).

-- rk is the run's integer key: events and steps refer to it, so their
-- indexes and foreign-key checks compare small integers, not run IDs.
CREATE TABLE runs (
    rk              INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    flow            TEXT NOT NULL,
    flow_path       TEXT NOT NULL DEFAULT '',
    flow_hash       TEXT NOT NULL DEFAULT '',
    flow_text       BLOB,
    input           BLOB,
    meta            BLOB,
    status          TEXT NOT NULL,
    idempotency_key TEXT,
    session         TEXT NOT NULL DEFAULT '',
    error           BLOB,
    usage           BLOB,
    version         INTEGER NOT NULL DEFAULT 0,
    last_seq        INTEGER NOT NULL DEFAULT 0,
    lease_owner     TEXT,
    lease_expires   INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    settled_at      INTEGER,
    retention       INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX runs_idempotency_key ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_status_created ON runs (status, created_at, id);
CREATE INDEX runs_flow_created ON runs (flow, created_at, id);
CREATE INDEX runs_settled ON runs (settled_at) WHERE settled_at IS NOT NULL;

-- The journal: one row per event, data the JSON encoding of trace.Event
-- and version its journal version. A rowid table, so concurrent runs'
-- events fill pages in commit order; (rk, seq) is the primary key.
CREATE TABLE events (
    id      INTEGER PRIMARY KEY,
    rk      INTEGER NOT NULL REFERENCES runs (rk) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    version INTEGER NOT NULL,
    data    BLOB NOT NULL,
    UNIQUE (rk, seq)
);

-- The step projection; id keeps first-written order across upserts.
-- output_blob / input_blob name the blob holding a large payload.
CREATE TABLE steps (
    id          INTEGER PRIMARY KEY,
    rk          INTEGER NOT NULL REFERENCES runs (rk) ON DELETE CASCADE,
    step_id     TEXT NOT NULL,
    type        TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 0,
    output      BLOB,
    output_sha  TEXT NOT NULL DEFAULT '',
    output_blob TEXT,
    input       BLOB,
    input_blob  TEXT,
    idempotent  INTEGER NOT NULL DEFAULT 0,
    error       BLOB,
    started_at  INTEGER,
    settled_at  INTEGER,
    UNIQUE (rk, step_id)
);
CREATE INDEX steps_output_blob ON steps (output_blob) WHERE output_blob IS NOT NULL;
CREATE INDEX steps_input_blob ON steps (input_blob) WHERE input_blob IS NOT NULL;

-- Approvals; seq keeps creation order, a step may be asked more than once.
CREATE TABLE approvals (
    seq        INTEGER PRIMARY KEY,
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    id         TEXT NOT NULL,
    step_id    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    status     TEXT NOT NULL,
    tool       TEXT NOT NULL DEFAULT '',
    args       BLOB,
    message    TEXT NOT NULL DEFAULT '',
    output     BLOB,
    comment    TEXT NOT NULL DEFAULT '',
    decided_by TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    decided_at INTEGER,
    UNIQUE (run_id, id)
);
CREATE INDEX approvals_step ON approvals (run_id, step_id, status);
CREATE INDEX approvals_status ON approvals (status, seq);

-- Content-addressed payloads, by hex sha256.
CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY,
    data   BLOB NOT NULL
);
