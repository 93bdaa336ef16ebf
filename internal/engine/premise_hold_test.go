package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// premiseHoldFlow: lookup's output contradicts its premise while three
// independent steps are in flight: notify, a for_each of a write tool (one
// item at a time), ping, a repeat of one, and pl, a plan step whose plan
// charges a, then b.
const premiseHoldFlow = `name: held
concurrency: 4
steps:
  - id: lookup
    tool: lookup
    args: {}
    premise: {id: region-known, claim: "the registry knows the region", check: 'output.region != ""'}
  - {id: notify, tool: notify, for_each: "input.xs", concurrency: 1, args: {x: "{item}"}, requires: []}
  - {id: ping, tool: ping, repeat: {max: 3, until: 'output.n >= 3'}, requires: []}
  - {id: pl, type: plan, model: m, goal: "charge a, then b", tools: [charge], requires: []}
`

// holdEngine builds the engine of premiseHoldFlow on st. Every tool call
// appends its idempotency key to dir/<tool>.log when it starts. With block
// set, notify's first item, ping's first round and pl's plan step a
// start, then wait until lookup's attempt has failed (its attempt_failed
// event), and lookup waits until all three started: the three steps are
// in flight when the premise fails, each with one unit running.
func holdEngine(t testing.TB, dir string, st store.Store, block bool) (*engine.Engine, *flow.Flow) {
	reg := &tool.Registry{}
	var mu sync.Mutex
	ledger := func(ctx context.Context, name string) error {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(tool.CallInfoFrom(ctx).IdempotencyKey + "\n")
		return err
	}
	var started sync.WaitGroup
	release := make(chan struct{})
	if block {
		started.Add(3)
	} else {
		close(release)
	}
	wait := func(ctx context.Context, first bool) error {
		if !first || !block {
			return nil
		}
		started.Done()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	register := func(name string, effect tool.Effect, fn func(ctx context.Context, args map[string]any) (any, error)) {
		if err := reg.Register(tool.Func(tool.Spec{Name: name, Effect: effect}, func(ctx context.Context, in any) (any, error) {
			if err := ledger(ctx, name); err != nil {
				return nil, err
			}
			args, _ := in.(map[string]any)
			return fn(ctx, args)
		})); err != nil {
			t.Fatal(err)
		}
	}
	register("lookup", tool.EffectRead, func(context.Context, map[string]any) (any, error) {
		started.Wait()
		return map[string]any{"region": ""}, nil
	})
	register("notify", tool.EffectWrite, func(ctx context.Context, args map[string]any) (any, error) {
		return map[string]any{"sent": args["x"]}, wait(ctx, args["x"] == "a")
	})
	register("ping", tool.EffectWrite, func(ctx context.Context, args map[string]any) (any, error) {
		n, _ := args["iteration"].(float64)
		return map[string]any{"n": n + 1}, wait(ctx, n == 0)
	})
	register("charge", tool.EffectWrite, func(ctx context.Context, args map[string]any) (any, error) {
		return map[string]any{"charged": args["n"]}, wait(ctx, args["n"] == "a")
	})
	f, err := flow.Parse([]byte(premiseHoldFlow), "held.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	sink := sinkFunc(func(e *trace.Event) {
		if e.Kind == trace.AttemptFailed && e.StepID == "lookup" {
			once.Do(func() { close(release) })
		}
	})
	if !block {
		sink = nil
	}
	cfg := engine.Config{Tools: reg, Store: st, Models: retryPlanModels(1)}
	if sink != nil {
		cfg.Sink = sink
	}
	return engine.New(cfg), f
}

// sinkFunc is a trace.Sink calling a function with each event.
type sinkFunc func(e *trace.Event)

func (s sinkFunc) Emit(_ context.Context, e *trace.Event) { s(e) }

var holdInput = map[string]any{"xs": []any{"a", "b", "c"}}

// wantCalls checks that tool name was called n times, each call once (a
// key of its own).
func wantCalls(t *testing.T, dir, name string, n int) {
	t.Helper()
	got := readLines(t, filepath.Join(dir, name+".log"))
	keys := slices.Compact(slices.Sorted(slices.Values(got)))
	if len(got) != n || len(keys) != n {
		t.Errorf("%s calls %v, want %d, each once", name, got, n)
	}
}

