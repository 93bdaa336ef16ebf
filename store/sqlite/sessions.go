package sqlite

import (
	"context"
	"database/sql"

	"github.com/reinhq/rein/store"
)

// Sessions lists the sessions of the store's runs, one per session id and
// flow, the one with the newest run first (see store.Store). The partial
// index runs_session holds exactly the runs with a session.
func (s *Store) Sessions(ctx context.Context, p *store.ListSessionsParams) (_ []*store.Session, err error) {
	defer s.seen(&err)
	if p == nil {
		p = &store.ListSessionsParams{}
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	return queryAll(ctx, s.reads, "list sessions", func(row scanner) (*store.Session, error) {
		var ss store.Session
		var first, last sql.NullInt64
		if err := row.Scan(&ss.ID, &ss.Flow, &ss.Runs, &first, &last, &ss.LastRun); err != nil {
			return nil, err
		}
		ss.CreatedAt, ss.LastAt = fromNanos(first), fromNanos(last)
		return &ss, nil
	}, `SELECT g.session, g.flow, g.n, g.first, r.created_at, r.id FROM (
		SELECT session, flow, count(*) AS n, min(created_at) AS first, max(rk) AS top FROM runs
		WHERE session <> '' AND (?1 = '' OR flow = ?1) AND (?2 = '' OR tenant = ?2)
		GROUP BY session, flow) g
	JOIN runs r ON r.rk = g.top ORDER BY g.top DESC LIMIT ?3`, p.Flow, p.Tenant, limit)
}
