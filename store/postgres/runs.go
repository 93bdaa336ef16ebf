package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/prefix"
	"github.com/reinhq/rein/trace"
)

// runColumns is the column list scanRun reads, for a run row aliased r
// whose journal head (version, seq, at) is the row aliased head, or none
// when head is empty: the run's version and last seq are its newest
// journal row's, and it was updated when its row or that journal row last
// was.
func runColumns(head string) string {
	version, seq, at := "0", "0", "NULL::timestamptz"
	if head != "" {
		version, seq, at = head+".version", head+".seq", head+".at"
	}
	return `r.id, r.flow, r.flow_path, r.flow_hash, r.flow_text, r.input, r.meta, r.status,
	coalesce(r.idempotency_key, ''), r.session, r.tenant, r.error, r.usage, coalesce(` + version + `, 0), coalesce(` + seq + `, 0),
	coalesce(r.lease_owner, ''), r.lease_expires, r.created_at, greatest(r.updated_at, ` + at + `), r.settled_at, r.retention_ns, r.ord`
}

// headSQL selects the newest journal row of the run runID (an SQL
// expression): its version, seq and time.
func headSQL(runID string) string {
	return `SELECT j.version, j.seq, j.at FROM rein_journal j WHERE j.run_id = ` + runID + ` ORDER BY j.version DESC LIMIT 1`
}

var (
	// runCols reads runs FROM runFrom.
	runCols = runColumns("h")
	// runFrom is rein_runs (alias r) with its journal head (alias h).
	runFrom = `rein_runs r LEFT JOIN LATERAL (` + headSQL("r.id") + `) h ON true`
	// newRunCols reads a run just inserted (no journal row yet).
	newRunCols = runColumns("")
)

// bumpSQL appends a row without frames to the journal of each run in the
// CTE u (lease, claim, decision: anything else that moves a version), at
// the time the parameter at names (the database's now() when NULL), and
// returns its version, seq and time, as head b. rein_journal's primary
// key makes a racing Commit or bump fail with a unique violation; bumping
// retries those.
func bumpSQL(at string) string {
	return `b AS (INSERT INTO rein_journal (run_id, version, seq, at)
			SELECT u.id, coalesce(h.version, 0) + 1, coalesce(h.seq, 0), coalesce(` + at + `::timestamptz, now())
			FROM u LEFT JOIN LATERAL (` + headSQL("u.id") + `) h ON true
			RETURNING run_id, version, seq, at)`
}

// scanRun reads one row of runCols.
func scanRun(row scanner) (*store.Run, error) {
	var (
		r                     store.Run
		flowText, input, meta []byte
		errJSON, usage        []byte
		status                string
		leaseExpires, settled *time.Time
		retentionNS, ord      int64
	)
	err := row.Scan(&r.ID, &r.Flow, &r.FlowPath, &r.FlowHash, &flowText, &input, &meta, &status,
		&r.IdempotencyKey, &r.Session, &r.Tenant, &errJSON, &usage, &r.Version, &r.LastSeq,
		&r.LeaseOwner, &leaseExpires, &r.CreatedAt, &r.UpdatedAt, &settled, &retentionNS, &ord)
	if err != nil {
		return nil, err
	}
	r.FlowText, r.Input, r.Meta, r.Error, r.Usage = flowText, input, meta, errJSON, usage
	r.Status = trace.RunStatus(status)
	if leaseExpires != nil && r.LeaseOwner != "" {
		r.LeaseExpires = *leaseExpires
	}
	if settled != nil {
		r.SettledAt = *settled
	}
	r.Retention = time.Duration(retentionNS)
	return &r, nil
}

