package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/prefix"
	"github.com/reinhq/rein/trace"
)

// runCols are the columns of a run row (alias r).
const runCols = `r.id, r.flow, r.flow_path, r.flow_hash, (SELECT text FROM flows WHERE sha256 = r.flow_sha), r.input, r.meta, r.status, r.idempotency_key, r.session, r.tenant,
	r.error, r.usage, r.version, r.lease_owner, r.lease_expires, r.created_at, r.updated_at, r.settled_at, r.retention`

// runHeadSelect selects the run rows of the query from (alias r, with
// where/order/limit) with their journal head: the run version, last seq
// and commit time of the newest journal row.
func runHeadSelect(from string) string {
	return `SELECT ` + strings.ReplaceAll(runCols, "r.", "x.") + `, coalesce(h.run_version, 0), coalesce(h.seq, 0), coalesce(h.committed_at, 0)
		FROM (SELECT r.*, ` + headOf("r.rk") + ` AS hid FROM ` + from + `) x LEFT JOIN journal h ON h.id = x.hid`
}

// runColsBare are runCols without the alias, for RETURNING clauses.
var runColsBare = strings.ReplaceAll(runCols, "r.", "")

type scanner interface{ Scan(dest ...any) error }

// scanRun scans a run row (runCols).
func scanRun(row scanner) (*store.Run, error) {
	return scanRunWith(row)
}

// scanRunHead scans a row of runHeadSelect.
func scanRunHead(row scanner) (*store.Run, error) {
	var version, seq, at int64
	r, err := scanRunWith(row, &version, &seq, &at)
	if err != nil {
		return nil, err
	}
	r.Version, r.LastSeq = max(r.Version, version), seq
	if at > 0 && time.Unix(0, at).After(r.UpdatedAt) {
		r.UpdatedAt = time.Unix(0, at).UTC()
	}
	return r, nil
}

func scanRunWith(row scanner, more ...any) (*store.Run, error) {
	var (
		r                                   store.Run
		key, owner                          sql.NullString
		expires, created, updated, settled  sql.NullInt64
		retention                           int64
		flowText, input, meta, errJSON, use []byte
	)
	err := row.Scan(append([]any{&r.ID, &r.Flow, &r.FlowPath, &r.FlowHash, &flowText, &input, &meta, &r.Status, &key, &r.Session, &r.Tenant,
		&errJSON, &use, &r.Version, &owner, &expires, &created, &updated, &settled, &retention}, more...)...)
	if err != nil {
		return nil, err
	}
	r.FlowText, r.Input, r.Meta, r.Error, r.Usage = flowText, input, meta, errJSON, use
	r.IdempotencyKey, r.LeaseOwner = key.String, owner.String
	r.LeaseExpires, r.CreatedAt, r.UpdatedAt, r.SettledAt = fromNanos(expires), fromNanos(created), fromNanos(updated), fromNanos(settled)
	r.Retention = time.Duration(retention)
	return &r, nil
}

