package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/records"
)

// Reserve reserves p's amounts in the writer's transaction: every write
// of this store goes through the one writer, so reservers of a day are
// serialised and the sum they read is the one they add to.
func (s *Store) Reserve(ctx context.Context, p *store.ReserveParams) (_ *store.Reservation, err error) {
	defer s.seen(&err)
	if err := p.Check(); err != nil {
		return nil, err
	}
	var out *store.Reservation
	err = s.w.write(ctx, func(x *wtx) error {
		out = nil
		r, err := records.ScanReservation(x.queryRow(`SELECT `+records.ReservationCols+` FROM budget_ledger WHERE tenant = ? AND key = ?`, p.Tenant, p.Key))
		switch {
		case err == nil && r.State == store.Reserved:
			out = r // the same call again: counted once
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		day := p.Day
		if r != nil {
			day = r.Day // a call stays charged to the day it first reserved
		}
		var tokens, cost int64
		if err := x.queryRow(`SELECT coalesce(sum(settled_tokens + CASE WHEN state = 'reserved' THEN reserved_tokens ELSE 0 END), 0),
			coalesce(sum(settled_cost + CASE WHEN state = 'reserved' THEN reserved_cost ELSE 0 END), 0)
			FROM budget_ledger WHERE tenant = ? AND day = ?`, p.Tenant, day).Scan(&tokens, &cost); err != nil {
			return err
		}
		q := *p
		q.Day = day
		if over := q.Over(tokens, cost); over != nil {
			return clean(over)
		}
		now := nowOr(p.Now).UnixNano()
		out, err = records.ScanReservation(x.queryRow(`INSERT INTO budget_ledger (tenant, key, day, run_id, state, reserved_tokens, reserved_cost, created_at, updated_at)
			VALUES (?1, ?2, ?3, ?4, 'reserved', ?5, ?6, ?7, ?7)
			ON CONFLICT (tenant, key) DO UPDATE SET state = 'reserved', run_id = ?4, reserved_tokens = ?5, reserved_cost = ?6, updated_at = ?7
			RETURNING `+records.ReservationCols, p.Tenant, p.Key, day, p.RunID, p.Tokens, p.Cost, now))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: reserve budget of call %s: %w", p.Key, err)
	}
	return out, nil
}

// Settle adds what the call used and closes its reservation.
func (s *Store) Settle(ctx context.Context, p *store.SettleParams) (err error) {
	defer s.seen(&err)
	err = s.w.write(ctx, func(x *wtx) error {
		res, err := x.exec(`UPDATE budget_ledger SET state = 'settled', reserved_tokens = 0, reserved_cost = 0,
			settled_tokens = settled_tokens + ?3, settled_cost = settled_cost + ?4, updated_at = ?5
			WHERE tenant = ?1 AND key = ?2`, p.Tenant, p.Key, p.Tokens, p.Cost, nowOr(p.Now).UnixNano())
		if err != nil {
			return err
		}
		if res.rows == 0 {
			return clean(store.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: settle budget of call %s: %w", p.Key, err)
	}
	return nil
}

// ReleaseRun closes the run's open reservations.
func (s *Store) ReleaseRun(ctx context.Context, runID string) (n int, err error) {
	defer s.seen(&err)
	err = s.w.write(ctx, func(x *wtx) error {
		res, err := x.exec(`UPDATE budget_ledger SET state = 'released', reserved_tokens = 0, reserved_cost = 0, updated_at = ?2
			WHERE run_id = ?1 AND state = 'reserved'`, runID, nowOr(time.Time{}).UnixNano())
		n = int(res.rows)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: release the budget reservations of run %s: %w", runID, err)
	}
	return n, nil
}

// Spend sums a day's ledger by tenant.
func (s *Store) Spend(ctx context.Context, day, tenant string) (_ []*store.Spend, err error) {
	defer s.seen(&err)
	return queryAll(ctx, s.reads, "budget spend of "+day, scanSpend, `SELECT tenant, day,
		sum(settled_tokens + CASE WHEN state = 'reserved' THEN reserved_tokens ELSE 0 END),
		sum(settled_cost + CASE WHEN state = 'reserved' THEN reserved_cost ELSE 0 END),
		sum(CASE WHEN state = 'reserved' THEN reserved_tokens ELSE 0 END),
		sum(CASE WHEN state = 'reserved' THEN reserved_cost ELSE 0 END),
		sum(state = 'reserved')
		FROM budget_ledger WHERE day = ?1 AND (?2 = '' OR tenant = ?2) GROUP BY tenant ORDER BY tenant`, day, tenant)
}

func scanSpend(row scanner) (*store.Spend, error) {
	var sp store.Spend
	err := row.Scan(&sp.Tenant, &sp.Day, &sp.Tokens, &sp.Cost, &sp.ReservedTokens, &sp.ReservedCost, &sp.Open)
	return &sp, err
}
