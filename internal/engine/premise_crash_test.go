package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// premiseCrashFlow: lookup's output contradicts its premise; save depends
// on it, audit (a write) does not. One step at a time, so audit is not in
// flight when the premise fails.
const premiseCrashFlow = `name: premised
concurrency: 1
steps:
  - id: lookup
    tool: lookup
    args: {}
    premise: {id: region-known, claim: "the registry knows the region", check: 'output.region != ""'}
  - {id: save, tool: save, args: {region: "{lookup.region}"}}
  - {id: audit, tool: audit, args: {}, requires: []}
`

// premiseEngine builds the engine of premiseCrashFlow on st: each tool
// appends its idempotency key to dir/<tool>.log (a process that dies
// leaves the lines it wrote).
func premiseEngine(t testing.TB, dir string, st store.Store) (*engine.Engine, *flow.Flow) {
	reg := &tool.Registry{}
	var mu sync.Mutex
	for name, out := range map[string]any{"lookup": map[string]any{"region": ""}, "save": map[string]any{"ok": true}, "audit": map[string]any{"ok": true}} {
		effect := tool.EffectWrite
		if name == "lookup" {
			effect = tool.EffectRead
		}
		if err := reg.Register(tool.Func(tool.Spec{Name: name, Effect: effect}, func(ctx context.Context, _ any) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			_, err = f.WriteString(tool.CallInfoFrom(ctx).IdempotencyKey + "\n")
			return out, err
		})); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Parse([]byte(premiseCrashFlow), "premised.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Store: st}), f
}

// TestPremiseCrashChild is the child of TestPremisePauseSurvivesAKill: it
// runs the flow until the premise parks it, then dies by SIGKILL.
func TestPremiseCrashChild(t *testing.T) {
	if os.Getenv("REIN_PREMISE_CHILD") == "" {
		t.Skip("the premise crash test's child process")
	}
	parkThenDie(t, "premise-run", nil, premiseEngine)
}

// TestPremisePauseSurvivesAKill: a run paused by a failed premise, whose
// process is killed (SIGKILL), stays paused in the next one: a resume
// without a decision dispatches nothing — not even the independent audit
// — and waits again on the premise; once a person settles the step, the
// paused branches run, each once.
func TestPremisePauseSurvivesAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	ctx := context.Background()
	dir, st := killedChild(t, "TestPremiseCrashChild", "REIN_PREMISE_CHILD=1")
	approvals, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: "premise-run"})
	if err != nil {
		t.Fatal(err)
	}
	if len(approvals) != 1 || approvals[0].StepID != "lookup" || approvals[0].Kind != store.KindPremise || approvals[0].Status != store.ApprovalPending {
		t.Fatalf("approvals %+v, want lookup waiting on its premise", approvals)
	}
	e, f := premiseEngine(t, dir, st)
	res, err := e.Resume(ctx, f, "premise-run")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 1 || res.Pending[0].Kind != store.KindPremise {
		t.Fatalf("pending after the resume %+v, want the premise", res.Pending)
	}
	for _, name := range []string{"save", "audit"} {
		if got := readLines(t, filepath.Join(dir, name+".log")); len(got) != 0 {
			t.Fatalf("%s ran while the run was paused: %v", name, got)
		}
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "premise-run", StepID: "lookup", Status: store.ApprovalSettled,
		Output: json.RawMessage(`{"region": "eu"}`)}); err != nil {
		t.Fatal(err)
	}
	e, f = premiseEngine(t, dir, st)
	if res, err = e.Resume(ctx, f, "premise-run"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	for _, name := range []string{"lookup", "save", "audit"} {
		if got := readLines(t, filepath.Join(dir, name+".log")); len(got) != 1 {
			t.Errorf("%s calls %v, want one", name, got)
		}
	}
}
