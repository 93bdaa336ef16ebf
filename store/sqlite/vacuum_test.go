package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
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
		rand.NewChaCha8([32]byte{byte(i)}).Read(raw) // incompressible
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

// Pruning gives the file's space back: after pruning every run of a
// 20 MB database, the file is a small fraction of that.
func TestPruneShrinksTheFile(t *testing.T) {
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
	res, err := s.Prune(context.Background(), &store.PruneParams{Before: time.Now()})
	if err != nil || res.Runs != 40 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, path); after > full/20 {
		t.Errorf("after pruning every run the file holds %d bytes (of %d before)", after, full)
	}
}

// A database an older rein created (auto_vacuum NONE) is converted at its
// next Open, and then shrinks when pruned as well.
func TestOpenConvertsOlderDatabases(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fillRuns(t, s, 8, 512<<10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Turn it back into what an older rein left: auto_vacuum NONE.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"PRAGMA auto_vacuum = NONE", "VACUUM"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var mode int
	if err := db.QueryRow("PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 0 {
		t.Fatalf("auto_vacuum = %d, %v; want 0 to start from", mode, err)
	}
	db.Close()
	full := fileSize(t, path)

	s, err = sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(context.Background(), &store.PruneParams{Before: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, path); after > full/4 {
		t.Errorf("after pruning every run the file holds %d bytes (of %d before)", after, full)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, []byte("SQLite format 3\x00")) {
		t.Error("not a SQLite file any more")
	}
}