// CreateRun inserts a run at p.Now (the store's clock when zero); with
// p.IdempotencyKey set and a run holding that key, it returns that run and
// created=false. An existing ID without a matching key is
// store.ErrConflict; a leased run (p.Owner) with a zero p.Now is
// store.ErrNoTime.
func (s *Store) CreateRun(ctx context.Context, p *store.CreateRunParams) (_ *store.Run, _ bool, err error) {
	defer s.seen(&err)
	if p == nil || p.ID == "" {
		return nil, false, errors.New("sqlite: create run: empty run ID")
	}
	if p.Owner != "" && p.Now.IsZero() {
		return nil, false, fmt.Errorf("sqlite: create run %s leased to %s: %w", p.ID, p.Owner, store.ErrNoTime)
	}
	status := p.Status
	if status == "" {
		status = trace.RunPending
	}
	var (
		run     *store.Run
		created bool
		sha     = flowSHA(p.FlowText)
	)
	err = s.w.write(ctx, func(x *wtx) error {
		run, created = nil, false
		if p.IdempotencyKey != "" {
			r, err := scanRun(x.queryRow(stmtSQL[stRunByKey], p.IdempotencyKey))
			if err == nil {
				_, h, err := x.head(r.ID)
				if err != nil {
					return err
				}
				r.Version, r.LastSeq = h.version, h.seq
				run = r
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		now := nowOr(p.Now)
		if _, err := insertRun(x, p, status, sha, now); err != nil {
			return err
		}
		run, created = insertedRun(p, status, now), true
		x.afterCommit(func() { s.dropped.Forget(p.ID) })
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: create run %s: %w", p.ID, err)
	}
	return run, created, nil
}

// nowOr is the caller's time now, or the store's clock when it is zero
// (store.Store: timestamps that decide nothing).
func nowOr(now time.Time) time.Time {
	if now.IsZero() {
		return time.Now()
	}
	return now
}

// flowSHA is the key of a run's flow text in flows (hex sha256), "" when
// it has none. It is computed by the caller, off the writer, and not taken
// from CreateRunParams.FlowHash, which the store does not check: a wrong
// hash there would make two texts share a key.
func flowSHA(text []byte) string {
	if len(text) == 0 {
		return ""
	}
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:])
}

// insertRun inserts the run row of p with status — its flow text under
// sha (flowSHA), stored in flows unless the writer knows it is there — at
// time now, and returns its key. A run with that ID is a clean
// store.ErrConflict.
func insertRun(x *wtx, p *store.CreateRunParams, status trace.RunStatus, sha string, now time.Time) (int64, error) {
	var owner, expires any
	if p.Owner != "" {
		owner, expires = p.Owner, now.Add(p.LeaseTTL).UnixNano()
	}
	at0 := now.UnixNano()
	res, err := x.exec(stmtSQL[stCreateRun], p.ID, p.Flow, p.FlowPath, p.FlowHash, nullText(sha), nullBytes(p.Input), nullBytes(p.Meta),
		string(status), nullText(p.IdempotencyKey), p.Session, p.Tenant, owner, expires, at0, at0, int64(p.Retention))
	if err != nil {
		return 0, cleanIfConstraint(err)
	}
	// the run row is in; its flow text follows (a failure from here on is
	// not clean: the batch rolls back).
	if sha != "" && (x.reset || !x.w.flows[sha]) {
		if _, err := x.exec(stmtSQL[stInsertFlow], sha, p.FlowText); err != nil {
			return 0, fmt.Errorf("store the flow text: %w", err)
		}
		x.flows = append(x.flows, sha)
	}
	x.created++
	x.noteKey(p.ID, res.lastID)
	x.stageHead(res.lastID, head{})
	return res.lastID, nil
}

// updateRun writes what a transition changes of run rk's row — status,
// error, usage, settled time, at version — and keeps runs_live true for
// its status (noteStatus).
func updateRun(x *wtx, rk int64, c *commitData, version int64) error {
	if _, err := x.exec(stmtSQL[stUpdateRun], version, c.now, c.status, c.errJSON, c.usage, c.settle, c.final, c.final, rk, c.runID); err != nil {
		return err
	}
	if status, ok := c.status.(string); ok {
		return x.noteStatus(rk, status, c.final)
	}
	return nil
}

// insertedRun is the run insertRun wrote at now, built rather than read back.
func insertedRun(p *store.CreateRunParams, status trace.RunStatus, now time.Time) *store.Run {
	at := time.Unix(0, now.UnixNano()).UTC()
	r := &store.Run{ID: p.ID, Flow: p.Flow, FlowPath: p.FlowPath, FlowHash: p.FlowHash,
		FlowText: cloneBytes(p.FlowText), Input: cloneBytes(p.Input), Meta: cloneBytes(p.Meta),
		Status: status, IdempotencyKey: p.IdempotencyKey, Session: p.Session, Tenant: p.Tenant,
		LeaseOwner: p.Owner, CreatedAt: at, UpdatedAt: at, Retention: p.Retention}
	if p.Owner != "" {
		r.LeaseExpires = time.Unix(0, now.Add(p.LeaseTTL).UnixNano()).UTC()
	}
	return r
}

// cloneBytes copies b, as reading it back from the database would; empty is
// stored as NULL and reads back nil.
func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

var getRunSQL = runHeadSelect(`runs r WHERE r.id = ?1`)

// GetRun returns one run (store.ErrNotFound).
func (s *Store) GetRun(ctx context.Context, id string) (_ *store.Run, err error) {
	defer s.seen(&err)
	r, err := scanRunHead(s.reads.QueryRowContext(ctx, getRunSQL, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get run %s: %w", id, err)
	}
	return r, nil
}

// ListRuns returns runs, newest first; p may be nil.
func (s *Store) ListRuns(ctx context.Context, p *store.ListRunsParams) (_ []*store.Run, err error) {
	defer s.seen(&err)
	q, args := listRunsSQL(p)
	return queryAll(ctx, s.reads, "list runs", scanRunHead, q, args...)
}

// listRunsSQL is the query of ListRuns(p) and its arguments.
func listRunsSQL(p *store.ListRunsParams) (string, []any) {
	if p == nil {
		p = &store.ListRunsParams{}
	}
	var (
		where []string
		args  []any
	)
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	if p.Tenant != "" || p.Before != "" {
		// a tenant's page: runs_tenant (or the cursor's rk range) answers,
		// and the other filters narrow it plainly; the merged lookups
		// below cap their own arms at limit, before these filters.
		return pageSQL(p, limit)
	}
	if p.IDPrefix != "" || p.Session != "" {
		// the unique index on id answers a prefix as a range, and
		// runs_session a session; the status and flow filters below then
		// only narrow those few rows.
		if p.IDPrefix != "" {
			where, args = append(where, "r.id >= ?"), append(args, p.IDPrefix)
			if hi, ok := prefix.End(p.IDPrefix); ok {
				where, args = append(where, "r.id < ?"), append(args, hi)
			}
		}
		if p.Status != "" {
			where, args = append(where, "r.status = ?"), append(args, string(p.Status))
		}
		if p.Flow != "" {
			where, args = append(where, "r.flow = ?"), append(args, p.Flow)
		}
	}
	if p.Status != "" && p.IDPrefix == "" && p.Session == "" {
		where, args = append(where, "r.status = ?"), append(args, string(p.Status))
		if isLive(string(p.Status)) && p.Flow == "" {
			// runs in flight: runs_live and the tail it lacks yet, the
			// newest of both (each arm comes sorted).
			where = append(where, `r.rk IN (SELECT rk FROM runs WHERE rk > (SELECT runs FROM journal_mark WHERE one = 1) AND status = ?
				UNION ALL SELECT l.rk FROM runs_live l CROSS JOIN runs t ON t.rk = l.rk WHERE t.status = ?
				ORDER BY 1 DESC LIMIT ?)`)
			args = append(args, string(p.Status), string(p.Status), limit)
		}
	}
	if p.Flow != "" && p.IDPrefix == "" && p.Session == "" {
		// run_flows, and the tail of runs it lacks yet: the newest of
		// both, merged in rk order (each arm comes sorted, so SQLite
		// stops at the limit).
		status, sargs := "", []any{p.Flow}
		if p.Status != "" {
			status, sargs = " AND status = ?", append(sargs, string(p.Status))
		}
		where = append(where, `r.rk IN (SELECT rk FROM runs WHERE rk > (SELECT runs FROM journal_mark WHERE one = 1) AND flow = ?`+status+`
			UNION ALL SELECT f.rk FROM run_flows f JOIN runs t ON t.rk = f.rk WHERE f.flow = ?`+strings.ReplaceAll(status, "status", "t.status")+`
			ORDER BY 1 DESC LIMIT ?)`)
		args = append(append(append(args, sargs...), sargs...), limit)
	}
	if p.Session != "" {
		// runs_session holds the runs with a session only: the second term
		// tells SQLite that the partial index answers.
		where, args = append(where, "r.session = ? AND r.session <> ''"), append(args, p.Session)
	}
	// rk is creation order: newest first is rk descending.
	from := `runs r`
	if len(where) > 0 {
		from += " WHERE " + strings.Join(where, " AND ")
	}
	q := runHeadSelect(from+" ORDER BY r.rk DESC LIMIT ?") + " ORDER BY x.rk DESC"
	return q, append(args, limit)
}

// pageSQL is the query of ListRuns(p) with a tenant or a cursor: every
// filter as a plain condition, newest first.
func pageSQL(p *store.ListRunsParams, limit int) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) { where, args = append(where, cond), append(args, v) }
	if p.Tenant != "" {
		// runs_tenant holds the runs with a tenant only: the second term
		// tells SQLite that the partial index answers.
		add("r.tenant = ? AND r.tenant <> ''", p.Tenant)
	}
	if p.Before != "" {
		add("r.rk < coalesce((SELECT rk FROM runs WHERE id = ?), 0)", p.Before)
	}
	if p.Status != "" {
		add("r.status = ?", string(p.Status))
	}
	if p.Flow != "" {
		add("r.flow = ?", p.Flow)
	}
	if p.Session != "" {
		add("r.session = ?", p.Session)
	}
	if p.IDPrefix != "" {
		add("r.id >= ?", p.IDPrefix)
		if hi, ok := prefix.End(p.IDPrefix); ok {
			add("r.id < ?", hi)
		}
	}
	q := runHeadSelect("runs r WHERE "+strings.Join(where, " AND ")+" ORDER BY r.rk DESC LIMIT ?") + " ORDER BY x.rk DESC"
	return q, append(args, limit)
}

// queryAll runs a read query and scans every row with scan; errors name
// what was being read.
func queryAll[T any](ctx context.Context, db *stmts, what string, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return out, nil
}

// exists reports whether run id is in the database (read pool).
func (s *Store) exists(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := s.reads.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`, id).Scan(&ok)
	return ok, err
}

// notFoundUnlessExists returns store.ErrNotFound when run id does not exist.
func (s *Store) notFoundUnlessExists(ctx context.Context, what, id string) error {
	ok, err := s.exists(ctx, id)
	if err != nil {
		return fmt.Errorf("sqlite: %s of run %s: %w", what, id, err)
	}
	if !ok {
		return fmt.Errorf("sqlite: %s of run %s: %w", what, id, store.ErrNotFound)
	}
	return nil
}
