package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// corruptEvent overwrites the record version and JSON of event seq of a
// run in its journal row.
func corruptEvent(t *testing.T, s store.Store, runID string, seq int64, version int, data []byte) {
	t.Helper()
	// Through the writer, so the read pool sees it committed.
	n := corruptRows(t, s, `UPDATE journal SET version = ?, payload = ? WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND seq = ? AND kind IS NOT NULL`,
		version, string(data), runID, seq)
	if n != 1 {
		t.Fatalf("corrupt %s seq %d: %d rows hold it", runID, seq, n)
	}
}

// corruptStep overwrites the last record of step stepID of a run in its
// journal row: its record version and JSON.
func corruptStep(t *testing.T, s store.Store, runID, stepID string, version int, rec []byte) {
	t.Helper()
	n := corruptRows(t, s, `UPDATE journal SET version = ?, record = ?
		WHERE id = (SELECT max(id) FROM journal WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND step_id = ? AND record IS NOT NULL)`,
		version, string(rec), runID, stepID)
	if n != 1 {
		t.Fatalf("corrupt %s step %s: %d rows hold it", runID, stepID, n)
	}
}

// corruptRows runs an UPDATE through the writer (so the read pool sees it
// committed) and returns how many rows it changed.
func corruptRows(t *testing.T, s store.Store, q string, args ...any) int64 {
	t.Helper()
	var n int64
	err := s.(*Store).w.write(t.Context(), func(x *wtx) error {
		if err := x.flush(); err != nil {
			return err
		}
		r, err := x.exec(q, args...)
		n = r.rows
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
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
