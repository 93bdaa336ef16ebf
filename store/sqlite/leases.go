package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/reinhq/rein/store"
)

// AcquireLease makes p.Owner the run's only writer until now+p.TTL and bumps
// the run's version: store.ErrConflict while another owner's lease is
// unexpired (unless that owner is p.TakeFrom), store.ErrNotFound for an
// unknown run. The holder may acquire again to extend.
func (s *Store) AcquireLease(ctx context.Context, p *store.LeaseParams) (*store.Run, error) {
	if p.Owner == "" {
		return nil, fmt.Errorf("sqlite: acquire lease of run %s: empty owner", p.RunID)
	}
	var out *store.Run
	err := s.w.write(ctx, func(x *wtx) error {
		out = nil
		rk, h, err := x.head(p.RunID)
		if err != nil {
			return err
		}
		now := time.Now()
		r, err := scanRun(x.queryRow(`UPDATE runs SET lease_owner = ?1, lease_expires = ?2, version = ?5, updated_at = ?3
			WHERE rk = ?6 AND id = ?4 AND (lease_owner IS NULL OR lease_owner = ?1 OR lease_expires <= ?3
				OR (?7 <> '' AND lease_owner = ?7)) RETURNING `+runColsBare,
			p.Owner, now.Add(p.TTL).UnixNano(), now.UnixNano(), p.RunID, h.version+1, rk, p.TakeFrom))
		if errors.Is(err, sql.ErrNoRows) {
			return x.missingOrConflict(p.RunID, "held by another owner")
		}
		if err != nil {
			return err
		}
		r.LastSeq = h.seq
		x.stageHead(rk, head{version: r.Version, seq: h.seq, approvals: h.approvals})
		out = r
		x.afterCommit(func() { s.dropped.Forget(p.RunID) })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: acquire lease of run %s for %s: %w", p.RunID, p.Owner, err)
	}
	return out, nil
}

// missingOrConflict is the clean error of a conditional update of a run
// that matched nothing.
func (x *wtx) missingOrConflict(runID, why string) error {
	ok, err := x.runExists(runID)
	switch {
	case err != nil:
		return err
	case !ok:
		return clean(store.ErrNotFound)
	}
	return clean(fmt.Errorf("%s: %w", why, store.ErrConflict))
}

// RenewLease extends a lease p.Owner holds to now+p.TTL, without changing
// the run's version: store.ErrConflict when the lease expired or another
// owner holds it.
func (s *Store) RenewLease(ctx context.Context, p *store.LeaseParams) error {
	err := s.w.write(ctx, func(x *wtx) error {
		now := time.Now()
		res, err := x.exec(stmtSQL[stRenewLease], now.Add(p.TTL).UnixNano(), p.RunID, p.Owner, now.UnixNano())
		if err != nil {
			return err
		}
		if res.rows == 0 {
			return x.missingOrConflict(p.RunID, "lease lost")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: renew lease of run %s for %s: %w", p.RunID, p.Owner, err)
	}
	return nil
}

// ReleaseLease drops the lease owner holds; releasing a lease one does not
// hold (lost, released, or of an unknown run) does nothing. A final Commit
// (the run succeeded, failed or was cancelled) already dropped the lease, and
// releasing it after one through the same Store costs no transaction.
func (s *Store) ReleaseLease(ctx context.Context, runID, owner string) error {
	if s.dropped.Take(runID) {
		return nil
	}
	err := s.w.write(ctx, func(x *wtx) error {
		_, err := x.exec(stmtSQL[stReleaseLease], runID, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: release lease of run %s for %s: %w", runID, owner, err)
	}
	return nil
}

// ClaimRuns leases to p.Owner up to p.Limit (≤ 0 means 1) runs that are
// pending or running and not leased, oldest first, bumping each one's
// version. Claims are serialised by the writer, so concurrent claimers
// never get the same run.
func (s *Store) ClaimRuns(ctx context.Context, p *store.ClaimParams) ([]*store.Run, error) {
	if p.Owner == "" {
		return nil, errors.New("sqlite: claim runs: empty owner")
	}
	limit := max(p.Limit, 1)
	var out []*store.Run
	err := s.w.write(ctx, func(x *wtx) error {
		out = nil
		// the versions are computed from the journal: the rows queued go in
		// first.
		if err := x.flush(); err != nil {
			return err
		}
		now := time.Now()
		rows, err := x.query(`UPDATE runs SET lease_owner = ?1, lease_expires = ?2, updated_at = ?3,
			version = `+headVersion("runs.rk", "runs.version")+` + 1
			WHERE rk IN (SELECT c.rk FROM (`+liveRuns+`) c CROSS JOIN runs t ON t.rk = c.rk
				WHERE t.status IN ('pending', 'running') AND (t.lease_owner IS NULL OR t.lease_expires <= ?3)
				ORDER BY c.rk LIMIT ?4)
			RETURNING `+runColsBare+`, rk, coalesce((SELECT seq FROM journal WHERE id = `+headOf("runs.rk")+`), 0)`,
			p.Owner, now.Add(p.TTL).UnixNano(), now.UnixNano(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var rk, seq int64
			r, err := scanRunWith(rows, &rk, &seq)
			if err != nil {
				return err
			}
			r.LastSeq = seq
			x.forget(rk)
			out = append(out, r)
		}
		x.afterCommit(func() {
			for _, r := range out {
				s.dropped.Forget(r.ID)
			}
		})
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim runs for %s: %w", p.Owner, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
