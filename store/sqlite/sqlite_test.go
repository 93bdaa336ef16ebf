package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/frames"
	"github.com/reinhq/rein/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// corruptEvent rewrites the frame of event seq in the journal row holding
// it: its record version and data. A packed row is packed again.
func corruptEvent(t *testing.T, s store.Store, runID string, seq int64, version int, data []byte) {
	t.Helper()
	st := s.(*Store)
	// Through the writer, so the read pool sees it committed.
	err := st.w.write(t.Context(), func(x *wtx) error {
		rows, err := x.query(`SELECT id, events, steps FROM journal WHERE rk = (SELECT rk FROM runs WHERE id = ?)`, runID)
		if err != nil {
			return err
		}
		var (
			id           int64
			found, steps []byte
			packed       bool
		)
		for rows.Next() {
			var (
				rid           int64
				row, rowSteps []byte
			)
			if err := rows.Scan(&rid, &row, &rowSteps); err != nil {
				rows.Close()
				return err
			}
			wasPacked := isPacked(row)
			if wasPacked {
				if row, rowSteps, _, err = unpack(runID, row, nil); err != nil {
					rows.Close()
					return err
				}
			}
			out, hit, err := frames.ReplaceEvent(row, seq, version, data)
			if err != nil {
				rows.Close()
				return err
			}
			if hit {
				id, found, steps, packed = rid, out, rowSteps, wasPacked
			}
		}
		rows.Close()
		if found == nil {
			t.Errorf("corrupt %s seq %d: no journal row holds it", runID, seq)
			return nil
		}
		if packed {
			if p, _, _, ok := pack(nil, nil, found, steps); ok {
				found, steps = p, nil
			}
		}
		_, err = x.exec(`UPDATE journal SET events = ?, steps = ? WHERE id = ?`, found, steps, id)
		return err
	})
	if err != nil {
		t.Fatalf("corrupt %s seq %d: %v", runID, seq, err)
	}
}

// corruptStep rewrites the record of step stepID, with version, in every
// journal row holding it. A packed row is packed again.
func corruptStep(t *testing.T, s store.Store, runID, stepID string, version int, rec []byte) {
	t.Helper()
	st := s.(*Store)
	hits := 0
	err := st.w.write(t.Context(), func(x *wtx) error {
		rows, err := x.query(`SELECT id, events, steps FROM journal WHERE rk = (SELECT rk FROM runs WHERE id = ?)`, runID)
		if err != nil {
			return err
		}
		type change struct {
			id            int64
			events, steps []byte
		}
		var changes []change
		for rows.Next() {
			var (
				id            int64
				events, steps []byte
			)
			if err := rows.Scan(&id, &events, &steps); err != nil {
				rows.Close()
				return err
			}
			packed := isPacked(events)
			if packed {
				if events, steps, _, err = unpack(runID, events, nil); err != nil {
					rows.Close()
					return err
				}
			}
			out, hit, err := frames.ReplaceStep(steps, stepID, version, rec)
			if err != nil {
				rows.Close()
				return err
			}
			if !hit {
				continue
			}
			hits++
			if packed {
				if p, _, _, ok := pack(nil, nil, events, out); ok {
					events, out = p, nil
				}
			}
			changes = append(changes, change{id, events, out})
		}
		rows.Close()
		for _, c := range changes {
			if _, err := x.exec(`UPDATE journal SET events = ?, steps = ? WHERE id = ?`, c.events, c.steps, c.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || hits == 0 {
		t.Fatalf("corrupt %s step %s: %d rows hold it: %v", runID, stepID, hits, err)
	}
}

func TestConformanceFile(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Store {
			s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "rein.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		CorruptEvent: corruptEvent,
		CorruptStep:  corruptStep,
	})
}

func TestConformanceMemory(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Store {
			s, err := Open(context.Background(), ":memory:", nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		CorruptEvent: corruptEvent,
		CorruptStep:  corruptStep,
	})
}
