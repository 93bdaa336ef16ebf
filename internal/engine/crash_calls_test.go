package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The call-record crash test: a child process runs a flow of a for_each
// step over a tool that is not idempotent (each), one over an idempotent
// tool (safe) and a plan step (pl), and kills itself at one call; the
// parent resumes the run from the same SQLite file. Every call appends its
// idempotency key to calls.log, which survives the kill.
const crashCallsFlow = `name: crash_calls
steps:
  - {id: each, tool: charge, for_each: "{input.items}", concurrency: 1, args: {n: "{item}"}}
  - {id: safe, tool: fetch, for_each: "{input.items}", concurrency: 1, args: {n: "{item}"}}
  - {id: pl, type: plan, model: m, goal: "charge a, b and c", tools: [charge]}
`

const crashCallsRun = "cc"

var crashCallsInput = map[string]any{"items": []any{0.0, 1.0, 2.0, 3.0, 4.0}}

// crashCallsTools: charge (writes, not idempotent) and fetch (reads,
// idempotent) log each call's key to dir/calls.log and kill the process
// when at is "during:" + that key.
func crashCallsTools(dir, at string) *tool.Registry {
	reg := &tool.Registry{}
	mk := func(name string, idempotent bool) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Effect: tool.EffectWrite, Idempotent: idempotent}, func(ctx context.Context, args any) (any, error) {
			key := tool.CallInfoFrom(ctx).IdempotencyKey
			f, err := os.OpenFile(filepath.Join(dir, "calls.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			_, err = f.WriteString(key + "\n")
			f.Close()
			if err != nil {
				return nil, err
			}
			if at == "during:"+key {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return map[string]any{"by": name, "args": args}, nil
		})
	}
	for _, t := range []tool.Tool{mk("charge", false), mk("fetch", true)} {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	return reg
}

// crashCallsModels answers the plan step plans times: a parent that asked
// the planner again would get no plan. The plan's steps run one after the
// other (depends_on), so each crash point leaves one state.
func crashCallsModels(plans int) *model.Registry {
	var replies []scripted.Reply
	for range plans {
		replies = append(replies, scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "charge", "steps": []any{
			map[string]any{"id": "a", "tool": "charge", "args": map[string]any{"n": "a"}},
			map[string]any{"id": "b", "tool": "charge", "depends_on": []any{"a"}, "args": map[string]any{"n": "b"}},
			map[string]any{"id": "c", "tool": "charge", "depends_on": []any{"b"}, "args": map[string]any{"n": "c"}},
		}}})
	}
	reg := &model.Registry{}
	reg.SetFallback(scripted.New(replies))
	return reg
}

// callKillingStore kills the process instead of committing the start of
// the call whose key is at's after "before:".
type callKillingStore struct {
	store.Store
	at string
}

