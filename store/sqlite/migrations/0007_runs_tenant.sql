-- rein store schema 7: the tenant a run belongs to (rein serve shows a
-- token only its tenant's runs), and its runs newest first. Partial: runs
-- started outside a server have no tenant and write no index entry.
ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_tenant ON runs (tenant) WHERE tenant <> '';