// CreateRun inserts a run. With p.IdempotencyKey set and a run holding
// that key, it returns that run and created=false. A run ID already taken
// is store.ErrConflict. Owner, when set, leases the new run to Owner for
// LeaseTTL (DefaultLeaseTTL when ≤ 0) from p.Now; the run starts at
// version 0, created at p.Now (the database's clock when zero; a leased
// run with a zero p.Now is store.ErrNoTime).
func (s *Store) CreateRun(ctx context.Context, p *store.CreateRunParams) (*store.Run, bool, error) {
	if p.ID == "" {
		return nil, false, errors.New("postgres store: create run: empty ID")
	}
	if p.Owner != "" && p.Now.IsZero() {
		return nil, false, fmt.Errorf("postgres store: create run %s leased to %s: %w", p.ID, p.Owner, store.ErrNoTime)
	}
	status := p.Status
	if status == "" {
		status = trace.RunPending
	}
	var owner, key any
	var ttl time.Duration
	if p.Owner != "" {
		owner, ttl = p.Owner, leaseTTL(p.LeaseTTL)
	}
	if p.IdempotencyKey != "" {
		key = p.IdempotencyKey
	}
	var r *store.Run
	err := again(ctx, false, func() (err error) {
		r, err = scanRun(s.db.QueryRowContext(ctx, insertRunSQL+`
		ON CONFLICT (idempotency_key) DO NOTHING
		RETURNING `+newRunCols, insertRunArgs(p, status, key, owner, ttl, timeOrNil(p.Now))...))
		return err
	})
	if err == nil {
		s.dropped.Forget(p.ID)
		return r, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, mapErr("create run "+p.ID, err)
	}
	// The key is taken: return the run that holds it.
	err = again(ctx, true, func() (err error) {
		r, err = scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM `+runFrom+` WHERE r.idempotency_key = $1`, p.IdempotencyKey))
		return err
	})
	if err != nil {
		return nil, false, mapErr("create run "+p.ID+": read the run holding idempotency key "+p.IdempotencyKey, err)
	}
	return r, false, nil
}

// insertRunSQL inserts a run row from insertRunArgs: created at $14 (the
// database's now() when NULL, never with an owner).
const insertRunSQL = `
		INSERT INTO rein_runs AS r (id, flow, flow_path, flow_hash, flow_text, input, meta, status,
			idempotency_key, session, retention_ns, lease_owner, lease_expires, settled_at, created_at, updated_at, tenant)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
			CASE WHEN $12::text IS NULL THEN NULL ELSE $14::timestamptz + $13 * interval '1 microsecond' END,
			CASE WHEN $8 IN ('succeeded', 'failed', 'cancelled') THEN coalesce($14::timestamptz, now()) END,
			coalesce($14::timestamptz, now()), coalesce($14::timestamptz, now()), $15)`

// insertRunArgs are the arguments of insertRunSQL: owner, key and now are
// nil for none.
func insertRunArgs(p *store.CreateRunParams, status trace.RunStatus, key, owner any, ttl time.Duration, now any) []any {
	return []any{p.ID, p.Flow, p.FlowPath, p.FlowHash, bytesOrNil(p.FlowText), bytesOrNil(p.Input), bytesOrNil(p.Meta),
		string(status), key, p.Session, int64(p.Retention), owner, ttl.Microseconds(), now, p.Tenant}
}

// GetRun returns one run, or store.ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, error) {
	var r *store.Run
	err := again(ctx, true, func() (err error) {
		r, err = scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM `+runFrom+` WHERE r.id = $1`, id))
		return err
	})
	if err != nil {
		return nil, mapErr("get run "+id, err)
	}
	return r, nil
}

// ListRuns returns runs, newest first, filtered by p (nil lists all);
// p.Limit ≤ 0 means 100.
func (s *Store) ListRuns(ctx context.Context, p *store.ListRunsParams) ([]*store.Run, error) {
	var q store.ListRunsParams
	if p != nil {
		q = *p
	}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q2, args := listRunsSQL(&q)
	var out []*store.Run
	err := again(ctx, true, func() error {
		rows, err := s.db.QueryContext(ctx, q2, args...)
		if err != nil {
			return err
		}
		out, err = collectRuns(rows)
		return err
	})
	if err != nil {
		return nil, mapErr("list runs", err)
	}
	return out, nil
}

