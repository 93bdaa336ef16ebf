package postgres

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/frames"
	"github.com/reinhq/rein/trace"
)

// Events returns the run's events with Seq > after, in order; limit ≤ 0
// means all. A run that does not exist is store.ErrNotFound. A record that
// does not decode, or that a newer rein wrote, is an error naming the run
// and sequence.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]*trace.Event, error) {
	what := "read events of run " + runID
	var rowLimit any // a row with events holds its last seq: one event at least
	if limit > 0 {
		rowLimit = limit
	} else {
		limit = -1
	}
	rows, err := s.journalRows(ctx, what, `SELECT events FROM rein_journal
		WHERE run_id = $1 AND seq > $2 AND events IS NOT NULL ORDER BY version LIMIT $3`, runID, after, rowLimit)
	if err != nil {
		return nil, err
	}
	var out []*trace.Event
	for _, row := range rows {
		if out, err = frames.DecodeEvents(out, runID, row, after, limit); err != nil {
			return nil, fmt.Errorf("postgres store: %w", err)
		}
		if limit >= 0 && len(out) >= limit {
			break
		}
	}
	if len(out) == 0 {
		if err := s.runExists(ctx, what, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// journalRows returns the one bytea column of the rows q selects.
func (s *Store) journalRows(ctx context.Context, what, q string, args ...any) ([][]byte, error) {
	var out [][]byte
	err := again(ctx, true, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var row []byte
			if err := rows.Scan(&row); err != nil {
				return err
			}
			out = append(out, row)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	return out, nil
}

// Steps returns the run's step projections in first-started order: the
// journal's step records folded, the last record of a step winning (only
// that one is decoded), with outputs and inputs stored as blobs read
// back. A run that does not exist is store.ErrNotFound.
func (s *Store) Steps(ctx context.Context, runID string) ([]*store.Step, error) {
	what := "read steps of run " + runID
	rows, err := s.journalRows(ctx, what, `SELECT steps FROM rein_journal
		WHERE run_id = $1 AND steps IS NOT NULL ORDER BY version`, runID)
	if err != nil {
		return nil, err
	}
	var fold frames.Fold
	for _, row := range rows {
		if err := fold.Add(runID, row); err != nil {
			return nil, fmt.Errorf("postgres store: %w", err)
		}
	}
	last := fold.Last
	if len(last) == 0 {
		return nil, s.runExists(ctx, what, runID)
	}
	out := make([]*store.Step, len(last))
	recs := make([]journal.StepRecord, len(last))
	var blobs []string
	for i := range last {
		st, r, err := journal.DecodeStep(runID, &last[i])
		if err != nil {
			return nil, fmt.Errorf("postgres store: %w", err)
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
			return nil, fmt.Errorf("postgres store: run %s step %s: blob %s is missing: the database is damaged", runID, st.StepID, sha)
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
		rows, err := s.pool.Query(ctx, `SELECT sha256, data FROM rein_blobs WHERE sha256 = ANY($1)`, names)
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
		return s.pool.QueryRow(ctx, `SELECT data FROM rein_blobs WHERE sha256 = $1`, sha256).Scan(&data)
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
		return s.pool.QueryRow(ctx, `SELECT 1 FROM rein_runs WHERE id = $1`, runID).Scan(&one)
	}))
}
