-- rein store schema 9: the registry of invalidated resources
-- (store.Invalidation): each resource a remediation froze, by the tenant
-- of the run that froze it. A person's clear keeps the row, cleared
-- (cleared_at), so that recording the same freeze again (a remediation
-- carried on, idempotently) does not make it invalid again. A lookup is by
-- (tenant, resource): the primary key's prefix; "has the tenant any?" by
-- the partial index of the rows not cleared. Times are Unix nanoseconds.
CREATE TABLE invalidated (
    tenant     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    call_key   TEXT NOT NULL,
    premise    TEXT NOT NULL,
    reason     TEXT NOT NULL,
    at         INTEGER NOT NULL,
    cleared_at INTEGER,
    PRIMARY KEY (tenant, resource, run_id, call_key)
) WITHOUT ROWID;
CREATE INDEX invalidated_open ON invalidated (tenant, at) WHERE cleared_at IS NULL;
