package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reinhq/rein/store"
)

const invalidCols = `tenant, resource, run_id, call_key, premise, reason, at`

func scanInvalidation(row scanner) (*store.Invalidation, error) {
	var v store.Invalidation
	var at int64
	if err := row.Scan(&v.Tenant, &v.Resource, &v.RunID, &v.CallKey, &v.Premise, &v.Reason, &at); err != nil {
		return nil, err
	}
	v.At = time.Unix(0, at).UTC()
	return &v, nil
}

// Invalidate records rows in one write of the writer; a row already there
// is left as it was.
func (s *Store) Invalidate(ctx context.Context, rows []*store.Invalidation) (err error) {
	defer s.seen(&err)
	if len(rows) == 0 {
		return nil
	}
	err = s.w.write(ctx, func(x *wtx) error {
		for _, v := range rows {
			if _, err := x.exec(`INSERT INTO invalidated (`+invalidCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, v.Tenant, v.Resource, v.RunID, v.CallKey, v.Premise, v.Reason, nowOr(v.At).UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: record %d invalidated resources: %w", len(rows), err)
	}
	return nil
}

// Invalidated reads the tenant's rows, of p.Resources when given (one
// statement: the resources go as a JSON array).
func (s *Store) Invalidated(ctx context.Context, p *store.InvalidatedParams) (_ []*store.Invalidation, err error) {
	defer s.seen(&err)
	if err := p.Check(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	if len(p.Resources) == 0 {
		return queryAll(ctx, s.reads, "invalidated resources", scanInvalidation, `SELECT `+invalidCols+`
			FROM invalidated WHERE tenant = ? AND cleared_at IS NULL ORDER BY at, resource, run_id, call_key LIMIT ?`, p.Tenant, limit)
	}
	list, err := json.Marshal(p.Resources)
	if err != nil {
		return nil, err
	}
	return queryAll(ctx, s.reads, "invalidated resources", scanInvalidation, `SELECT `+invalidCols+`
		FROM invalidated WHERE tenant = ? AND resource IN (SELECT value FROM json_each(?)) AND cleared_at IS NULL
		ORDER BY at, resource, run_id, call_key LIMIT ?`, p.Tenant, string(list), limit)
}

// ClearInvalidated marks the tenant's rows of p.Resource (of p.RunID
// when set) cleared.
func (s *Store) ClearInvalidated(ctx context.Context, p *store.ClearInvalidatedParams) (n int, err error) {
	defer s.seen(&err)
	if p.Resource == "" {
		return 0, fmt.Errorf("sqlite: clear an invalidated resource: name the resource")
	}
	err = s.w.write(ctx, func(x *wtx) error {
		res, err := x.exec(`UPDATE invalidated SET cleared_at = ?4
			WHERE tenant = ?1 AND resource = ?2 AND (?3 = '' OR run_id = ?3) AND cleared_at IS NULL`,
			p.Tenant, p.Resource, p.RunID, nowOr(p.Now).UnixNano())
		n = int(res.rows)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: clear invalidated resource %s: %w", p.Resource, err)
	}
	return n, nil
}
