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

func corruptEvent(t *testing.T, s store.Store, runID string, seq int64, version int, data []byte) {
	t.Helper()
	st := s.(*Store)
	// Through the writer, so the read pool sees it committed.
	err := st.w.do(t.Context(), func(x *wtx) error {
		res, err := x.tx.ExecContext(x.ctx, `UPDATE events SET version = ?, data = ? WHERE rk = (SELECT rk FROM runs WHERE id = ?) AND seq = ?`, version, data, runID, seq)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Errorf("corrupt %s seq %d: %d rows", runID, seq, n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("corrupt %s seq %d: %v", runID, seq, err)
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
	})
}