// listRunsSQL is the query of ListRuns(p) and its arguments: only the
// filters p sets, so that the plan of each combination (prepared once, then
// generic) uses the index that answers it: an ID prefix is a byte-wise
// range on id (rein_runs_id_prefix, text_pattern_ops, whatever the
// database's collation), a session rein_runs_session, a status or flow
// their (…, ord) indexes. p.Limit must be set.
func listRunsSQL(p *store.ListRunsParams) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if p.Status != "" {
		where = append(where, "r.status = "+arg(string(p.Status)))
	}
	if p.Flow != "" {
		where = append(where, "r.flow = "+arg(p.Flow))
	}
	if p.IDPrefix != "" {
		at := arg(p.IDPrefix)
		where = append(where, "starts_with(r.id, "+at+")", "r.id ~>=~ "+at)
		// the range's end, when it is text (incrementing a byte of a
		// multi-byte character may not be).
		if end, ok := prefix.End(p.IDPrefix); ok && utf8.ValidString(end) {
			where = append(where, "r.id ~<~ "+arg(end))
		}
	}
	if p.Session != "" {
		// rein_runs_session holds the runs with a session only: the
		// second term tells the planner that the partial index answers.
		where = append(where, "r.session = "+arg(p.Session), "r.session <> ''")
	}
	if p.Tenant != "" {
		// rein_runs_tenant holds the runs with a tenant only: the second
		// term tells the planner that the partial index answers.
		where = append(where, "r.tenant = "+arg(p.Tenant), "r.tenant <> ''")
	}
	if p.Before != "" {
		where = append(where, "r.ord < coalesce((SELECT b.ord FROM rein_runs b WHERE b.id = "+arg(p.Before)+"), 0)")
	}
	q := `SELECT ` + runCols + ` FROM ` + runFrom
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY r.ord DESC LIMIT " + arg(p.Limit), args
}

// collectRuns reads and closes rows of runCols.
func collectRuns(rows *sql.Rows) ([]*store.Run, error) {
	defer rows.Close()
	var out []*store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// AcquireLease makes p.Owner the run's only writer for p.TTL
// (DefaultLeaseTTL when ≤ 0) from p.Now, the caller's clock. It succeeds
// when the run has no lease, one expired at p.Now, or one already held by
// p.Owner; another owner's unexpired lease is store.ErrConflict, a missing
// run store.ErrNotFound, a zero p.Now store.ErrNoTime. It bumps and
// returns the run's version.
func (s *Store) AcquireLease(ctx context.Context, p *store.LeaseParams) (*store.Run, error) {
	what := "acquire lease on run " + p.RunID
	if p.Owner == "" {
		return nil, errors.New("postgres store: " + what + ": empty owner")
	}
	if p.Now.IsZero() {
		return nil, fmt.Errorf("postgres store: %s: %w", what, store.ErrNoTime)
	}
	var r *store.Run
	err := bumping(ctx, true, func() (err error) {
		r, err = scanRun(s.db.QueryRowContext(ctx, `
		WITH u AS (
			UPDATE rein_runs r SET lease_owner = $2, lease_expires = $5::timestamptz + $3 * interval '1 microsecond',
				updated_at = $5
			WHERE r.id = $1 AND (r.lease_owner IS NULL OR r.lease_owner = $2 OR r.lease_expires <= $5
				OR ($4 <> '' AND r.lease_owner = $4))
			RETURNING r.*),
		`+bumpSQL("$5")+`
		SELECT `+runColumns("b")+` FROM u r JOIN b ON b.run_id = r.id`, p.RunID, p.Owner, leaseTTL(p.TTL).Microseconds(), p.TakeFrom, p.Now))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.leaseMiss(ctx, what, p.RunID)
	}
	if err != nil {
		return nil, mapErr(what, err)
	}
	s.dropped.Forget(p.RunID)
	return r, nil
}

// RenewLease extends p.Owner's lease to p.TTL (DefaultLeaseTTL when ≤ 0)
// from p.Now. It fails with store.ErrConflict when the lease was lost: the
// run has no lease, another owner's, or p.Owner's own lease expired by
// p.Now (an expired lease may already be in another claimer's hands); a
// zero p.Now is store.ErrNoTime. It does not change the run's version.
func (s *Store) RenewLease(ctx context.Context, p *store.LeaseParams) error {
	what := "renew lease on run " + p.RunID
	if p.Now.IsZero() {
		return fmt.Errorf("postgres store: %s: %w", what, store.ErrNoTime)
	}
	var tag sql.Result
	err := again(ctx, true, func() (err error) {
		tag, err = s.db.ExecContext(ctx, `
		UPDATE rein_runs r SET lease_expires = $4::timestamptz + $3 * interval '1 microsecond'
		WHERE r.id = $1 AND r.lease_owner = $2 AND r.lease_expires > $4`,
			p.RunID, p.Owner, leaseTTL(p.TTL).Microseconds(), p.Now)
		return err
	})
	if err != nil {
		return mapErr(what, err)
	}
	if n, err := tag.RowsAffected(); err != nil {
		return mapErr(what, err)
	} else if n == 0 {
		return s.leaseMiss(ctx, what, p.RunID)
	}
	return nil
}

// ReleaseLease drops owner's lease on the run. Releasing a lease that was
// lost, or of a run that does not exist, is not an error. It does not
// change the run's version. A final Commit (the run succeeded, failed or
// was cancelled) already dropped the lease, and releasing it after one
// through the same Store costs no round trip.
func (s *Store) ReleaseLease(ctx context.Context, runID, owner string) error {
	if s.dropped.Take(runID) {
		return nil
	}
	err := again(ctx, true, func() error {
		_, err := s.db.ExecContext(ctx, `UPDATE rein_runs r SET lease_owner = NULL, lease_expires = NULL
		WHERE r.id = $1 AND r.lease_owner = $2`, runID, owner)
		return err
	})
	return mapErr("release lease on run "+runID, err)
}

// leaseMiss explains a lease statement that matched no row.
func (s *Store) leaseMiss(ctx context.Context, what, runID string) error {
	var owner string
	var expires *time.Time
	err := again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `SELECT coalesce(lease_owner, ''), lease_expires FROM rein_runs WHERE id = $1`, runID).Scan(&owner, &expires)
	})
	if err != nil {
		return mapErr(what, err)
	}
	if owner == "" || expires == nil {
		return fmt.Errorf("%s: the run holds no lease: %w", what, store.ErrConflict)
	}
	return fmt.Errorf("%s: leased to %s until %s: %w", what, owner, expires.UTC().Format(time.RFC3339Nano), store.ErrConflict)
}

