package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/store"
)

// pruneWhere selects the finished runs Prune deletes: settled before $1
// and past their retention at $3, or, with a session ($4), that session's
// whatever their age.
const pruneWhere = `(($4 = '' AND settled_at < $1
			AND settled_at + retention_ns / 1000 * interval '1 microsecond' < $3)
			OR ($4 <> '' AND session = $4 AND session <> ''))`

// Prune deletes the finished runs (succeeded, failed, cancelled; only
// p.Status when set) settled before p.Before and past their own
// retention (settled_at + Run.Retention before p.Now; a zero p.Now is
// store.ErrNoTime),
// with their journals and approvals, then the blobs no remaining run
// refers to (rein_blob_refs). Runs and blobs are deleted in separate
// transactions: a blob left behind by a failure is collected by the next
// Prune.
func (s *Store) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	if p.Status != "" && !(&store.Run{Status: p.Status}).Finished() {
		return nil, errors.New("postgres store: prune: status " + string(p.Status) + " is not a final status")
	}
	if p.Now.IsZero() {
		return nil, fmt.Errorf("postgres store: prune: %w", store.ErrNoTime)
	}
	if p.DryRun {
		var ids []string
		err := again(ctx, true, func() error {
			rows, err := s.db.QueryContext(ctx, `SELECT id FROM rein_runs
			WHERE status IN ('succeeded', 'failed', 'cancelled') AND ($2 = '' OR status = $2)
			AND `+pruneWhere+`
			ORDER BY ord`, p.Before, string(p.Status), p.Now, p.Session)
			if err != nil {
				return err
			}
			defer rows.Close()
			ids = ids[:0]
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return rows.Err()
		})
		if err != nil {
			return nil, mapErr("prune (dry run)", err)
		}
		return &store.PruneResult{Runs: len(ids), RunIDs: ids}, nil
	}
	var runs int
	err := again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `WITH r AS (DELETE FROM rein_runs
			WHERE status IN ('succeeded', 'failed', 'cancelled') AND ($2 = '' OR status = $2)
			AND `+pruneWhere+`
			RETURNING id),
		j AS (DELETE FROM rein_journal j USING r WHERE j.run_id = r.id),
		x AS (DELETE FROM rein_records x USING r WHERE x.run_id = r.id)
		SELECT count(*) FROM r`, p.Before, string(p.Status), p.Now, p.Session).Scan(&runs)
	})
	if err != nil {
		return nil, mapErr("prune runs", err)
	}
	res := &store.PruneResult{Runs: runs}
	var tag sql.Result
	// A Commit racing with the sweep may have just referred to a blob it is
	// deleting; the foreign key then fails the sweep, and a second one,
	// with a fresh snapshot, leaves that blob alone.
	for attempt := 1; ; attempt++ {
		err = again(ctx, true, func() (err error) {
			tag, err = s.db.ExecContext(ctx, `DELETE FROM rein_blobs b
			WHERE NOT EXISTS (SELECT 1 FROM rein_blob_refs r WHERE r.sha256 = b.sha256)`)
			return err
		})
		var pe *pgconn.PgError
		if err != nil && errors.As(err, &pe) && pe.Code == "23503" && attempt < 3 {
			continue
		}
		break
	}
	if err != nil {
		return res, mapErr("prune blobs", err)
	}
	n, err := tag.RowsAffected()
	if err != nil {
		return res, mapErr("prune blobs", err)
	}
	res.Blobs = int(n)
	return res, nil
}
