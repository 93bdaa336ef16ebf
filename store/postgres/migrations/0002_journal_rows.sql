-- rein store schema 2: one journal row per transition, as the SQLite store
-- keeps its journal, instead of a row per event and an upserted row per step.
--
-- A row holds its transition's events and step records as frames
-- (store/internal/frames); the step projection is the fold of a run's step
-- records, the last record of a step winning. The run's version is its
-- newest row's: a lease, a claim or a decision appends a row with no
-- frames. The primary key is the version check, so a commit is one
-- insert that cannot lose a race silently. Schema 1's rows are converted
-- here: each run's events and steps become one row at its version.

CREATE TABLE rein_journal (
    run_id  text NOT NULL,
    version bigint NOT NULL,
    -- seq is the run's last event sequence once this row is applied.
    seq     bigint NOT NULL,
    -- token names the Commit call that wrote the row (NULL for a lease,
    -- claim or decision), so a Commit retried after a lost answer can tell
    -- its own transition from someone else's.
    token   uuid,
    events  bytea,
    steps   bytea,
    at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, version)
);

-- rein_blob_refs records which runs refer to a blob, so Prune deletes only
-- the blobs no run refers to (the frames are opaque to SQL).
CREATE TABLE rein_blob_refs (
    sha256 text NOT NULL REFERENCES rein_blobs (sha256),
    run_id text NOT NULL REFERENCES rein_runs (id) ON DELETE CASCADE,
    PRIMARY KEY (sha256, run_id)
);
CREATE INDEX rein_blob_refs_run ON rein_blob_refs (run_id);

-- The conversion's helpers, in this session's temporary schema.
CREATE FUNCTION pg_temp.rein_uvarint(n bigint) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    out bytea := ''::bytea;
BEGIN
    IF n < 0 THEN
        RAISE EXCEPTION 'rein migration 2: negative number % in schema 1 data', n;
    END IF;
    LOOP
        IF n < 128 THEN
            RETURN out || set_byte('\x00'::bytea, 0, n::int);
        END IF;
        out := out || set_byte('\x00'::bytea, 0, (n % 128)::int + 128);
        n := n / 128;
    END LOOP;
END
$$;

CREATE FUNCTION pg_temp.rein_bytes(b bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
    SELECT pg_temp.rein_uvarint(length(coalesce(b, ''::bytea))) || coalesce(b, ''::bytea)
$$;

CREATE FUNCTION pg_temp.rein_nanos(t timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT (extract(epoch FROM t) * 1000000000)::bigint
$$;

INSERT INTO rein_journal (run_id, version, seq, token, events, steps, at)
SELECT r.id, r.version, r.last_seq, r.last_commit,
    (SELECT string_agg(pg_temp.rein_uvarint(e.seq) || pg_temp.rein_uvarint(e.version) || pg_temp.rein_bytes(e.data),
            ''::bytea ORDER BY e.seq)
       FROM rein_events e WHERE e.run_id = r.id),
    (SELECT string_agg(pg_temp.rein_uvarint(1)
            || pg_temp.rein_bytes(convert_to(s.step_id, 'UTF8'))
            || pg_temp.rein_bytes(convert_to(json_strip_nulls(json_build_object(
                   'step_id', s.step_id, 'type', s.type, 'status', s.status, 'attempt', s.attempt,
                   'output_sha256', s.output_sha, 'output_blob', s.output_blob IS NOT NULL,
                   'input_blob', s.input_blob, 'idempotent', s.idempotent,
                   'started_at', pg_temp.rein_nanos(s.started_at),
                   'settled_at', pg_temp.rein_nanos(s.settled_at)))::text, 'UTF8'))
            || pg_temp.rein_bytes(s.output) || pg_temp.rein_bytes(s.input) || pg_temp.rein_bytes(s.error),
            ''::bytea ORDER BY s.ord)
       FROM rein_steps s WHERE s.run_id = r.id),
    r.updated_at
FROM rein_runs r
WHERE r.version > 0;

INSERT INTO rein_blob_refs (sha256, run_id)
SELECT output_blob, run_id FROM rein_steps WHERE output_blob IS NOT NULL
UNION
SELECT input_blob, run_id FROM rein_steps WHERE input_blob IS NOT NULL;

DROP FUNCTION pg_temp.rein_nanos(timestamptz);
DROP FUNCTION pg_temp.rein_bytes(bytea);
DROP FUNCTION pg_temp.rein_uvarint(bigint);

DROP FUNCTION rein_commit(text, bigint, uuid, text, bytea, bytea, timestamptz, bigint[], bytea[], integer);
DROP TABLE rein_steps;
DROP TABLE rein_events;
ALTER TABLE rein_runs
    DROP COLUMN version,
    DROP COLUMN last_seq,
    DROP COLUMN last_commit,
    DROP COLUMN last_commit_seq;
