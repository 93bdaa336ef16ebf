package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// When an op of a batch fails after writing, the writer rolls the batch
// back and applies each op alone: the others commit once, their
// afterCommit hooks run once (not once per try), and the failed op leaves
// neither its writes nor its hook behind.
func TestBatchRetryRunsEachAfterCommitOnce(t *testing.T) {
	t.Parallel()
	for _, path := range []string{":memory:", "file"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			if path == "file" {
				path = t.TempDir() + "/rein.db"
			}
			s := openFile(t, path, nil)
			boom := errors.New("boom")
			var tries, afterOK, afterFailed int
			insert := func(x *wtx, id string) error {
				_, err := insertRun(x, &store.CreateRunParams{ID: id, Flow: "f"}, trace.RunPending, "", time.Now())
				return err
			}
			ok := &op{ctx: context.Background(), fn: func(x *wtx) error {
				tries++
				x.afterCommit(func() { afterOK++ })
				return insert(x, "ok")
			}}
			failed := &op{ctx: context.Background(), fn: func(x *wtx) error {
				x.afterCommit(func() { afterFailed++ })
				if err := insert(x, "failed"); err != nil {
					return err
				}
				return boom // after writing: not clean
			}}
			s.w.mu.Lock()
			s.w.busy = true // lead, as a caller would
			s.w.mu.Unlock()
			s.w.run([]*op{ok, failed})
			s.w.mu.Lock()
			s.w.busy = false
			s.w.mu.Unlock()

			if ok.err != nil || !errors.Is(failed.err, boom) {
				t.Fatalf("errors: ok %v, failed %v; want nil and boom", ok.err, failed.err)
			}
			if tries != 2 || afterOK != 1 || afterFailed != 0 {
				t.Errorf("ok ran %d times, its hook %d; the failed op's hook ran %d times: want 2, 1, 0", tries, afterOK, afterFailed)
			}
			if _, err := s.GetRun(t.Context(), "ok"); err != nil {
				t.Error(err)
			}
			if _, err := s.GetRun(t.Context(), "failed"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the failed op's run: %v, want not found", err)
			}
		})
	}
}
