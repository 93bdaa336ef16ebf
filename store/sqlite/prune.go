package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Prune deletes the finished runs (succeeded, failed, cancelled; only
// p.Status when set) settled before p.Before and, when they set one, longer
// ago than their own Retention — with their events, steps and approvals —
// and the blobs no remaining step refers to.
func (s *Store) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	st := [3]any{string(trace.RunSucceeded), string(trace.RunFailed), string(trace.RunCancelled)}
	if p.Status != "" {
		if r := (store.Run{Status: p.Status}); !r.Finished() {
			return nil, fmt.Errorf("sqlite: prune: status %q is not final (want succeeded, failed or cancelled)", p.Status)
		}
		st = [3]any{string(p.Status), string(p.Status), string(p.Status)}
	}
	var res store.PruneResult
	err := s.w.do(ctx, func(x *wtx) error {
		res = store.PruneResult{}
		now := time.Now().UnixNano()
		cond := `status IN (?, ?, ?) AND settled_at IS NOT NULL AND settled_at < ? AND settled_at + retention < ?`
		args := []any{st[0], st[1], st[2], p.Before.UnixNano(), now}
		rows, err := x.tx.QueryContext(x.ctx, `SELECT output_blob FROM steps WHERE output_blob IS NOT NULL AND rk IN (SELECT rk FROM runs WHERE `+cond+`)
			UNION SELECT input_blob FROM steps WHERE input_blob IS NOT NULL AND rk IN (SELECT rk FROM runs WHERE `+cond+`)`,
			append(append([]any{}, args...), args...)...)
		if err != nil {
			return err
		}
		var shas []string
		for rows.Next() {
			var sha string
			if err := rows.Scan(&sha); err != nil {
				rows.Close()
				return err
			}
			shas = append(shas, sha)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
		r, err := x.tx.ExecContext(x.ctx, `DELETE FROM runs WHERE `+cond, args...)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		res.Runs = int(n)
		for _, sha := range shas {
			r, err := x.tx.ExecContext(x.ctx, `DELETE FROM blobs WHERE sha256 = ?1
				AND NOT EXISTS (SELECT 1 FROM steps WHERE output_blob = ?1) AND NOT EXISTS (SELECT 1 FROM steps WHERE input_blob = ?1)`, sha)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			res.Blobs += int(n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: prune: %w", err)
	}
	return &res, nil
}