// settleLookup settles lookup's premise with the output it should have
// produced.
func settleLookup(t *testing.T, st store.Store, runID string) {
	t.Helper()
	if _, err := st.DecideApproval(context.Background(), &store.DecideApprovalParams{RunID: runID, StepID: "lookup", Status: store.ApprovalSettled,
		Output: json.RawMessage(`{"region": "eu"}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestPremiseHoldsStepsInFlight: a premise that fails while notify (a
// for_each) and ping (a repeat) are in flight, each with its first unit
// running, stops both before their next unit: the units running finish
// and are recorded, no further one starts, the steps stay running
// (unsettled) and the run waits on the premise. Once a person settles it,
// a resume runs the remaining items and rounds, each exactly once.
func TestPremiseHoldsStepsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, f := holdEngine(t, dir, st, true)
	res, err := e.Run(ctx, f, holdInput, &engine.RunOptions{RunID: "hold-run"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 1 || res.Pending[0].Kind != store.KindPremise {
		t.Fatalf("pending %+v, want the premise", res.Pending)
	}
	wantCalls(t, dir, "notify", 1) // item a, in flight: no b, no c
	wantCalls(t, dir, "ping", 1)   // round 1, in flight: no round 2
	wantCalls(t, dir, "charge", 1) // plan step a, in flight: no b
	for _, id := range []string{"notify", "ping", "pl"} {
		if got := res.Steps[id].Status; got != trace.StepRunning {
			t.Errorf("step %s is %s, want running (held, not settled)", id, got)
		}
	}

	settleLookup(t, st, "hold-run")
	e, f = holdEngine(t, dir, st, false)
	if res, err = e.Resume(ctx, f, "hold-run"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantCalls(t, dir, "lookup", 1)
	wantCalls(t, dir, "notify", 3)
	wantCalls(t, dir, "ping", 3)
	wantCalls(t, dir, "charge", 2)
	want := []any{map[string]any{"sent": "a"}, map[string]any{"sent": "b"}, map[string]any{"sent": "c"}}
	if got, _ := res.Outputs["notify"].([]any); !equalJSON(got, want) {
		t.Errorf("notify output %v, want %v", res.Outputs["notify"], want)
	}
}

// equalJSON compares two values by their JSON.
func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestPremiseHoldCrashChild is the child of TestPremiseHoldSurvivesAKill:
// it runs premiseHoldFlow until the premise parks it, then dies by
// SIGKILL.
func TestPremiseHoldCrashChild(t *testing.T) {
	if os.Getenv("REIN_PREMISE_HOLD_CHILD") == "" {
		t.Skip("the premise hold crash test's child process")
	}
	parkThenDie(t, "hold-run", holdInput, func(t testing.TB, dir string, st store.Store) (*engine.Engine, *flow.Flow) {
		return holdEngine(t, dir, st, true)
	})
}

// TestPremiseHoldSurvivesAKill: the steps a failed premise held, in a
// process then killed (SIGKILL), stay held in the next one: a resume
// without a decision starts no further item or round; once a person
// settles the premise the remaining ones run, each once.
func TestPremiseHoldSurvivesAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	ctx := context.Background()
	dir, st := killedChild(t, "TestPremiseHoldCrashChild", "REIN_PREMISE_HOLD_CHILD=1")
	wantCalls(t, dir, "notify", 1)
	wantCalls(t, dir, "ping", 1)
	wantCalls(t, dir, "charge", 1)
	e, f := holdEngine(t, dir, st, false)
	res, err := e.Resume(ctx, f, "hold-run")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	wantCalls(t, dir, "notify", 1)
	wantCalls(t, dir, "ping", 1)
	wantCalls(t, dir, "charge", 1)

	settleLookup(t, st, "hold-run")
	e, f = holdEngine(t, dir, st, false)
	if res, err = e.Resume(ctx, f, "hold-run"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantCalls(t, dir, "notify", 3)
	wantCalls(t, dir, "ping", 3)
	wantCalls(t, dir, "charge", 2)
}

// TestPremiseHoldRejected: a person who rejects the premise fails the run
// with its error; the items, rounds and plan steps the premise held never
// run, and their steps end as a failed run ends the steps it has in
// flight (failed, class cancelled).
func TestPremiseHoldRejected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, f := holdEngine(t, dir, st, true)
	res, err := e.Run(ctx, f, holdInput, &engine.RunOptions{RunID: "reject-run"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "reject-run", StepID: "lookup", Status: store.ApprovalRejected,
		Comment: "the registry is stale"}); err != nil {
		t.Fatal(err)
	}
	e, f = holdEngine(t, dir, st, false)
	if res, err = e.Resume(ctx, f, "reject-run"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	if res.Error == nil || !strings.Contains(res.Error.Message, "premise region-known") {
		t.Errorf("error %v, want the premise's", res.Error)
	}
	wantCalls(t, dir, "notify", 1)
	wantCalls(t, dir, "ping", 1)
	wantCalls(t, dir, "charge", 1)
	for _, id := range []string{"notify", "ping", "pl"} {
		wantCancelledBy(t, st, res, "reject-run", id, "lookup") // not left running
	}
}
