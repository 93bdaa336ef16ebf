-- rein store schema 7: the budget ledger (store.Reservation), one row per
-- model call of a tenant: reserved before the call, settled after it.
-- A day's use is the sum of settled plus the reserved amounts of the rows
-- still 'reserved'. Money is in micro-units of the price table's currency.
-- Reservers of one tenant serialise on a transaction-scoped advisory lock
-- of the tenant, so concurrent ones never pass a limit.
CREATE TABLE rein_budget_ledger (
    tenant          text NOT NULL,
    key             text NOT NULL,
    day             text NOT NULL,
    run_id          text NOT NULL,
    state           text NOT NULL,
    reserved_tokens bigint NOT NULL,
    reserved_cost   bigint NOT NULL,
    settled_tokens  bigint NOT NULL DEFAULT 0,
    settled_cost    bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX rein_budget_ledger_day ON rein_budget_ledger (tenant, day);
CREATE INDEX rein_budget_ledger_open ON rein_budget_ledger (run_id) WHERE state = 'reserved';
