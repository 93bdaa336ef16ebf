package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/store"
)

// The read pool's queries are prepared once per text, not on every call:
// GetRun, Steps and Approvals run through statements the store keeps, and
// a closed store fails them as a closed database, without a panic.
func TestReadsArePreparedOnce(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "r", Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	read := func() {
		t.Helper()
		if _, err := s.GetRun(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Approvals(ctx, &store.ListApprovalsParams{RunID: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	read()
	s.reads.mu.Lock()
	first, n := s.reads.m[getRunSQL], len(s.reads.m)
	s.reads.mu.Unlock()
	if first == nil || n != 2 {
		t.Fatalf("after GetRun and Approvals: %d prepared statements (GetRun's: %v), want 2", n, first)
	}
	read()
	s.reads.mu.Lock()
	again, n := s.reads.m[getRunSQL], len(s.reads.m)
	s.reads.mu.Unlock()
	if again != first || n != 2 {
		t.Fatalf("the same reads again prepared anew: %d statements", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRun(ctx, "r"); err == nil {
		t.Fatal("GetRun on a closed store: no error")
	}
}
