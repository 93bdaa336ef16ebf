package workflowtool_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/trace"
)

// BenchmarkSubmit measures a submit round trip (validate → artifact →
// gate → next_actions → commit) on SQLite with synchronous NORMAL,
// excluding transport: Workflow.Do on a task whose parse step is ready.
// RawCommit is the store's own commit of one journal event, measured in
// the same run for comparison.
func BenchmarkSubmit(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "rein.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := workflowtool.New("../../examples/process-workflow", &workflowtool.Options{Store: st, DeliveryDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	i := 0 // sessions never repeat, so every start is a new task
	b.Run("RoundTrip", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			i++
			a, err := w.Do(ctx, &workflowtool.Request{Action: "start", SessionID: fmt.Sprint(i), Input: []byte(`{"description":"bench"}`)})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := w.Do(ctx, &workflowtool.Request{Action: "submit", TaskID: a.TaskID, StepID: "parse", Data: []byte(`{"items":["frame","bracket"]}`)}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/op")
	})
	b.Run("RawCommit", func(b *testing.B) {
		a, err := w.Do(ctx, &workflowtool.Request{Action: "start", SessionID: "raw", Input: []byte(`{"description":"bench"}`)})
		if err != nil {
			b.Fatal(err)
		}
		run, err := st.GetRun(ctx, a.TaskID)
		if err != nil {
			b.Fatal(err)
		}
		v, seq := run.Version, run.LastSeq
		for b.Loop() {
			seq++
			t := &store.Transition{RunID: run.ID, Version: v, Events: []*trace.Event{{Seq: seq, Time: time.Now(), Kind: trace.SubmissionRejected, RunID: run.ID, StepID: "parse"}}}
			if err := st.Commit(ctx, t); err != nil {
				b.Fatal(err)
			}
			v = t.Version
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/op")
	})
}
