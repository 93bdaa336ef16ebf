package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/reinhq/rein/store"
)

// AcquireLease makes p.Owner the run's only writer until p.Now+p.TTL and
// bumps the run's version: store.ErrConflict while another owner's lease is
// unexpired at p.Now (unless that owner is p.TakeFrom), store.ErrNotFound
// for an unknown run, store.ErrNoTime for a zero p.Now. The holder may
// acquire again to extend.
func (s *Store) AcquireLease(ctx context.Context, p *store.LeaseParams) (_ *store.Run, err error) {
	defer s.seen(&err)
	if p.Owner == "" {
		return nil, fmt.Errorf("sqlite: acquire lease of run %s: empty owner", p.RunID)
	}
	if p.Now.IsZero() {
		return nil, fmt.Errorf("sqlite: acquire lease of run %s: %w", p.RunID, store.ErrNoTime)
	}
	var out *store.Run
	err = s.w.write(ctx, func(x *wtx) error {
		out = nil
		rk, h, err := x.head(p.RunID)
		if err != nil {
			return err
		}
		now := p.Now
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

// RenewLease extends a lease p.Owner holds to p.Now+p.TTL, without
// changing the run's version: store.ErrConflict when the lease expired by
// p.Now or another owner holds it, store.ErrNoTime for a zero p.Now.
func (s *Store) RenewLease(ctx context.Context, p *store.LeaseParams) (err error) {
	defer s.seen(&err)
	if p.Now.IsZero() {
		return fmt.Errorf("sqlite: renew lease of run %s: %w", p.RunID, store.ErrNoTime)
	}
	err = s.w.write(ctx, func(x *wtx) error {
		now := p.Now
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
func (s *Store) ReleaseLease(ctx context.Context, runID, owner string) (err error) {
	defer s.seen(&err)
	if s.dropped.Take(runID) {
		return nil
	}
	err = s.w.write(ctx, func(x *wtx) error {
		_, err := x.exec(stmtSQL[stReleaseLease], runID, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: release lease of run %s for %s: %w", runID, owner, err)
	}
	return nil
}

// ClaimRuns leases to p.Owner, until p.Now+p.TTL, up to p.Limit (≤ 0
// means 1) runs that are pending or running and not leased at p.Now,
// oldest first, bumping each one's version. Claims are serialised by the
// writer, so concurrent claimers never get the same run. A zero p.Now is
// store.ErrNoTime.
func (s *Store) ClaimRuns(ctx context.Context, p *store.ClaimParams) (_ []*store.Run, err error) {
	defer s.seen(&err)
	if p.Owner == "" {
		return nil, errors.New("sqlite: claim runs: empty owner")
	}
	if p.Now.IsZero() {
		return nil, fmt.Errorf("sqlite: claim runs for %s: %w", p.Owner, store.ErrNoTime)
	}
	limit := max(p.Limit, 1)
	var (
		out []*store.Run
		rks []int64 // out's keys: the order the runs were created in
	)
	err = s.w.write(ctx, func(x *wtx) error {
		out, rks = nil, nil
		// the versions are computed from the journal: the rows queued go in
		// first.
		if err := x.flush(); err != nil {
			return err
		}
		now := p.Now
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
			out, rks = append(out, r), append(rks, rk)
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
	// oldest first: in the order the runs were inserted, whatever the
	// clocks of their creators said.
	sort.Sort(byKey{out, rks})
	return out, nil
}

// byKey sorts runs by their row keys (rks[i] is runs[i]'s).
type byKey struct {
	runs []*store.Run
	rks  []int64
}

func (b byKey) Len() int           { return len(b.runs) }
func (b byKey) Less(i, j int) bool { return b.rks[i] < b.rks[j] }
func (b byKey) Swap(i, j int) {
	b.runs[i], b.runs[j] = b.runs[j], b.runs[i]
	b.rks[i], b.rks[j] = b.rks[j], b.rks[i]
}
