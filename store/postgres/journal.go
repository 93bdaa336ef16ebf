package postgres

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/records"
	"github.com/reinhq/rein/trace"
)

// Events returns the run's events with Seq > after, in order; limit ≤ 0
// means all. A run that does not exist is store.ErrNotFound. A record that
// does not decode is store.ErrDamaged, and one that a newer rein wrote a
// *journal.VersionError, each naming the run and sequence.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]*trace.Event, error) {
	what := "read events of run " + runID
	var rowLimit any // NULL: all
	if limit > 0 {
		rowLimit = limit
	}
	var rows []records.Row
	err := again(ctx, true, func() error {
		rows = rows[:0]
		q, err := s.db.QueryContext(ctx, `SELECT seq, version, kind, coalesce(step_id, ''), coalesce(status, ''),
			coalesce(attempt, 0), at, payload FROM rein_records
			WHERE run_id = $1 AND kind IS NOT NULL AND seq > $2 ORDER BY id LIMIT $3`, runID, after, rowLimit)
		if err != nil {
			return err
		}
		defer q.Close()
		for q.Next() {
			var r records.Row
			var at *int64
			if err := q.Scan(&r.Seq, &r.Version, &r.Kind, &r.StepID, &r.Status, &r.Attempt, &at, &r.Payload); err != nil {
				return err
			}
			if at != nil {
				r.At, r.AtValid = *at, true
			}
			rows = append(rows, r)
		}
		return q.Err()
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	out := make([]*trace.Event, len(rows))
	for i := range rows {
		if out[i], err = records.ReadEvent(runID, &rows[i]); err != nil {
			return nil, records.Damaged("postgres store", err)
		}
	}
	if len(out) == 0 {
		if err := s.runExists(ctx, what, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Steps returns the run's step projections in first-started order: the
// journal's step records folded, the last record of a step winning (only
// that one is decoded), with outputs and inputs stored as blobs read
// back. A run that does not exist is store.ErrNotFound; a record that does
// not decode is store.ErrDamaged.
func (s *Store) Steps(ctx context.Context, runID string) ([]*store.Step, error) {
	what := "read steps of run " + runID
	var fold records.LastSteps
	err := again(ctx, true, func() error {
		fold = records.LastSteps{}
		q, err := s.db.QueryContext(ctx, `SELECT step_id, version, record, output, input, error FROM rein_records
			WHERE run_id = $1 AND record IS NOT NULL ORDER BY id`, runID)
		if err != nil {
			return err
		}
		defer q.Close()
		for q.Next() {
			var sf journal.StoredStep
			var version int64
			var stepID *string
			if err := q.Scan(&stepID, &version, &sf.Rec, &sf.Output, &sf.Input, &sf.Error); err != nil {
				return err
			}
			if stepID != nil {
				sf.StepID = *stepID
			}
			sf.Version = uint64(max(version, 0))
			fold.Add(sf)
		}
		return q.Err()
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	last := fold.List()
	if len(last) == 0 {
		return nil, s.runExists(ctx, what, runID)
	}
	out := make([]*store.Step, len(last))
	recs := make([]journal.StepRecord, len(last))
	var blobs []string
	for i := range last {
		st, r, err := journal.DecodeStep(runID, &last[i])
		if err != nil {
			return nil, records.Damaged("postgres store", err)
		}
		out[i], recs[i] = st, r
		if r.OutputBlob {
			blobs = append(blobs, r.OutputSHA)
		}
		if r.InputBlob != "" {
			blobs = append(blobs, r.InputBlob)
		}
	}
	if len(blobs) == 0 {
		return out, nil
	}
	// Payloads stored as blobs (large ones only), read back in one query.
	data, err := s.blobs(ctx, "read the blobs of run "+runID+"'s steps", blobs)
	if err != nil {
		return nil, err
	}
	blob := func(st *store.Step, sha string) ([]byte, error) {
		b, ok := data[sha]
		if !ok {
			return nil, fmt.Errorf("%w: postgres store: run %s step %s: payload blob %s is missing", store.ErrDamaged, runID, st.StepID, sha)
		}
		return b, nil
	}
	for i, st := range out {
		if recs[i].OutputBlob {
			if st.Output, err = blob(st, recs[i].OutputSHA); err != nil {
				return nil, err
			}
		}
		if recs[i].InputBlob != "" {
			if st.Input, err = blob(st, recs[i].InputBlob); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// blobs reads the named blobs.
func (s *Store) blobs(ctx context.Context, what string, names []string) (map[string][]byte, error) {
	data := make(map[string][]byte, len(names))
	err := again(ctx, true, func() error {
		clear(data)
		rows, err := s.db.QueryContext(ctx, `SELECT sha256, data FROM rein_blobs WHERE sha256 = ANY($1)`, names)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var sha string
			var b []byte
			if err := rows.Scan(&sha, &b); err != nil {
				return err
			}
			data[sha] = b
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	return data, nil
}

// Blob returns the blob named by its hex sha256, or store.ErrNotFound.
func (s *Store) Blob(ctx context.Context, sha256 string) ([]byte, error) {
	var data []byte
	err := again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `SELECT data FROM rein_blobs WHERE sha256 = $1`, sha256).Scan(&data)
	})
	if err != nil {
		return nil, mapErr("read blob "+sha256, err)
	}
	return data, nil
}

// runExists is nil when the run exists, store.ErrNotFound when not.
func (s *Store) runExists(ctx context.Context, what, runID string) error {
	var one int
	return mapErr(what, again(ctx, true, func() error {
		return s.db.QueryRowContext(ctx, `SELECT 1 FROM rein_runs WHERE id = $1`, runID).Scan(&one)
	}))
}
