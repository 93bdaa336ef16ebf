-- rein store schema 9: the registry of invalidated resources
-- (store.Invalidation): each resource a remediation froze, by the tenant
-- of the run that froze it, until a person clears it. A lookup is by
-- (tenant, resource): the primary key's prefix. Times are Unix
-- nanoseconds.
CREATE TABLE invalidated (
    tenant   TEXT NOT NULL,
    resource TEXT NOT NULL,
    run_id   TEXT NOT NULL,
    call_key TEXT NOT NULL,
    premise  TEXT NOT NULL,
    reason   TEXT NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (tenant, resource, run_id, call_key)
) WITHOUT ROWID;
