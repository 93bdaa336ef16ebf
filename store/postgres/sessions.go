package postgres

import (
	"context"

	"github.com/reinhq/rein/store"
)

// Sessions lists the sessions of the store's runs, one per session id and
// flow, the one with the newest run first (see store.Store); the partial
// index rein_runs_session holds exactly the runs with a session.
func (s *Store) Sessions(ctx context.Context, p *store.ListSessionsParams) ([]*store.Session, error) {
	if p == nil {
		p = &store.ListSessionsParams{}
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []*store.Session
	err := again(ctx, true, func() error {
		rows, err := s.db.QueryContext(ctx, `SELECT g.session, g.flow, g.n, g.first, r.created_at, r.id FROM (
			SELECT session, flow, count(*) AS n, min(created_at) AS first, max(ord) AS top FROM rein_runs
			WHERE session <> '' AND ($1 = '' OR flow = $1) AND ($2 = '' OR tenant = $2)
			GROUP BY session, flow) g
		JOIN rein_runs r ON r.ord = g.top ORDER BY g.top DESC LIMIT $3`, p.Flow, p.Tenant, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			var ss store.Session
			if err := rows.Scan(&ss.ID, &ss.Flow, &ss.Runs, &ss.CreatedAt, &ss.LastAt, &ss.LastRun); err != nil {
				return err
			}
			ss.CreatedAt, ss.LastAt = ss.CreatedAt.UTC(), ss.LastAt.UTC()
			out = append(out, &ss)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr("list sessions", err)
	}
	return out, nil
}
