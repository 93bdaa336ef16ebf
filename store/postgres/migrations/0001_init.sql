-- rein store schema 1: runs, the event journal, step projections, approvals
-- and content-addressed blobs. Times are the database clock (now()).

CREATE TABLE rein_runs (
    id              text PRIMARY KEY,
    -- ord is the creation order: ListRuns newest first, ClaimRuns oldest first.
    ord             bigserial NOT NULL UNIQUE,
    flow            text NOT NULL,
    flow_path       text NOT NULL DEFAULT '',
    flow_hash       text NOT NULL DEFAULT '',
    flow_text       bytea,
    input           bytea,
    meta            bytea,
    status          text NOT NULL,
    idempotency_key text UNIQUE,
    session         text NOT NULL DEFAULT '',
    error           bytea,
    usage           bytea,
    version         bigint NOT NULL DEFAULT 0,
    last_seq        bigint NOT NULL DEFAULT 0,
    -- last_commit identifies the Commit call that produced version, and
    -- last_commit_seq the last_seq before it, so a Commit retried after a
    -- lost connection can tell its own transition from someone else's.
    last_commit     uuid,
    last_commit_seq bigint NOT NULL DEFAULT 0,
    lease_owner     text,
    lease_expires   timestamptz,
    retention_ns    bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    settled_at      timestamptz
);

CREATE INDEX rein_runs_ready ON rein_runs (ord) WHERE status IN ('pending', 'running');
CREATE INDEX rein_runs_settled ON rein_runs (settled_at) WHERE settled_at IS NOT NULL;
CREATE INDEX rein_runs_status ON rein_runs (status, ord);
CREATE INDEX rein_runs_flow ON rein_runs (flow, ord);

CREATE TABLE rein_events (
    run_id  text NOT NULL REFERENCES rein_runs (id) ON DELETE CASCADE,
    seq     bigint NOT NULL,
    -- version is the journal record version (store.JournalVersion); data
    -- is the trace.Event as JSON.
    version integer NOT NULL,
    data    bytea NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE rein_blobs (
    sha256     text PRIMARY KEY,
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE rein_steps (
    run_id      text NOT NULL REFERENCES rein_runs (id) ON DELETE CASCADE,
    step_id     text NOT NULL,
    -- ord is the first-started order.
    ord         bigserial NOT NULL,
    type        text NOT NULL DEFAULT '',
    status      text NOT NULL,
    attempt     integer NOT NULL DEFAULT 0,
    -- An output or input above the blob threshold lives in rein_blobs:
    -- output (input) is then NULL and output_blob (input_blob) names it.
    output      bytea,
    output_sha  text NOT NULL DEFAULT '',
    output_blob text REFERENCES rein_blobs (sha256),
    input       bytea,
    input_blob  text REFERENCES rein_blobs (sha256),
    idempotent  boolean NOT NULL DEFAULT false,
    error       bytea,
    started_at  timestamptz,
    settled_at  timestamptz,
    PRIMARY KEY (run_id, step_id)
);

CREATE INDEX rein_steps_order ON rein_steps (run_id, ord);
CREATE INDEX rein_steps_output_blob ON rein_steps (output_blob) WHERE output_blob IS NOT NULL;
CREATE INDEX rein_steps_input_blob ON rein_steps (input_blob) WHERE input_blob IS NOT NULL;

CREATE TABLE rein_approvals (
    run_id     text NOT NULL REFERENCES rein_runs (id) ON DELETE CASCADE,
    id         text NOT NULL,
    ord        bigserial NOT NULL,
    step_id    text NOT NULL,
    kind       text NOT NULL,
    status     text NOT NULL,
    tool       text NOT NULL DEFAULT '',
    args       bytea,
    message    text NOT NULL DEFAULT '',
    output     bytea,
    comment    text NOT NULL DEFAULT '',
    decided_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    decided_at timestamptz,
    PRIMARY KEY (run_id, id)
);

CREATE INDEX rein_approvals_step ON rein_approvals (run_id, step_id, ord);
CREATE INDEX rein_approvals_pending ON rein_approvals (ord) WHERE status = 'pending';

-- rein_commit is the head of every Commit: it checks the run's version
-- (SQLSTATE RE409 when it moved on, RE404 when the run does not exist),
-- appends the events (a seq ≤ 0 is numbered after the run's last event)
-- and applies the run update. The rest of the transition (steps, blobs,
-- approvals) follows in the same implicit transaction, so an error here
-- applies nothing. It returns the new version and the last_seq before it.
CREATE FUNCTION rein_commit(
    p_run text, p_version bigint, p_token uuid,
    p_status text, p_error bytea, p_usage bytea, p_settled timestamptz,
    p_seqs bigint[], p_data bytea[], p_record_version integer,
    OUT new_version bigint, OUT prev_seq bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_max bigint;
BEGIN
    SELECT r.last_seq INTO prev_seq FROM rein_runs r
     WHERE r.id = p_run AND r.version = p_version FOR UPDATE;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM rein_runs r WHERE r.id = p_run) THEN
            RAISE EXCEPTION 'run % is no longer at version %', p_run, p_version
                USING ERRCODE = 'RE409';
        END IF;
        RAISE EXCEPTION 'run % does not exist', p_run USING ERRCODE = 'RE404';
    END IF;

    v_max := prev_seq;
    IF coalesce(array_length(p_data, 1), 0) > 0 THEN
        INSERT INTO rein_events (run_id, seq, version, data)
        SELECT p_run, CASE WHEN e.s > 0 THEN e.s ELSE prev_seq + e.o END, p_record_version, e.d
          FROM unnest(p_seqs, p_data) WITH ORDINALITY AS e (s, d, o);
        SELECT greatest(prev_seq, max(CASE WHEN e.s > 0 THEN e.s ELSE prev_seq + e.o END)) INTO v_max
          FROM unnest(p_seqs) WITH ORDINALITY AS e (s, o);
    END IF;

    new_version := p_version + 1;
    UPDATE rein_runs r SET
        version = new_version,
        last_seq = v_max,
        last_commit = p_token,
        last_commit_seq = prev_seq,
        status = coalesce(nullif(p_status, ''), r.status),
        error = coalesce(p_error, r.error),
        usage = coalesce(p_usage, r.usage),
        settled_at = CASE
            WHEN p_settled IS NOT NULL THEN p_settled
            WHEN r.settled_at IS NULL AND coalesce(nullif(p_status, ''), r.status)
                 IN ('succeeded', 'failed', 'cancelled') THEN now()
            ELSE r.settled_at END,
        updated_at = now(),
        -- a finished run holds no lease
        lease_owner = CASE WHEN coalesce(nullif(p_status, ''), r.status) IN ('succeeded', 'failed', 'cancelled')
            THEN NULL ELSE r.lease_owner END,
        lease_expires = CASE WHEN coalesce(nullif(p_status, ''), r.status) IN ('succeeded', 'failed', 'cancelled')
            THEN NULL ELSE r.lease_expires END
     WHERE r.id = p_run;
END
$$;
