package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

func openFile(t *testing.T, path string, opts *Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenCreatesParentDirectory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".rein", "deeper", "rein.db")
	s := openFile(t, path, nil)
	if s.Path() != path {
		t.Errorf("Path() = %q", s.Path())
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file not created: %v", err)
	}
	var mode string
	if err := s.rdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := s.rdb.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts *Options
		sync int // PRAGMA synchronous: 1 NORMAL, 2 FULL
		err  string
	}{
		{nil, 1, ""},
		{&Options{Synchronous: "full"}, 2, ""},
		{&Options{Synchronous: "NORMAL"}, 1, ""},
		{&Options{Synchronous: "OFF"}, 0, "want NORMAL or FULL"},
	} {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), tc.opts)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Open(%+v) err = %v, want %q", tc.opts, err, tc.err)
			}
			if s != nil {
				s.Close()
			}
			continue
		}
		if err != nil {
			t.Fatalf("Open(%+v): %v", tc.opts, err)
		}
		var got int
		if err := s.wdb.QueryRow("PRAGMA synchronous").Scan(&got); err != nil || got != tc.sync {
			t.Errorf("Open(%+v): synchronous = %d, %v; want %d", tc.opts, got, err, tc.sync)
		}
		s.Close()
	}
	if _, err := Open(t.Context(), "a?b.db", nil); err == nil {
		t.Error("Open of a path with '?' succeeded")
	}
}

func TestOpenNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s := openFile(t, path, nil)
	s.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = Open(t.Context(), path, nil)
	want := fmt.Sprintf("%s was written by a newer rein (schema %d, this binary knows %d): upgrade rein", path, SchemaVersion+1, SchemaVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open of a newer schema: err = %v, want %q", err, want)
	}
}

func TestOpenReopenKeepsData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s := openFile(t, path, nil)
	r, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "run", Flow: "f", FlowText: []byte("name: f\n")})
	if err != nil {
		t.Fatal(err)
	}
	tr := &store.Transition{RunID: "run", Version: r.Version, Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted, RunID: "run"}}}
	if err := s.Commit(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "late", Flow: "f"}); err == nil {
		t.Error("CreateRun after Close succeeded")
	}
	s2 := openFile(t, path, nil)
	g, err := s2.GetRun(t.Context(), "run")
	if err != nil || g.Version != tr.Version || g.LastSeq != 1 || string(g.FlowText) != "name: f\n" {
		t.Fatalf("after reopening: %+v, %v", g, err)
	}
}

func TestOpenCorruptFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("this is not a database\n"), 300), 0o644); err != nil {
		t.Fatal(err)
	}

	// A real database cut short.
	truncated := filepath.Join(dir, "truncated.db")
	s := openFile(t, truncated, nil)
	for i := range 200 {
		if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: fmt.Sprint(i), Flow: "f", FlowText: bytes.Repeat([]byte("x"), 2000)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	fi, err := os.Stat(truncated)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(truncated, fi.Size()/3); err != nil {
		t.Fatal(err)
	}

	// A header whose magic is right and whose pages are noise.
	noise := filepath.Join(dir, "noise.db")
	page := append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xA5}, 8192-16)...)
	if err := os.WriteFile(noise, page, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{garbage, truncated, noise} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Open(%s) panicked: %v", path, r)
				}
			}()
			s, err := Open(t.Context(), path, nil)
			if err == nil {
				// A truncated file may open; reading what was cut off must then fail cleanly.
				defer s.Close()
				_, err = s.ListRuns(t.Context(), &store.ListRunsParams{Limit: 1000})
				if err == nil {
					for i := range 200 {
						if _, err = s.GetRun(t.Context(), fmt.Sprint(i)); err != nil {
							break
						}
					}
				}
				if err == nil {
					t.Errorf("Open(%s) and reading it both succeeded", filepath.Base(path))
				}
				return
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Open(%s): error %q does not name the file", filepath.Base(path), err)
			}
			t.Logf("%s: %v", filepath.Base(path), err)
		}()
	}
}