func (k *callKillingStore) Commit(ctx context.Context, t *store.Transition) error {
	for _, ev := range t.Events {
		if c := ev.Call; c != nil && k.at == "before:"+c.Key && c.Status == store.CallStarted {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return k.Store.Commit(ctx, t)
}

func crashCallsFlowFor(t testing.TB, reg *tool.Registry) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte(crashCallsFlow), "crash_calls.yaml", &flow.Options{
		Tools:  specsOf(reg),
		Models: func(string) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCrashCallsChild is the child's body; it does nothing in a normal run.
func TestCrashCallsChild(t *testing.T) {
	at := os.Getenv("REIN_CRASH_CALLS_AT")
	if at == "" {
		t.Skip("the call-record crash test's child process (run by TestCrashResumesFromCallRecords)")
	}
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := crashCallsTools(dir, at)
	e := engine.New(engine.Config{Tools: reg, Models: crashCallsModels(1), Store: &callKillingStore{Store: st, at: at}})
	_, err = e.Run(context.Background(), crashCallsFlowFor(t, reg), crashCallsInput, &engine.RunOptions{RunID: crashCallsRun})
	t.Fatalf("the child was meant to die at %s, but its run returned (%v)", at, err)
}

// TestCrashResumesFromCallRecords: a run killed in the middle of a
// for_each or a plan step resumes with the items and plan steps that had
// not settled — each settled one is called exactly once in all — and a
// call to a tool that is not idempotent that was in flight is the only
// thing a person is asked about.
func TestCrashResumesFromCallRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	r := crashCallsRun
	cases := []struct {
		at string
		// doubt, when set, is what the unknown approval must name; the
		// person approves and the run is resumed again.
		doubt, step, kept string
		// calls by key prefix, after the run succeeded.
		calls map[string]int
	}{
		// killed before item 3's start was committed: 0-2 are kept, 3 and
		// 4 run, nobody is asked.
		{at: "before:" + r + "/each[3]/1", calls: map[string]int{"each[0]": 1, "each[1]": 1, "each[2]": 1, "each[3]": 1, "each[4]": 1, "safe[0]": 1, "safe[4]": 1, "plan1/a": 1, "plan1/c": 1}},
		// killed while item 2 ran: only item 2 is in doubt; approved, it
		// runs again (a new attempt), and 0 and 1 do not.
		{at: "during:" + r + "/each[2]/1", doubt: "item 2 (tool charge, idempotency key " + r + "/each[2]/1)", step: "each", kept: "the 2 calls that succeeded are kept",
			calls: map[string]int{"each[0]": 1, "each[1]": 1, "each[2]": 2, "each[3]": 1, "each[4]": 1, "safe[0]": 1}},
		// an idempotent tool: item 2 runs again with the same key, unasked.
		{at: "during:" + r + "/safe[2]/1", calls: map[string]int{"each[0]": 1, "each[4]": 1, "safe[0]": 1, "safe[1]": 1, "safe[2]/1": 2, "safe[3]": 1, "safe[4]": 1}},
		// killed while plan step b ran: the same plan continues (the
		// planner is not asked again), a is not run again, b is in doubt.
		{at: "during:" + r + "/pl/1/plan1/b", doubt: "plan step b of plan 1 (tool charge, idempotency key " + r + "/pl/1/plan1/b)", step: "pl", kept: "the 1 call that succeeded is kept",
			calls: map[string]int{"plan1/a": 1, "plan1/b": 2, "plan1/c": 1, "each[0]": 1}},
		// killed before c started: a and b are kept, c runs, nobody is asked.
		{at: "before:" + r + "/pl/1/plan1/c", calls: map[string]int{"plan1/a": 1, "plan1/b": 1, "plan1/c": 1, "each[0]": 1, "safe[4]": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.at, func(t *testing.T) {
			t.Parallel()
			dir, st := killedChild(t, "TestCrashCallsChild", "REIN_CRASH_CALLS_AT="+tc.at)
			ctx := context.Background()
			reg := crashCallsTools(dir, "")
			plans := 1 // the planner was not asked before the crash
			if strings.Contains(tc.at, "/pl/") {
				plans = 0 // it was, and it is not asked again
			}
			e := engine.New(engine.Config{Tools: reg, Models: crashCallsModels(plans), Store: st, Clock: pastLease(t, st, r)})
			f := crashCallsFlowFor(t, reg)
			res, err := e.Resume(ctx, f, r)
			if err != nil {
				t.Fatal(err)
			}
			if tc.doubt != "" {
				if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].Kind != store.KindUnknown || res.Pending[0].StepID != tc.step {
					t.Fatalf("after resume: %s, pending %+v; want %s unknown", res.Status, res.Pending, tc.step)
				}
				if msg := res.Pending[0].Message; !strings.Contains(msg, tc.doubt) || !strings.Contains(msg, tc.kept) {
					t.Fatalf("the approval asks %q; want it to name %q and say %q", msg, tc.doubt, tc.kept)
				}
				if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: r, StepID: tc.step, Status: store.ApprovalApproved}); err != nil {
					t.Fatal(err)
				}
				if res, err = e.Resume(ctx, f, r); err != nil {
					t.Fatal(err)
				}
			}
			if res.Status != trace.RunSucceeded {
				t.Fatalf("after resume: %s (%+v), want succeeded", res.Status, res.Error)
			}
			keys := readLines(t, filepath.Join(dir, "calls.log"))
			for prefix, want := range tc.calls {
				var got []string
				for _, k := range keys {
					if strings.Contains(k, "/"+prefix) {
						got = append(got, k)
					}
				}
				if len(got) != want {
					t.Errorf("%s was called %d times, want %d: %v", prefix, len(got), want, got)
				}
			}
			for _, id := range []string{"each", "safe"} {
				items, _ := res.Outputs[id].([]any)
				for k, v := range items {
					if got := fmt.Sprint(v); got != fmt.Sprintf("map[args:map[n:%d] by:%s]", k, map[string]string{"each": "charge", "safe": "fetch"}[id]) {
						t.Errorf("%s item %d = %s", id, k, got)
					}
				}
				if len(items) != 5 {
					t.Errorf("%s output %v, want 5 items", id, res.Outputs[id])
				}
			}
			pl, _ := res.Outputs["pl"].(map[string]any)
			if outs, _ := pl["outputs"].(map[string]any); len(outs) != 3 || fmt.Sprint(pl["result"]) != "map[args:map[n:c] by:charge]" {
				t.Errorf("plan output %v", res.Outputs["pl"])
			}
		})
	}
}
