-- rein store schema 8: the registry of invalidated resources
-- (store.Invalidation): each resource a remediation froze, by the tenant
-- of the run that froze it. A person's clear keeps the row, cleared
-- (cleared_at), so that recording the same freeze again (a remediation
-- carried on, idempotently) does not make it invalid again. A lookup is by
-- (tenant, resource): the primary key's prefix; "has the tenant any?" by
-- the partial index of the rows not cleared.
CREATE TABLE rein_invalidated (
    tenant     text NOT NULL,
    resource   text NOT NULL,
    run_id     text NOT NULL,
    call_key   text NOT NULL,
    premise    text NOT NULL,
    reason     text NOT NULL,
    at         timestamptz NOT NULL,
    cleared_at timestamptz,
    PRIMARY KEY (tenant, resource, run_id, call_key)
);
CREATE INDEX rein_invalidated_open ON rein_invalidated (tenant, at) WHERE cleared_at IS NULL;
