-- rein store schema 8: the registry of invalidated resources
-- (store.Invalidation): each resource a remediation froze, by the tenant
-- of the run that froze it, until a person clears it. A lookup is by
-- (tenant, resource): the primary key's prefix.
CREATE TABLE rein_invalidated (
    tenant   text NOT NULL,
    resource text NOT NULL,
    run_id   text NOT NULL,
    call_key text NOT NULL,
    premise  text NOT NULL,
    reason   text NOT NULL,
    at       timestamptz NOT NULL,
    PRIMARY KEY (tenant, resource, run_id, call_key)
);
