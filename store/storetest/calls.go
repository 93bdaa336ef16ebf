package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

func calls(t *testing.T, s store.Store, runID, stepID string) []*store.Call {
	t.Helper()
	cs, err := s.Calls(t.Context(), runID, stepID)
	if err != nil {
		t.Fatalf("Calls(%s, %q): %v", runID, stepID, err)
	}
	return cs
}

func callKeys(cs []*store.Call) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key + "=" + string(c.Status)
	}
	return out
}

// callEvent is the call event seq of run carrying c.
func callEvent(run string, seq int64, c *store.Call) *trace.Event {
	e := event(run, seq, trace.CallRecorded, c.StepID)
	e.Call = c
	return e
}

// testCalls: call records travel in call events, are read back field for
// field, replaced by key in place (a late record keeping the story of the
// one it follows), filtered by step.
func testCalls(t *testing.T, h Harness) {
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	if cs := calls(t, s, "run", ""); len(cs) != 0 {
		t.Errorf("Calls of a run without records = %s, want none", jsonString(cs))
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	started := &store.Call{StepID: "each", Key: "run/each[0]/1", Item: 0, Attempt: 1, Kind: store.CallTool, Name: "charge",
		ArgsSHA: "ab12", Status: store.CallStarted, StartedAt: at}
	plain := &store.Call{StepID: "plan", Key: "run/plan/1/plan1/fetch", Item: -1, Attempt: 1, Plan: 1, PlanStep: "fetch",
		Kind: store.CallTool, Name: "fetch", Status: store.CallFailed, ErrorClass: "transient", Error: "tool fetch: 503",
		StartedAt: at, Duration: 1500 * time.Millisecond}
	tr := &store.Transition{RunID: "run", Version: r.Version,
		Events: []*trace.Event{event("run", 1, trace.StepStarted, "each"), callEvent("run", 2, started), callEvent("run", 3, plain)},
		Steps:  []*store.Step{{StepID: "each", Type: "tool", Status: trace.StepRunning, Attempt: 1, StartedAt: at}}}
	commit(t, s, tr)
	got := calls(t, s, "run", "")
	if !equal(callKeys(got), []string{"run/each[0]/1=started", "run/plan/1/plan1/fetch=failed"}) {
		t.Fatalf("Calls = %v, want each[0] started, then plan1/fetch failed", callKeys(got))
	}
	g := got[1]
	if g.RunID != "run" || g.StepID != "plan" || g.Item != -1 || g.Plan != 1 || g.PlanStep != "fetch" || g.Attempt != 1 ||
		g.Kind != store.CallTool || g.Name != "fetch" || g.ErrorClass != "transient" || g.Error != "tool fetch: 503" ||
		!near(g.StartedAt, at) || g.Duration != 1500*time.Millisecond || g.Output != nil {
		t.Errorf("Calls[1] = %s, want %s", jsonString(g), jsonString(plain))
	}
	if g := got[0]; g.Item != 0 || g.ArgsSHA != "ab12" || g.Status != store.CallStarted {
		t.Errorf("Calls[0] = %s, want item 0, args_sha256 ab12, started", jsonString(g))
	}

	// the started call settles; a model call of another item follows.
	settled := *started
	settled.Status, settled.Output, settled.Duration = store.CallSucceeded, []byte(`{"id":"ch_1","n":2}`), 20*time.Millisecond
	model := &store.Call{StepID: "each", Key: "run/each[1]/2", Item: 1, Round: 3, Turn: 2, Index: 4, Fallback: true, Attempt: 2,
		Kind: store.CallModel, Name: "gpt", Status: store.CallSucceeded, Output: []byte(`"hi"`), TokensIn: 10, TokensOut: 3, StartedAt: at}
	tr2 := &store.Transition{RunID: "run", Version: tr.Version, Events: []*trace.Event{callEvent("run", 4, &settled), callEvent("run", 5, model)}}
	commit(t, s, tr2)
	got = calls(t, s, "run", "")
	if !equal(callKeys(got), []string{"run/each[0]/1=succeeded", "run/plan/1/plan1/fetch=failed", "run/each[1]/2=succeeded"}) {
		t.Fatalf("Calls after settling = %v, want each[0] replaced in place", callKeys(got))
	}
	if !jsonEqual(got[0].Output, []byte(`{"id":"ch_1","n":2}`)) || got[0].Duration != 20*time.Millisecond {
		t.Errorf("settled record = %s", jsonString(got[0]))
	}
	if m := got[2]; m.Kind != store.CallModel || m.TokensIn != 10 || m.TokensOut != 3 || m.Round != 3 || m.Turn != 2 ||
		m.Index != 4 || !m.Fallback || m.Attempt != 2 || !jsonEqual(m.Output, []byte(`"hi"`)) {
		t.Errorf("model record = %s, want %s", jsonString(m), jsonString(model))
	}
	if each := calls(t, s, "run", "each"); !equal(callKeys(each), []string{"run/each[0]/1=succeeded", "run/each[1]/2=succeeded"}) {
		t.Errorf("Calls(step each) = %v", callKeys(each))
	}
	// the call of item 1 was given up at its deadline, with its gate's
	// decision and its effect; then its tool returned after all.
	timedOut := &store.Call{StepID: "each", Key: "run/each[2]/1", Item: 2, Attempt: 1, Kind: store.CallTool, Name: "charge",
		Status: store.CallFailed, Outcome: "timed_out", ErrorClass: "transient", Error: "deadline",
		Gate:   []journal.CallGate{{Verdict: "allow", Why: "rule ok: fine", Basis: []byte(`{"chosen":true}`)}},
		Effect: &journal.DeclaredEffect{Effect: "write", Writes: []string{"ledger:1"}}}
	late := &store.Call{StepID: "each", Key: "run/each[2]/1", Item: 2, Attempt: 1, Kind: store.CallTool, Name: "charge",
		Status: store.CallLate, Outcome: "late", Duration: time.Second}
	commit(t, s, &store.Transition{RunID: "run", Version: tr2.Version, Events: []*trace.Event{callEvent("run", 6, timedOut), callEvent("run", 7, late)}})
	got = calls(t, s, "run", "each")
	if n := len(got); n != 3 {
		t.Fatalf("Calls(each) = %v, want 3", callKeys(got))
	}
	if l := got[2]; l.Status != store.CallLate || l.Outcome != "late" || l.Duration != time.Second || len(l.Gate) != 1 ||
		!jsonEqual(l.Gate[0].Basis, []byte(`{"chosen":true}`)) || l.Effect == nil || l.Effect.Writes[0] != "ledger:1" {
		t.Errorf("late record = %s, want the timed-out record's gate and effect with status late", jsonString(l))
	}
	if none := calls(t, s, "run", "nope"); len(none) != 0 {
		t.Errorf("Calls(step nope) = %v, want none", callKeys(none))
	}
	if _, err := s.Calls(t.Context(), "missing", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Calls(missing run) = %v, want ErrNotFound", err)
	}
}

// testCallsAtomic: a transition refused for its version applies none of
// its call records; a pruned run's records go with it.
func testCallsAtomic(t *testing.T, h Harness) {
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	stale := &store.Transition{RunID: "run", Version: r.Version + 5,
		Events: []*trace.Event{event("run", 1, trace.StepStarted, "a"),
			callEvent("run", 2, &store.Call{StepID: "a", Key: "run/a[0]/1", Attempt: 1, Kind: store.CallTool, Name: "t", Status: store.CallSucceeded})}}
	if err := s.Commit(t.Context(), stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Commit at a stale version = %v, want ErrConflict", err)
	}
	if cs := calls(t, s, "run", ""); len(cs) != 0 {
		t.Errorf("a refused transition left call records: %v", callKeys(cs))
	}
	old := time.Now().Add(-2 * time.Hour)
	tr := &store.Transition{RunID: "run", Version: r.Version,
		Events: []*trace.Event{callEvent("run", 1, &store.Call{StepID: "a", Key: "run/a[0]/1", Attempt: 1, Kind: store.CallTool, Name: "t", Status: store.CallSucceeded}),
			event("run", 2, trace.RunSettled, "")},
		Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: old}}
	commit(t, s, tr)
	if cs := calls(t, s, "run", ""); len(cs) != 1 {
		t.Fatalf("Calls = %v, want one", callKeys(cs))
	}
	if res := prune(t, s, store.PruneParams{Before: time.Now().Add(-time.Hour)}); res.Runs != 1 {
		t.Fatalf("Prune = %+v, want the run", *res)
	}
	if _, err := s.Calls(t.Context(), "run", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Calls of a pruned run = %v, want ErrNotFound", err)
	}
}

// testCallsCreate: the transition that creates its run carries call
// records too (a pure first step's records ride with it).
func testCallsCreate(t *testing.T, h Harness) {
	s := open(t, h)
	tr := &store.Transition{RunID: "made", Create: &store.CreateRunParams{ID: "made", Flow: "f", FlowHash: "sha256:f", Input: []byte(`{}`), Status: trace.RunRunning},
		Events: []*trace.Event{callEvent("made", 1, &store.Call{StepID: "each", Key: "made/each[0]/1", Item: 0, Attempt: 1, Kind: store.CallTool, Name: "t", Status: store.CallSucceeded, Output: []byte(`1`)}),
			event("made", 2, trace.StepSettled, "each")},
		Steps: []*store.Step{{StepID: "each", Status: trace.StepSucceeded, Attempt: 1, Output: []byte(`[1]`)}}}
	commit(t, s, tr)
	if cs := calls(t, s, "made", "each"); len(cs) != 1 || cs[0].RunID != "made" || string(cs[0].Output) != "1" {
		t.Errorf("Calls of a created run = %s", jsonString(cs))
	}
}
