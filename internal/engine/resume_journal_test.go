package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// TestResumeReplaysTheJournal: a resume rebuilds the scheduler's state
// from the journal, and refuses, naming the step, a run whose step rows
// say something the journal does not (here: a step settled with another
// output, a step settled that the journal never started).
func TestResumeReplaysTheJournal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		events []*trace.Event
		want   string
	}{
		{"another output", []*trace.Event{
			{Kind: trace.StepStarted, StepID: "one", Status: "running", Attempt: 1},
			{Kind: trace.StepSettled, StepID: "one", Status: "succeeded", Attempt: 1, OutputSHA: "beef"},
		}, "disagree on step one: replaying the journal gives succeeded at attempt 1 with output sha256 beef, the step's row holds succeeded at attempt 1 with output sha256 cafe"},
		{"never started", nil, "disagree on step one: replaying the journal gives pending at attempt 0, the step's row holds succeeded at attempt 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a := newKeyCounter("a", false)
			fx := newFixture(t, a)
			st := openSQLite(t)
			f := fx.parse("name: j\nsteps:\n  - {id: one, tool: a, args: {}}\n  - {id: two, tool: a, args: {}}\n")
			run, _, err := st.CreateRun(ctx, &store.CreateRunParams{ID: "r", Flow: f.Name, FlowHash: engine.FlowHash(f),
				FlowText: f.Source, Input: json.RawMessage(`{}`), Status: trace.RunRunning})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			events := append([]*trace.Event{{Kind: trace.RunStarted}}, c.events...)
			for k, ev := range events {
				ev.Seq, ev.RunID, ev.Time = int64(k+1), "r", now
			}
			if err := st.Commit(ctx, &store.Transition{RunID: "r", Version: run.Version, Events: events,
				Steps: []*store.Step{{RunID: "r", StepID: "one", Type: "tool", Status: trace.StepSucceeded, Attempt: 1,
					Output: json.RawMessage(`{"n":1}`), OutputSHA: "cafe", StartedAt: now, SettledAt: now}}}); err != nil {
				t.Fatal(err)
			}
			_, err = durableEngine(fx, st, "p1").Resume(ctx, f, "r")
			if err == nil || !strings.Contains(err.Error(), c.want) || fault.ClassOf(err) != fault.Conflict {
				t.Fatalf("resume: %v (class %s), want a conflict saying %q", err, fault.ClassOf(err), c.want)
			}
			if got := a.calls(); len(got) != 0 {
				t.Fatalf("a run that cannot be resumed ran steps: %v", got)
			}
		})
	}
}