// TestDiskFull fills the database (max_page_count stands in for a full
// disk): the commit fails, nothing of it is applied, and once there is
// room again the run continues.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "rein.db"), nil)
	ctx := t.Context()
	r, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "run", Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	tr := &store.Transition{RunID: "run", Version: r.Version, Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted, RunID: "run"}}}
	if err := s.Commit(ctx, tr); err != nil {
		t.Fatal(err)
	}
	setMax := func(n int) {
		t.Helper()
		if err := s.w.write(ctx, func(x *wtx) error {
			_, err := x.exec(fmt.Sprintf("PRAGMA max_page_count = %d", n))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	var pages int
	if err := s.rdb.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	setMax(pages)
	big := json.RawMessage(`"` + strings.Repeat("z", 20*store.DefaultBlobThreshold) + `"`)
	full := &store.Transition{RunID: "run", Version: tr.Version,
		Events: []*trace.Event{{Seq: 2, Kind: trace.StepSettled, RunID: "run", StepID: "a"}},
		Run:    &store.RunUpdate{Status: trace.RunRunning},
		Steps:  []*store.Step{{StepID: "a", Status: trace.StepSucceeded, Output: big}}}
	err = s.Commit(ctx, full)
	if err == nil {
		t.Fatal("Commit on a full database succeeded")
	}
	t.Logf("full: %v", err)
	if full.Version != tr.Version {
		t.Errorf("failed Commit moved t.Version")
	}
	g, _ := s.GetRun(ctx, "run")
	evs, _ := s.Events(ctx, "run", 0, 0)
	st, _ := s.Steps(ctx, "run")
	if g.Version != tr.Version || g.Status != trace.RunPending || len(evs) != 1 || len(st) != 0 {
		t.Errorf("half-applied: version %d status %s, %d events, %d steps", g.Version, g.Status, len(evs), len(st))
	}
	setMax(1 << 30)
	if err := s.Commit(ctx, full); err != nil {
		t.Fatalf("Commit once there is room: %v", err)
	}
	if st, _ := s.Steps(ctx, "run"); len(st) != 1 || !bytes.Equal(st[0].Output, big) {
		t.Errorf("step after recovery: %d steps", len(st))
	}
}

// TestTwoProcesses opens one file twice (as two rein processes would) and
// races commits on the same runs: every transition is won exactly once,
// the losers get ErrConflict, and the journal is intact.
func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	ctx := t.Context()
	const runs, rounds = 4, 30
	for i := range runs {
		if _, _, err := a.CreateRun(ctx, &store.CreateRunParams{ID: fmt.Sprint("run-", i), Flow: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range runs {
		id := fmt.Sprint("run-", i)
		wg.Go(func() {
			for k := range rounds {
				r, err := b.GetRun(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				seq := int64(k + 1)
				var (
					inner sync.WaitGroup
					errs  [2]error
				)
				for j, s := range []*Store{a, b} {
					inner.Go(func() {
						errs[j] = s.Commit(ctx, &store.Transition{RunID: id, Version: r.Version,
							Events: []*trace.Event{{Seq: seq, Kind: trace.StepStarted, RunID: id, StepID: fmt.Sprint("by-", j)}},
							Steps:  []*store.Step{{StepID: fmt.Sprint("s", seq), Status: trace.StepRunning}}})
					})
				}
				inner.Wait()
				wins := 0
				for _, err := range errs {
					if err == nil {
						wins++
					} else if !errors.Is(err, store.ErrConflict) {
						t.Errorf("%s round %d: %v, want nil or ErrConflict", id, k, err)
					}
				}
				if wins != 1 {
					t.Errorf("%s round %d: %d winners (%v)", id, k, wins, errs)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range runs {
		id := fmt.Sprint("run-", i)
		for _, s := range []*Store{a, b} {
			evs, err := s.Events(ctx, id, 0, 0)
			if err != nil || len(evs) != rounds {
				t.Errorf("%s: %d events, %v; want %d", id, len(evs), err, rounds)
			}
			if g, err := s.GetRun(ctx, id); err != nil || g.LastSeq != rounds {
				t.Errorf("%s: %+v, %v", id, g, err)
			}
		}
	}
	var check string
	if err := a.rdb.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
}

func TestMemoryIsPrivate(t *testing.T) {
	t.Parallel()
	a := openFile(t, ":memory:", nil)
	b := openFile(t, ":memory:", nil)
	if _, _, err := a.CreateRun(t.Context(), &store.CreateRunParams{ID: "run", Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetRun(t.Context(), "run"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second :memory: store sees the first's run: %v", err)
	}
}

func TestCommitAfterCloseAndCancel(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Commit(t.Context(), &store.Transition{RunID: "x"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Commit after Close: %v", err)
	}
}
