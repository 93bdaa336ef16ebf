-- rein store schema 1: runs, the journal of transitions (events and step
-- projections), approvals, content-addressed blobs. Times are Unix nanoseconds (UTC).

-- rk is the run's integer key, in creation order: the journal refers to it,
-- and "newest first" is rk order. version is the run's version as of the
-- last change of this row (creation, status, lease, decision); journal rows
-- carry the versions of the transitions after it, so a run's version is the
-- larger of the two.
CREATE TABLE runs (
    rk              INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    flow            TEXT NOT NULL,
    flow_path       TEXT NOT NULL DEFAULT '',
    flow_hash       TEXT NOT NULL DEFAULT '',
    flow_sha        TEXT,          -- the pinned flow text, in flows
    input           BLOB,
    meta            BLOB,
    status          TEXT NOT NULL,
    idempotency_key TEXT,
    session         TEXT NOT NULL DEFAULT '',
    error           BLOB,
    usage           BLOB,
    version         INTEGER NOT NULL DEFAULT 0,
    lease_owner     TEXT,
    lease_expires   INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    settled_at      INTEGER,
    retention       INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX runs_idempotency_key ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;
-- Runs not finished, for claims and for listing what is in flight; finished
-- runs leave it, so it stays as small as the work in progress.
CREATE INDEX runs_active ON runs (status, rk) WHERE status IN ('pending', 'running', 'waiting');
-- run_flows indexes runs by flow name. It is written in bulk with
-- journal_index, not per run: runs with rk > journal_mark.runs are not in
-- it yet, and readers look at that short tail of runs as well.
CREATE TABLE run_flows (
    flow TEXT NOT NULL,
    rk   INTEGER NOT NULL,
    PRIMARY KEY (flow, rk)
) WITHOUT ROWID;

-- The flow texts runs pin, by hex sha256 of the text: written once per
-- version of a flow, not once per run.
CREATE TABLE flows (
    sha256 TEXT PRIMARY KEY,
    text   BLOB NOT NULL
);

-- The journal: one row per committed transition, in commit order (id), so
-- concurrent runs' transitions share pages and a run's commit writes about
-- one page. version is the run version the transition made, seq the run's
-- last event sequence after it, at its commit time (Unix ns). events and
-- steps are frames of versioned JSON records (see journal.go): the
-- transition's events, and the step projections it wrote.
CREATE TABLE journal (
    id      INTEGER PRIMARY KEY,
    rk      INTEGER NOT NULL,
    version INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    events  BLOB,
    steps   BLOB
);
-- journal_index finds a run's journal rows. It is written in bulk, not per
-- commit: rows with id > journal_mark.indexed are not in it yet, and
-- readers scan that short tail (a few hundred rows at most).
CREATE TABLE journal_index (
    rk      INTEGER NOT NULL,
    version INTEGER NOT NULL,
    id      INTEGER NOT NULL,
    PRIMARY KEY (rk, version)
) WITHOUT ROWID;
-- indexed: the journal rows up to it are in journal_index; runs: the runs
-- up to that rk are in run_flows.
CREATE TABLE journal_mark (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    indexed INTEGER NOT NULL,
    runs    INTEGER NOT NULL
);
INSERT INTO journal_mark (one, indexed, runs) VALUES (1, 0, 0);

-- Which runs refer to a blob (written only when a payload goes to blobs),
-- so pruning a run can drop the blobs nobody else needs.
CREATE TABLE blob_refs (
    sha256 TEXT NOT NULL,
    rk     INTEGER NOT NULL,
    PRIMARY KEY (sha256, rk)
) WITHOUT ROWID;
CREATE INDEX blob_refs_rk ON blob_refs (rk);

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
