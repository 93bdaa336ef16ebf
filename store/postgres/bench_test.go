package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// The benchmarks measure durable commits against the server named by
// REIN_TEST_POSTGRES_DSN, with its own fsync settings:
//
//	eval "$(.ci/postgres)"
//	go test ./store/postgres -run '^$' -bench . -benchtime 3s

// BenchmarkRawCommit is the ceiling: one ~300-byte INSERT per transaction,
// one round trip and one WAL flush each.
func BenchmarkRawCommit(b *testing.B) {
	s := openTest(b, "", nil)
	defer s.Close()
	ctx := b.Context()
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE raw_commit (id bigserial PRIMARY KEY, run_id text, data bytea)`); err != nil {
		b.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", 300))
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.db.ExecContext(ctx, `INSERT INTO raw_commit (run_id, data) VALUES ($1, $2)`, "run", payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/commit")
}

// benchStep is one per-step transition: the step's settle and the next
// step's start (two events) and the step's projection.
func benchStep(runID string, tr *store.Transition, i int, output []byte) {
	id := fmt.Sprintf("s%d", i%32)
	now := time.Now()
	tr.Events = append(tr.Events[:0],
		&trace.Event{Seq: int64(2*i + 1), Time: now, Kind: trace.StepSettled, RunID: runID, Flow: "bench", StepID: id, StepType: "tool", Attempt: 1, Status: "succeeded", DurationMS: 3, Preview: `{"ok":true}`},
		&trace.Event{Seq: int64(2*i + 2), Time: now, Kind: trace.StepStarted, RunID: runID, Flow: "bench", StepID: id, StepType: "tool"})
	tr.Steps = append(tr.Steps[:0], &store.Step{StepID: id, Type: "tool", Status: trace.StepSucceeded, Attempt: 1, Output: output, StartedAt: now, SettledAt: now})
}

// BenchmarkCommitSingleRun commits the transitions of one run one after
// the other, as a run's scheduler does (each committed before the next
// step starts). Each step is followed by one raw commit (as in
// BenchmarkRawCommit), timed apart, so that us/step is compared with the
// raw ceiling under the same load: x-raw is their ratio.
func BenchmarkCommitSingleRun(b *testing.B) {
	s := openTest(b, "", nil)
	defer s.Close()
	ctx := b.Context()
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE raw_commit (id bigserial PRIMARY KEY, run_id text, data bytea)`); err != nil {
		b.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", 300))
	r, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "run", Flow: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	output := []byte(`{"answer":"` + strings.Repeat("y", 200) + `"}`)
	tr := &store.Transition{RunID: "run", Version: r.Version}
	var stepTime, rawTime time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		benchStep("run", tr, i, output)
		t0 := time.Now()
		if err := s.Commit(ctx, tr); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.db.ExecContext(ctx, `INSERT INTO raw_commit (run_id, data) VALUES ($1, $2)`, "run", payload); err != nil {
			b.Fatal(err)
		}
		stepTime += t1.Sub(t0)
		rawTime += time.Since(t1)
		i++
	}
	b.ReportMetric(float64(stepTime.Microseconds())/float64(b.N), "us/step")
	b.ReportMetric(float64(rawTime.Microseconds())/float64(b.N), "raw-us/commit")
	b.ReportMetric(float64(stepTime)/float64(rawTime), "x-raw")
}

// BenchmarkCommit64Runs commits per-step transitions of 64 runs in flight
// at once, each run from its own goroutine; PostgreSQL groups the WAL
// flushes of concurrent commits.
func BenchmarkCommit64Runs(b *testing.B) {
	const runs = 64
	s := openTest(b, "", &Options{MaxConns: runs})
	defer s.Close()
	ctx := b.Context()
	trs := make([]*store.Transition, runs)
	for k := range runs {
		id := fmt.Sprintf("run-%02d", k)
		r, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: id, Flow: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		trs[k] = &store.Transition{RunID: id, Version: r.Version}
	}
	// Warm every connection's statement cache.
	var warm sync.WaitGroup
	next := make([]int, runs)
	output := []byte(`{"answer":"` + strings.Repeat("y", 200) + `"}`)
	for k := range runs {
		warm.Go(func() {
			benchStep(trs[k].RunID, trs[k], 0, output)
			if err := s.Commit(context.Background(), trs[k]); err != nil {
				b.Error(err)
			}
			next[k] = 1
		})
	}
	warm.Wait()
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for k := range runs {
		wg.Go(func() {
			tr := trs[k]
			for left.Add(-1) >= 0 {
				benchStep(tr.RunID, tr, next[k], output)
				if err := s.Commit(ctx, tr); err != nil {
					b.Error(err)
					return
				}
				next[k]++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "us/step")
}