// ClaimRuns leases up to p.Limit (≤ 0 means 1) ready runs — status pending
// or running with no lease unexpired at p.Now — to p.Owner for p.TTL
// (DefaultLeaseTTL when ≤ 0) from p.Now, oldest first. Rows other
// claimers are locking are skipped (FOR UPDATE SKIP LOCKED), so concurrent
// claimers in any number of processes never get the same run. Each claim
// bumps the run's version. A zero p.Now is store.ErrNoTime.
func (s *Store) ClaimRuns(ctx context.Context, p *store.ClaimParams) ([]*store.Run, error) {
	if p.Owner == "" {
		return nil, errors.New("postgres store: claim runs: empty owner")
	}
	if p.Now.IsZero() {
		return nil, fmt.Errorf("postgres store: claim runs for %s: %w", p.Owner, store.ErrNoTime)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 1
	}
	var out []*store.Run
	err := bumping(ctx, false, func() error {
		rows, err := s.db.QueryContext(ctx, `
		WITH c AS (
			SELECT id FROM rein_runs
			WHERE status IN ('pending', 'running') AND (lease_owner IS NULL OR lease_expires <= $4)
			ORDER BY ord LIMIT $3
			FOR UPDATE SKIP LOCKED),
		u AS (
			UPDATE rein_runs r SET lease_owner = $1, lease_expires = $4::timestamptz + $2 * interval '1 microsecond',
				updated_at = $4
			FROM c WHERE r.id = c.id
			RETURNING r.*),
		`+bumpSQL("$4")+`
		SELECT `+runColumns("b")+` FROM u r JOIN b ON b.run_id = r.id ORDER BY r.ord`, p.Owner, leaseTTL(p.TTL).Microseconds(), limit, p.Now)
		if err != nil {
			return err
		}
		out, err = collectRuns(rows)
		return err
	})
	if err != nil {
		return nil, mapErr("claim runs for "+p.Owner, err)
	}
	for _, r := range out {
		s.dropped.Forget(r.ID)
	}
	return out, nil
}

func leaseTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultLeaseTTL
	}
	return d
}

// bumping runs fn, one statement that moves runs' versions (bumpSQL), as
// again does, and again when a racing writer took the version it was
// appending: the statement applied nothing then, and a fresh one reads
// the new head.
func bumping(ctx context.Context, idempotent bool, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := again(ctx, idempotent, fn)
		if attempt >= 20 || !isJournalTaken(err) || ctx.Err() != nil {
			return err
		}
	}
}

// isJournalTaken reports whether err is a unique violation of
// rein_journal's primary key: another writer appended the version first.
func isJournalTaken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.TableName == "rein_journal"
}

// scanner is a row to scan: a *sql.Row or the current row of *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// bytesOrNil passes nil (SQL NULL) for an empty payload.
func bytesOrNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
