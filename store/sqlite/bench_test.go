package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

var syncModes = []string{"NORMAL", "FULL"}

// BenchmarkRawCommit is the ceiling: one ~300-byte INSERT per transaction
// on a plain table, through the same driver and pragmas.
func BenchmarkRawCommit(b *testing.B) {
	for _, mode := range syncModes {
		b.Run(mode, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "raw.db")
			db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+mode+")&_pragma=busy_timeout(5000)&_txlock=immediate")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(`CREATE TABLE raw (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`); err != nil {
				b.Fatal(err)
			}
			ins, err := db.Prepare(`INSERT INTO raw (data) VALUES (?)`)
			if err != nil {
				b.Fatal(err)
			}
			defer ins.Close()
			row := []byte(strings.Repeat("r", 300))
			b.ResetTimer()
			for b.Loop() {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Stmt(ins).Exec(row); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/op")
		})
	}
}

// w5 is one W5-like transition of a run: step k-1 settles (with a small
// output), step k starts.
type w5 struct {
	tr     store.Transition
	events [2]trace.Event
	step   store.Step
	k      int64
}

var w5Output = json.RawMessage(`{"label":"billing","confidence":0.92,"reason":"the customer asks about an invoice"}`)

func newW5(id string, version int64) *w5 {
	return &w5{tr: store.Transition{RunID: id, Version: version}}
}

// createW5Runs creates n runs ("run-0" …) in s, each with its W5 transitions.
func createW5Runs(tb testing.TB, s *Store, n int) []*w5 {
	tb.Helper()
	ws := make([]*w5, n)
	for i := range ws {
		id := fmt.Sprint("run-", i)
		r, _, err := s.CreateRun(tb.Context(), &store.CreateRunParams{ID: id, Flow: "w5"})
		if err != nil {
			tb.Fatal(err)
		}
		ws[i] = newW5(id, r.Version)
	}
	return ws
}

func (w *w5) next() *store.Transition {
	w.k++
	now := time.Now()
	w.events[0] = trace.Event{Seq: 2*w.k - 1, Time: now, Kind: trace.StepSettled, RunID: w.tr.RunID, Flow: "w5",
		StepID: fmt.Sprint("s", w.k-1), StepType: "tool", Attempt: 1, Status: "succeeded", DurationMS: 3, Preview: string(w5Output)}
	w.events[1] = trace.Event{Seq: 2 * w.k, Time: now, Kind: trace.StepStarted, RunID: w.tr.RunID, Flow: "w5",
		StepID: fmt.Sprint("s", w.k), StepType: "tool"}
	w.step = store.Step{StepID: fmt.Sprint("s", w.k-1), Type: "tool", Status: trace.StepSucceeded, Attempt: 1,
		Output: w5Output, StartedAt: now, SettledAt: now}
	w.tr.Events = []*trace.Event{&w.events[0], &w.events[1]}
	w.tr.Steps = []*store.Step{&w.step}
	return &w.tr
}

func benchStore(b *testing.B, mode string) *Store {
	b.Helper()
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "rein.db"), &Options{Synchronous: mode})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkCommitSingleRun commits one run's W5 transitions back to back:
// each Commit waits for its own transaction, so this is persistence cost
// per step with no grouping.
func BenchmarkCommitSingleRun(b *testing.B) {
	for _, mode := range syncModes {
		b.Run(mode, func(b *testing.B) {
			s := benchStore(b, mode)
			r, _, err := s.CreateRun(b.Context(), &store.CreateRunParams{ID: "run", Flow: "w5"})
			if err != nil {
				b.Fatal(err)
			}
			w := newW5("run", r.Version)
			b.ResetTimer()
			for b.Loop() {
				if err := s.Commit(b.Context(), w.next()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/step")
		})
	}
}

// BenchmarkCommit64Runs has 64 runs in flight, each committing its own W5
// transitions; the writer groups them (group commit).
func BenchmarkCommit64Runs(b *testing.B) {
	const runs = 64
	for _, mode := range syncModes {
		b.Run(mode, func(b *testing.B) {
			s := benchStore(b, mode)
			ws := createW5Runs(b, s, runs)
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, w := range ws {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if err := s.Commit(b.Context(), w.next()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/sec, "steps/s")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/step")
		})
	}
}
