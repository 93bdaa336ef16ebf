package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/records"
)

// daySum is the use of a tenant's day: settled amounts plus open
// reservations.
const daySum = `SELECT coalesce(sum(settled_tokens + CASE WHEN state = 'reserved' THEN reserved_tokens ELSE 0 END), 0)::bigint,
	coalesce(sum(settled_cost + CASE WHEN state = 'reserved' THEN reserved_cost ELSE 0 END), 0)::bigint
	FROM rein_budget_ledger WHERE tenant = $1 AND day = $2`

// Reserve reserves p's amounts in one transaction that first takes the
// tenant's transaction-scoped advisory lock, so the reservers of a
// tenant, in any process, read and add to a day's sum one at a time.
func (s *Store) Reserve(ctx context.Context, p *store.ReserveParams) (*store.Reservation, error) {
	what := "reserve budget of call " + p.Key
	if err := p.Check(); err != nil {
		return nil, err
	}
	var out *store.Reservation
	var refused error
	err := again(ctx, true, func() (err error) {
		out, refused = nil, nil
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('rein_budget_ledger/' || $1, 0))`, p.Tenant); err != nil {
			return err
		}
		r, err := records.ScanReservation(tx.QueryRowContext(ctx, `SELECT `+records.ReservationCols+` FROM rein_budget_ledger WHERE tenant = $1 AND key = $2 FOR UPDATE`, p.Tenant, p.Key))
		switch {
		case err == nil && r.State == store.Reserved:
			out = r // the same call again: counted once
			return tx.Commit()
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		q := *p
		if r != nil {
			q.Day = r.Day // a call stays charged to the day it first reserved
		}
		var tokens, cost int64
		if err := tx.QueryRowContext(ctx, daySum, p.Tenant, q.Day).Scan(&tokens, &cost); err != nil {
			return err
		}
		if refused = q.Over(tokens, cost); refused != nil {
			return nil
		}
		out, err = records.ScanReservation(tx.QueryRowContext(ctx, `INSERT INTO rein_budget_ledger
			(tenant, key, day, run_id, state, reserved_tokens, reserved_cost, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'reserved', $5, $6, coalesce($7::timestamptz, now()), coalesce($7::timestamptz, now()))
			ON CONFLICT (tenant, key) DO UPDATE SET state = 'reserved', run_id = $4, reserved_tokens = $5, reserved_cost = $6,
				updated_at = coalesce($7::timestamptz, now())
			RETURNING `+records.ReservationCols, p.Tenant, p.Key, q.Day, p.RunID, p.Tokens, p.Cost, timeOrNil(p.Now)))
		if err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	if refused != nil {
		return nil, fmt.Errorf("postgres store: %s: %w", what, refused)
	}
	return out, nil
}

// Settle adds what the call used and closes its reservation.
func (s *Store) Settle(ctx context.Context, p *store.SettleParams) error {
	what := "settle budget of call " + p.Key
	var n int64
	err := again(ctx, false, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE rein_budget_ledger SET state = 'settled', reserved_tokens = 0, reserved_cost = 0,
			settled_tokens = settled_tokens + $3, settled_cost = settled_cost + $4, updated_at = coalesce($5::timestamptz, now())
			WHERE tenant = $1 AND key = $2`, p.Tenant, p.Key, p.Tokens, p.Cost, timeOrNil(p.Now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return mapErr(what, err)
	}
	if n == 0 {
		return fmt.Errorf("postgres store: %s: %w", what, store.ErrNotFound)
	}
	return nil
}

// ReleaseRun closes the run's open reservations.
func (s *Store) ReleaseRun(ctx context.Context, runID string) (int, error) {
	var n int64
	err := again(ctx, true, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE rein_budget_ledger SET state = 'released', reserved_tokens = 0, reserved_cost = 0,
			updated_at = now() WHERE run_id = $1 AND state = 'reserved'`, runID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, mapErr("release the budget reservations of run "+runID, err)
	}
	return int(n), nil
}

// Spend sums a day's ledger by tenant.
func (s *Store) Spend(ctx context.Context, day, tenant string) ([]*store.Spend, error) {
	var out []*store.Spend
	err := again(ctx, true, func() error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, `SELECT tenant, day,
			sum(settled_tokens + CASE WHEN state = 'reserved' THEN reserved_tokens ELSE 0 END)::bigint,
			sum(settled_cost + CASE WHEN state = 'reserved' THEN reserved_cost ELSE 0 END)::bigint,
			sum(CASE WHEN state = 'reserved' THEN reserved_tokens ELSE 0 END)::bigint,
			sum(CASE WHEN state = 'reserved' THEN reserved_cost ELSE 0 END)::bigint,
			count(*) FILTER (WHERE state = 'reserved')
			FROM rein_budget_ledger WHERE day = $1 AND ($2 = '' OR tenant = $2) GROUP BY tenant, day ORDER BY tenant`, day, tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var sp store.Spend
			if err := rows.Scan(&sp.Tenant, &sp.Day, &sp.Tokens, &sp.Cost, &sp.ReservedTokens, &sp.ReservedCost, &sp.Open); err != nil {
				return err
			}
			out = append(out, &sp)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr("budget spend of "+day, err)
	}
	return out, nil
}
