package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reinhq/rein/store"
)

// Under writes that never pause, the background checkpointer copies the
// WAL back and the writer's far autocheckpoint starts it over: the WAL
// stays within a few walRestartPages pages instead of growing with every
// commit.
func TestWALStaysBoundedUnderSustainedWrites(t *testing.T) {
	// not parallel: walRestartPages is read by every Open.
	defer func(n int) { walRestartPages = n }(walRestartPages)
	walRestartPages = 256
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const runs, each = 16, 1500
	ws := make([]*w5, runs)
	for i := range ws {
		id := fmt.Sprint("run-", i)
		r, _, err := s.CreateRun(context.Background(), &store.CreateRunParams{ID: id, Flow: "w5"})
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = newW5(id, r.Version)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		maxWAL int64
	)
	for _, w := range ws {
		wg.Go(func() {
			for range each {
				if err := s.Commit(context.Background(), w.next()); err != nil {
					t.Error(err)
					return
				}
				if fi, err := os.Stat(path + "-wal"); err == nil {
					mu.Lock()
					maxWAL = max(maxWAL, fi.Size())
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	ran := s.ckpt.runs.Load()
	// the bound leaves room for the writer's checkpoint finding the
	// background one busy for a while on a loaded machine (up to ~5× seen);
	// without the backstop (walRestartPages 0) these writes grow the WAL to
	// ~68 MB, five times the bound.
	bound := int64(12 * walRestartPages * 4120)
	if maxWAL > bound {
		t.Errorf("the WAL grew to %d bytes, want at most %d (about %d pages)", maxWAL, bound, 12*walRestartPages)
	}
	if ran == 0 {
		t.Error("the background checkpointer never ran")
	}
	t.Logf("max WAL %d bytes, %d background checkpoints", maxWAL, ran)
}
