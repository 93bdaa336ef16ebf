-- rein store schema 6: the tenant a run belongs to (rein serve shows a
-- token only its tenant's runs), and its runs newest first. Partial: runs
-- started outside a server have no tenant and write no index entry.
ALTER TABLE rein_runs ADD COLUMN tenant text NOT NULL DEFAULT '';
CREATE INDEX rein_runs_tenant ON rein_runs (tenant, ord) WHERE tenant <> '';
