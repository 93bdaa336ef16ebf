package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Prune deletes the finished runs (succeeded, failed, cancelled; only
// p.Status when set) settled before p.Before and, when they set one, longer
// ago than their own Retention (at p.Now) — with their events, steps and
// approvals — and the blobs no remaining run refers to. With p.Vacuum it
// then gives the freed space back to the file system (vacuum). A zero
// p.Now is store.ErrNoTime.
func (s *Store) Prune(ctx context.Context, p *store.PruneParams) (_ *store.PruneResult, err error) {
	defer s.seen(&err)
	if p.Now.IsZero() {
		return nil, fmt.Errorf("sqlite: prune: %w", store.ErrNoTime)
	}
	st := [3]any{string(trace.RunSucceeded), string(trace.RunFailed), string(trace.RunCancelled)}
	if p.Status != "" {
		if r := (store.Run{Status: p.Status}); !r.Finished() {
			return nil, fmt.Errorf("sqlite: prune: status %q is not final (want succeeded, failed or cancelled)", p.Status)
		}
		st = [3]any{string(p.Status), string(p.Status), string(p.Status)}
	}
	where, args := pruneWhere, []any{st[0], st[1], st[2], p.Before.UnixNano(), p.Now.UnixNano()}
	if p.Session != "" {
		where, args = pruneSessionWhere, []any{st[0], st[1], st[2], p.Session}
	}
	var res store.PruneResult
	if p.DryRun {
		ids, err := queryAll(ctx, s.reads, "prune (dry run)", func(row scanner) (id string, err error) {
			return id, row.Scan(&id)
		}, `SELECT id FROM runs WHERE `+where+` ORDER BY rk`, args...)
		if err != nil {
			return nil, err
		}
		return &store.PruneResult{Runs: len(ids), RunIDs: ids}, nil
	}
	err = s.w.write(ctx, func(x *wtx) error {
		res = store.PruneResult{}
		// it deletes runs and their journal: the rows queued go in first.
		if err := x.flush(); err != nil {
			return err
		}
		return x.pruneRuns(where, args, &res)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: prune: %w", err)
	}
	if p.Vacuum {
		if res.Reclaimed, err = s.vacuum(ctx); err != nil {
			return &res, fmt.Errorf("sqlite: prune: the runs were deleted, but VACUUM failed (run prune --vacuum again): %w", err)
		}
	}
	return &res, nil
}

// pruneWhere selects the runs Prune deletes; its parameters are three
// statuses, the cutoff and now (Unix ns).
const pruneWhere = `status IN (?, ?, ?) AND settled_at IS NOT NULL AND settled_at < ? AND settled_at + retention < ?`

// pruneSessionWhere selects the runs Prune deletes with a session: three
// statuses and the session (runs_session answers).
const pruneSessionWhere = `status IN (?, ?, ?) AND session = ? AND session <> ''`

// prune deletes the runs Prune would (statuses st, settled before before,
// past their retention at now), counting them in res. The writer forgets
// every run key, head and flow text it knew, at once for the rest of the
// batch and for good once it commits (x.reset).
func (x *wtx) prune(st [3]any, before, now time.Time, res *store.PruneResult) error {
	return x.pruneRuns(pruneWhere, []any{st[0], st[1], st[2], before.UnixNano(), now.UnixNano()}, res)
}

// pruneRuns deletes the runs where selects (pruneWhere,
// pruneSessionWhere, with args), as prune does.
func (x *wtx) pruneRuns(where string, args []any, res *store.PruneResult) error {
	x.reset = true
	rows, err := x.query(`SELECT rk FROM runs WHERE `+where, args...)
	if err != nil {
		return err
	}
	var rks []int64
	for rows.Next() {
		var rk int64
		if err := rows.Scan(&rk); err != nil {
			rows.Close()
			return err
		}
		rks = append(rks, rk)
	}
	err = rows.Err()
	rows.Close()
	if err != nil || len(rks) == 0 {
		return err
	}
	shas, flows := map[string]bool{}, map[string]bool{}
	for _, rk := range rks {
		if err := x.deleteRun(rk, shas, flows); err != nil {
			return err
		}
	}
	res.Runs = len(rks)
	for sha := range shas {
		r, err := x.exec(`DELETE FROM blobs WHERE sha256 = ?1 AND NOT EXISTS (SELECT 1 FROM blob_refs WHERE sha256 = ?1)`, sha)
		if err != nil {
			return err
		}
		res.Blobs += int(r.rows)
	}
	// flow texts no run pins any more (runs has no index on flow_sha:
	// this scans it once per flow version, at prune time only).
	for sha := range flows {
		if _, err := x.exec(`DELETE FROM flows WHERE sha256 = ?1 AND NOT EXISTS (SELECT 1 FROM runs WHERE flow_sha = ?1)`, sha); err != nil {
			return err
		}
	}
	// A deleted last row frees its id (rk) for the next insert: keep
	// that id above the mark, in the tail readers scan.
	if _, err := x.exec(`UPDATE journal_mark SET indexed = min(indexed, (SELECT coalesce(max(id), 0) FROM journal)),
		runs = min(runs, (SELECT coalesce(max(rk), 0) FROM runs)) WHERE one = 1`); err != nil {
		return err
	}
	x.mark = -1 // read again when needed (x.reset: not the writer's either)
	return nil
}

// deleteRun deletes a run with its journal, approvals and blob references,
// adding the blobs it referred to to shas and its flow text to flows.
func (x *wtx) deleteRun(rk int64, shas, flows map[string]bool) error {
	var flowSHA sql.NullString
	if err := x.queryRow(`SELECT flow_sha FROM runs WHERE rk = ?1`, rk).Scan(&flowSHA); err != nil {
		return err
	}
	if flowSHA.Valid {
		flows[flowSHA.String] = true
	}
	rows, err := x.query(`DELETE FROM blob_refs WHERE rk = ? RETURNING sha256`, rk)
	if err != nil {
		return err
	}
	for rows.Next() {
		var sha string
		if err := rows.Scan(&sha); err != nil {
			rows.Close()
			return err
		}
		shas[sha] = true
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM journal WHERE id IN (SELECT j.id FROM journal_index x JOIN journal j ON j.id BETWEEN x.id AND x.last WHERE x.rk = ?1)`,
		`DELETE FROM journal WHERE id > (SELECT indexed FROM journal_mark WHERE one = 1) AND rk = ?1`,
		`DELETE FROM journal_index WHERE rk = ?1`,
		`DELETE FROM runs_live WHERE rk = ?1`,
		`DELETE FROM run_flows WHERE flow = (SELECT flow FROM runs WHERE rk = ?1) AND rk = ?1`,
		`DELETE FROM runs WHERE rk = ?1`,
	} {
		if _, err := x.exec(q, rk); err != nil {
			return err
		}
	}
	return nil
}
