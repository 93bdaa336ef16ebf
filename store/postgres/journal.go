package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Events returns the run's events with Seq > after, in order; limit ≤ 0
// means all. A run that does not exist is store.ErrNotFound. A record that
// does not decode, or that a newer rein wrote (version above
// store.JournalVersion), is an error naming the run and sequence.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]*trace.Event, error) {
	what := "read events of run " + runID
	var lim any
	if limit > 0 {
		lim = limit
	}
	type record struct {
		seq     int64
		version int
		data    []byte
	}
	var recs []record
	err := again(ctx, true, func() error {
		recs = recs[:0]
		rows, err := s.pool.Query(ctx, `SELECT seq, version, data FROM rein_events
		WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, runID, after, lim)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r record
			if err := rows.Scan(&r.seq, &r.version, &r.data); err != nil {
				return err
			}
			recs = append(recs, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	out := make([]*trace.Event, 0, len(recs))
	for _, r := range recs {
		e, err := decodeEvent(runID, r.seq, r.version, r.data)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		if err := s.runExists(ctx, what, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeEvent reads one journal record. The row's seq is authoritative.
func decodeEvent(runID string, seq int64, version int, data []byte) (*trace.Event, error) {
	switch {
	case version > store.JournalVersion:
		return nil, fmt.Errorf("postgres store: run %s seq %d: journal record version %d is from a newer rein (this binary reads up to %d): upgrade rein",
			runID, seq, version, store.JournalVersion)
	case version < 1:
		return nil, fmt.Errorf("postgres store: run %s seq %d: journal record has invalid version %d", runID, seq, version)
	}
	var e trace.Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("postgres store: run %s seq %d: journal record does not decode (%d bytes): %w", runID, seq, len(data), err)
	}
	e.Seq = seq
	if e.RunID == "" {
		e.RunID = runID
	}
	return &e, nil
}

// Steps returns the run's step projections in first-started order, with
// outputs and inputs stored as blobs read back (a step's blob references
// are foreign keys, so Prune cannot take a blob from under a step). A run
// that does not exist is store.ErrNotFound.
func (s *Store) Steps(ctx context.Context, runID string) ([]*store.Step, error) {
	what := "read steps of run " + runID
	var out []*store.Step
	err := again(ctx, true, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, `
		SELECT s.step_id, s.type, s.status, s.attempt, coalesce(s.output, bo.data), s.output_sha,
			coalesce(s.input, bi.data), s.idempotent, s.error, s.started_at, s.settled_at
		FROM rein_steps s
		LEFT JOIN rein_blobs bo ON bo.sha256 = s.output_blob
		LEFT JOIN rein_blobs bi ON bi.sha256 = s.input_blob
		WHERE s.run_id = $1 ORDER BY s.ord`, runID)
		if err != nil {
			return err
		}
		out, err = scanSteps(runID, rows)
		return err
	})
	if err != nil {
		return nil, mapErr(what, err)
	}
	if len(out) == 0 {
		if err := s.runExists(ctx, what, runID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanSteps reads and closes the rows of Steps' query.
func scanSteps(runID string, rows pgx.Rows) ([]*store.Step, error) {
	defer rows.Close()
	var out []*store.Step
	for rows.Next() {
		st := &store.Step{RunID: runID}
		var status string
		var output, input, errJSON []byte
		var started, settled *time.Time
		if err := rows.Scan(&st.StepID, &st.Type, &status, &st.Attempt, &output, &st.OutputSHA,
			&input, &st.Idempotent, &errJSON, &started, &settled); err != nil {
			return nil, err
		}
		st.Status = trace.StepStatus(status)
		st.Output, st.Input, st.Error = output, input, errJSON
		if started != nil {
			st.StartedAt = *started
		}
		if settled != nil {
			st.SettledAt = *settled
		}
		out = append(out, st)
	}
	return out, rows.Err()
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
