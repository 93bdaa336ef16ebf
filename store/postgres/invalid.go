package postgres

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/store"
)

const invalidCols = `tenant, resource, run_id, call_key, premise, reason, at`

func scanInvalidation(row scanner) (*store.Invalidation, error) {
	var v store.Invalidation
	if err := row.Scan(&v.Tenant, &v.Resource, &v.RunID, &v.CallKey, &v.Premise, &v.Reason, &v.At); err != nil {
		return nil, err
	}
	v.At = v.At.UTC()
	return &v, nil
}

// Invalidate records rows in one transaction; a row already there is
// left as it was.
func (s *Store) Invalidate(ctx context.Context, rows []*store.Invalidation) error {
	if len(rows) == 0 {
		return nil
	}
	err := again(ctx, true, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone
		for _, v := range rows {
			if _, err := tx.ExecContext(ctx, `INSERT INTO rein_invalidated (`+invalidCols+`)
				VALUES ($1, $2, $3, $4, $5, $6, coalesce($7::timestamptz, now())) ON CONFLICT DO NOTHING`,
				v.Tenant, v.Resource, v.RunID, v.CallKey, v.Premise, v.Reason, timeOrNil(v.At)); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	if err != nil {
		return mapErr(fmt.Sprintf("record %d invalidated resources", len(rows)), err)
	}
	return nil
}

// Invalidated reads the tenant's rows, of p.Resources when given.
func (s *Store) Invalidated(ctx context.Context, p *store.InvalidatedParams) ([]*store.Invalidation, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var limit any // NULL: no limit
	if p.Limit > 0 {
		limit = p.Limit
	}
	q, args := `SELECT `+invalidCols+` FROM rein_invalidated WHERE tenant = $1 AND cleared_at IS NULL
		ORDER BY at, resource, run_id, call_key LIMIT $2`, []any{p.Tenant, limit}
	if len(p.Resources) > 0 {
		q, args = `SELECT `+invalidCols+` FROM rein_invalidated WHERE tenant = $1 AND resource = ANY($3::text[]) AND cleared_at IS NULL
			ORDER BY at, resource, run_id, call_key LIMIT $2`, append(args, p.Resources)
	}
	var out []*store.Invalidation
	err := again(ctx, true, func() error {
		out = out[:0]
		rows, err := s.db.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scanInvalidation(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr("invalidated resources", err)
	}
	return out, nil
}

// ClearInvalidated marks the tenant's rows of p.Resource (of p.RunID
// when set) cleared.
func (s *Store) ClearInvalidated(ctx context.Context, p *store.ClearInvalidatedParams) (int, error) {
	if p.Resource == "" {
		return 0, fmt.Errorf("postgres store: clear an invalidated resource: name the resource")
	}
	var n int64
	err := again(ctx, true, func() error {
		res, err := s.db.ExecContext(ctx, `UPDATE rein_invalidated SET cleared_at = coalesce($4::timestamptz, now())
			WHERE tenant = $1 AND resource = $2 AND ($3 = '' OR run_id = $3) AND cleared_at IS NULL`,
			p.Tenant, p.Resource, p.RunID, timeOrNil(p.Now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, mapErr("clear invalidated resource "+p.Resource, err)
	}
	return int(n), nil
}
