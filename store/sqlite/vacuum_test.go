package sqlite_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/trace"
)

// fillRuns writes n finished runs of about size bytes each (one large,
// incompressible step output: a blob).
func fillRuns(t *testing.T, s *sqlite.Store, n, size int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprintf("run-%d", i)
		raw := make([]byte, size*3/4)
		_, _ = rand.NewChaCha8([32]byte{byte(i)}).Read(raw) // incompressible
		out := []byte(`"` + base64.StdEncoding.EncodeToString(raw) + `"`)
		tx := &store.Transition{RunID: id, Create: &store.CreateRunParams{ID: id, Flow: "f", Status: trace.RunRunning, FlowText: []byte("name: f")},
			Steps: []*store.Step{{RunID: id, StepID: "a", Type: "tool", Status: trace.StepSucceeded, Attempt: 1, Output: out}},
			Run:   &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now().Add(-time.Hour)}}
		if err := s.Commit(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Pruning with Vacuum gives the file's space back: after pruning every
// run of a 20 MB database, the file is a small fraction of that; without
// Vacuum, it is not.
func TestPruneVacuumShrinksTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fillRuns(t, s, 40, 512<<10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	full := fileSize(t, path)
	if full < 20<<20 {
		t.Fatalf("the database holds %d bytes, want 20 MB to prune", full)
	}
	s, err = sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Prune(context.Background(), &store.PruneParams{Before: time.Now(), Vacuum: true, Now: time.Now()})
	if err != nil || res.Runs != 40 || res.Reclaimed < full*9/10 {
		t.Fatalf("prune: %+v, %v (the file held %d bytes)", res, err, full)
	}
	// The store is still open, and the file is already small.
	if after := fileSize(t, path); after > full/20 {
		t.Errorf("after pruning every run the file holds %d bytes (of %d before)", after, full)
	}
	fillRuns(t, s, 1, 1<<10) // and the store still works
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, path); after > full/20 {
		t.Errorf("after closing the file holds %d bytes (of %d before)", after, full)
	}
}
