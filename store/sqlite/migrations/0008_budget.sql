-- rein store schema 8: the budget ledger (store.Reservation), one row per
-- model call of a tenant: reserved before the call, settled after it.
-- A day's use is the sum of settled plus the reserved amounts of the rows
-- still 'reserved'. Money is in micro-units of the price table's currency.
-- Times are Unix nanoseconds.
CREATE TABLE budget_ledger (
    tenant          TEXT NOT NULL,
    key             TEXT NOT NULL,
    day             TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    state           TEXT NOT NULL,
    reserved_tokens INTEGER NOT NULL,
    reserved_cost   INTEGER NOT NULL,
    settled_tokens  INTEGER NOT NULL DEFAULT 0,
    settled_cost    INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE INDEX budget_ledger_day ON budget_ledger (tenant, day);
CREATE INDEX budget_ledger_open ON budget_ledger (run_id) WHERE state = 'reserved';
