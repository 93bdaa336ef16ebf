package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The reconcile tests kill a child process (this test binary) while its
// refund tool runs: the refund is in the ledger file, its settlement is
// not in the journal. The resume here asks the tool's check.
const reconcileFlow = `name: refunds
steps:
  - {id: refund, tool: refund, args: {order: "o-1", cents: 500}%s}
  - {id: after, tool: note, args: {refund: "{refund.refund_id}"}}
`

// reconcileTools: refund appends its idempotency key to dir/ledger and,
// for the order dieOn, kills the process before it returns; its check answers by
// mode: "ledger" (happened when the key is in the ledger), "no" (did not
// happen), "fail" (cannot say), "bad" (happened, with an output that
// breaks the tool's output schema).
func reconcileTools(dir, dieOn, mode string) *tool.Registry {
	ledger := filepath.Join(dir, "ledger")
	refund := tool.Func(tool.Spec{Name: "refund", Effect: tool.EffectExternal,
		OutputSchema: []byte(`{"type":"object","required":["refund_id"],"properties":{"refund_id":{"type":"string"}}}`)},
		func(ctx context.Context, args any) (any, error) {
			key := tool.CallInfoFrom(ctx).IdempotencyKey
			f, err := os.OpenFile(ledger, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			_, err = f.WriteString(key + "\n")
			f.Close()
			if err != nil {
				return nil, err
			}
			if dieOn != "" && args.(map[string]any)["order"] == dieOn {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return map[string]any{"refund_id": "r:" + key}, nil
		})
	checked := tool.WithCheck(refund, func(ctx context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
		if req.IdempotencyKey != tool.CallInfoFrom(ctx).IdempotencyKey || string(req.OutputSchema) == "" {
			return tool.CheckResult{}, errors.New("the check was not given the call's key and output schema")
		}
		switch mode {
		case "no":
			return tool.CheckResult{}, nil
		case "fail":
			return tool.CheckResult{}, errors.New("refund API unavailable")
		case "bad":
			return tool.CheckResult{Happened: true, Output: map[string]any{"id": 1}}, nil
		}
		b, err := os.ReadFile(ledger)
		if err != nil {
			return tool.CheckResult{}, err
		}
		if slices.Contains(strings.Fields(string(b)), req.IdempotencyKey) {
			return tool.CheckResult{Happened: true, Output: map[string]any{"refund_id": "r:" + req.IdempotencyKey}}, nil
		}
		return tool.CheckResult{}, nil
	})
	note := tool.Func(tool.Spec{Name: "note", Effect: tool.EffectNone, Idempotent: true}, func(_ context.Context, args any) (any, error) {
		return args, nil
	})
	down := tool.Func(tool.Spec{Name: "down", Effect: tool.EffectNone}, func(context.Context, any) (any, error) {
		return nil, fault.New(fault.Business, errors.New("down"))
	})
	// downsafe fails too, and says it is idempotent: a step of it found in
	// flight would run again unasked, were its fallback not recorded.
	downsafe := tool.Func(tool.Spec{Name: "downsafe", Effect: tool.EffectNone, Idempotent: true}, func(context.Context, any) (any, error) {
		return nil, fault.New(fault.Business, errors.New("down"))
	})
	reg := &tool.Registry{}
	for _, t := range []tool.Tool{checked, note, down, downsafe} {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	return reg
}

// reconcileEachFlow refunds three orders, one item each, one at a time (so
// the kill on o-2 leaves exactly that item in doubt).
const reconcileEachFlow = `name: refunds_each
steps:
  - id: refund
    tool: refund
    for_each: '["o-1", "o-2", "o-3"]'
    concurrency: 1
    args: {order: "{item}", cents: 500}
`

// reconcileFallbackFlow is reconcileEachFlow whose items' tool fails:
// each item's fallback, refund, makes the refund.
const reconcileFallbackFlow = `name: refunds_fallback
steps:
  - id: refund
    tool: down
    for_each: '["o-1", "o-2", "o-3"]'
    concurrency: 1
    args: {order: "{item}", cents: 500}
    on_error: fallback
    fallback: {tool: refund}
`

// reconcileRepeatFlow refunds o-0, o-1 and o-2, a repeat round each (the
// kill on o-1 leaves round 2 in doubt).
const reconcileRepeatFlow = `name: refunds_repeat
steps:
  - id: refund
    tool: refund
    repeat: {until: "iteration >= 2", max: 5}
    args: {order: "o-{iteration}", cents: 500}
`

// reconcileStepFallbackFlow: the step's own tool fails (and is
// idempotent), its fallback makes the refund.
const reconcileStepFallbackFlow = `name: refunds_step_fallback
steps:
  - {id: refund, tool: downsafe, args: {order: "o-1", cents: 500}, on_error: fallback, fallback: {tool: refund}}
  - {id: after, tool: note, args: {refund: "{refund.refund_id}"}}
`

// reconcilePlanFallbackFlow: the plan step's planner has no answer (the
// step fails), its fallback makes the refund.
const reconcilePlanFallbackFlow = `name: refunds_plan_fallback
steps:
  - id: refund
    type: plan
    model: m
    goal: "refund o-1"
    tools: [refund]
    on_error: fallback
    fallback: {tool: refund, args: {order: "o-1", cents: 500}}
  - {id: after, tool: note, args: {refund: "{refund.refund_id}"}}
`

// reconcileModels answers nothing: a plan step's planner fails.
func reconcileModels() *model.Registry {
	reg := &model.Registry{}
	reg.SetFallback(scripted.New(nil))
	return reg
}

func reconcileFlowFor(t testing.TB, reg *tool.Registry, child string) *flow.Flow {
	t.Helper()
	text := strings.Replace(reconcileFlow, "%s", "", 1)
	switch child {
	case "approved":
		text = strings.Replace(reconcileFlow, "%s", ", approval: required", 1)
	case "each":
		text = reconcileEachFlow
	case "fallback":
		text = reconcileFallbackFlow
	case "repeat":
		text = reconcileRepeatFlow
	case "stepfallback":
		text = reconcileStepFallbackFlow
	case "planfallback":
		text = reconcilePlanFallbackFlow
	}
	f, err := flow.Parse([]byte(text), "refunds.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReconcileChild is the child's body: it runs the refund flow and dies
// in the refund (REIN_RECONCILE=approved: the refund waits for approval
// first; the child approves it and resumes, then dies).
func TestReconcileChild(t *testing.T) {
	mode := os.Getenv("REIN_RECONCILE")
	if mode == "" {
		t.Skip("the child process of TestResumeReconcilesWithCheck")
	}
	dir := os.Getenv("REIN_CRASH_DIR")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dieOn := "o-1"
	if mode == "each" || mode == "fallback" {
		dieOn = "o-2"
	}
	reg := reconcileTools(dir, dieOn, "")
	e := engine.New(engine.Config{Tools: reg, Models: reconcileModels(), Store: st})
	f := reconcileFlowFor(t, reg, mode)
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "refund-run"})
	if mode == "approved" && err == nil && res.Status == trace.RunWaiting {
		if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "refund-run", StepID: "refund", Status: store.ApprovalApproved, DecidedBy: "ann"}); err != nil {
			t.Fatal(err)
		}
		_, err = e.Resume(ctx, f, "refund-run")
	}
	t.Fatalf("the child was meant to die in the refund, but its run returned (%v)", err)
}

// TestResumeReconcilesWithCheck: a refund killed mid-call is reconciled by
// its tool's check: it happened → the step settles with the check's
// output, made once, and the run goes on without a person; it did not →
// made again (same key) only when a person had approved it, else a person
// decides, told what the check found; the check cannot say (an error, an
// output that breaks the tool's schema) → a person decides, told why.
func TestResumeReconcilesWithCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	cases := []struct {
		name, child, mode string
		status            trace.RunStatus
		refunds           int
		reconciled, asked string
	}{
		{"happened", "plain", "ledger", trace.RunSucceeded, 1, journal.ReconciledHappened, ""},
		{"not happened, not approved", "plain", "no", trace.RunWaiting, 1, journal.ReconciledNotHappened, "check found that the call refund-run/refund/1 did not take effect"},
		{"not happened, approved", "approved", "no", trace.RunSucceeded, 2, "", ""},
		{"cannot say", "plain", "fail", trace.RunWaiting, 1, "", "could not say whether the call refund-run/refund/1 took effect: refund API unavailable"},
		{"for_each item happened", "each", "ledger", trace.RunSucceeded, 3, journal.ReconciledHappened, ""},
		{"for_each item's fallback happened", "fallback", "ledger", trace.RunSucceeded, 3, journal.ReconciledHappened, ""},
		{"for_each item's fallback did not", "fallback", "no", trace.RunWaiting, 2, journal.ReconciledNotHappened, "check found that the call refund-run/refund[1]/fallback/1 did not take effect"},
		{"breaks the schema", "plain", "bad", trace.RunWaiting, 1, "", "its output"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, st := killedChild(t, "TestReconcileChild", "REIN_RECONCILE="+tc.child)
			ctx := context.Background()
			reg := reconcileTools(dir, "", tc.mode)
			e := engine.New(engine.Config{Tools: reg, Store: st, Clock: pastLease(t, st, "refund-run")})
			res, err := e.Resume(ctx, reconcileFlowFor(t, reg, tc.child), "refund-run")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Fatalf("after resume: %s (%+v), want %s", res.Status, res.Error, tc.status)
			}
			keys := readLines(t, filepath.Join(dir, "ledger"))
			each := tc.child == "each" || tc.child == "fallback"
			if len(keys) != tc.refunds || !each && keys[0] != keys[len(keys)-1] || each && len(slices.Compact(slices.Sorted(slices.Values(keys)))) != tc.refunds {
				t.Fatalf("ledger %v: want %d refunds (one key each, an item's once)", keys, tc.refunds)
			}
			calls, err := st.Calls(ctx, "refund-run", "refund")
			if err != nil {
				t.Fatal(err)
			}
			var reconciled []string
			for _, c := range calls {
				if c.Reconciled != "" {
					reconciled = append(reconciled, c.Reconciled)
				}
			}
			if tc.reconciled != "" && (len(reconciled) != 1 || reconciled[0] != tc.reconciled) {
				t.Fatalf("call records of refund say reconciled %v, want %q", reconciled, tc.reconciled)
			}
			switch tc.status {
			case trace.RunSucceeded:
				if each {
					if got := res.Outputs["refund"].([]any); len(got) != 3 || got[1].(map[string]any)["refund_id"] != "r:"+keys[1] {
						t.Fatalf("refund outputs %v: item 1's is the check's", got)
					}
					break
				}
				if got := res.Outputs["after"]; got.(map[string]any)["refund"] != "r:"+keys[0] {
					t.Fatalf("after got %v, want the refund the ledger holds (%s)", got, keys[0])
				}
			case trace.RunWaiting:
				if res.Steps["refund"].Status != trace.StepUnknown || len(res.Pending) != 1 || !strings.Contains(res.Pending[0].Message, tc.asked) {
					t.Fatalf("refund %s, pending %+v: want a person asked, told %q", res.Steps["refund"].Status, res.Pending[0], tc.asked)
				}
			}
		})
	}
}

// TestResumeReconcilesAPlanStep: the call-record crash child killed while
// plan step b ran (TestCrashCallsChild); charge's check (here over
// calls.log) finds b's key, so the plan continues from b's output without a
// person: a and b are made once, c once, and b's record says reconciled.
func TestResumeReconcilesAPlanStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	r := crashCallsRun
	dir, st := killedChild(t, "TestCrashCallsChild", "REIN_CRASH_CALLS_AT=during:"+r+"/pl/1/plan1/b")
	ctx := context.Background()
	plain := crashCallsTools(dir, "")
	reg := &tool.Registry{}
	for _, name := range []string{"charge", "fetch"} {
		tl, _ := plain.Lookup(name)
		if name == "charge" {
			tl = tool.WithCheck(tl, func(_ context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
				if !slices.Contains(readLines(t, filepath.Join(dir, "calls.log")), req.IdempotencyKey) {
					return tool.CheckResult{}, nil
				}
				return tool.CheckResult{Happened: true, Output: map[string]any{"by": "charge", "args": req.Args}}, nil
			})
		}
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	e := engine.New(engine.Config{Tools: reg, Models: crashCallsModels(0), Store: st, Clock: pastLease(t, st, r)})
	res, err := e.Resume(ctx, crashCallsFlowFor(t, reg), r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded {
		t.Fatalf("after resume: %s (%+v), pending %+v; want succeeded without a person", res.Status, res.Error, res.Pending)
	}
	for _, step := range []string{"a", "b", "c"} {
		var n int
		for _, k := range readLines(t, filepath.Join(dir, "calls.log")) {
			if strings.HasSuffix(k, "/plan1/"+step) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("plan step %s was made %d times, want once", step, n)
		}
	}
	calls, err := st.Calls(ctx, r, "pl")
	if err != nil {
		t.Fatal(err)
	}
	var reconciled []string
	for _, c := range calls {
		if c.Reconciled != "" {
			reconciled = append(reconciled, c.PlanStep+" "+c.Reconciled)
		}
	}
	if strings.Join(reconciled, ",") != "b "+journal.ReconciledHappened {
		t.Fatalf("reconciled records %v", reconciled)
	}
}

// TestResumeReconcilesRoundsAndFallbacks: the same rule for a repeat
// round and for the fallback of a plain step and of a plan step, each
// killed mid-call (a real SIGKILL of a child process between the refund
// and its record). The round's call record says which round was in
// doubt: the loop goes on from there, its settled rounds kept; a
// fallback's record says the step's own call had failed for good, so
// only the fallback is decided (and made again, never the step's call).
// The refund ledger counts the executions.
func TestResumeReconcilesRoundsAndFallbacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	cases := []struct {
		name, child, mode string
		status            trace.RunStatus
		refunds           int
		reconciled, asked string
		// approve: a person approves the call in doubt, and the run is
		// resumed again: it must then succeed with refunds+1 in all.
		approve bool
	}{
		{"repeat round happened", "repeat", "ledger", trace.RunSucceeded, 3, journal.ReconciledHappened, "", false},
		{"repeat round did not", "repeat", "no", trace.RunWaiting, 2, journal.ReconciledNotHappened, "check found that the call refund-run/refund#2/1 did not take effect", true},
		{"repeat round cannot say", "repeat", "fail", trace.RunWaiting, 2, "", "could not say whether the call refund-run/refund#2/1 took effect", true},
		{"step fallback happened", "stepfallback", "ledger", trace.RunSucceeded, 1, journal.ReconciledHappened, "", false},
		{"step fallback did not", "stepfallback", "no", trace.RunWaiting, 1, journal.ReconciledNotHappened, "check found that the call refund-run/refund/fallback/1 did not take effect", true},
		{"plan fallback happened", "planfallback", "ledger", trace.RunSucceeded, 1, journal.ReconciledHappened, "", false},
		{"plan fallback cannot say", "planfallback", "fail", trace.RunWaiting, 1, "", "could not say whether the call refund-run/refund/fallback/1 took effect", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, st := killedChild(t, "TestReconcileChild", "REIN_RECONCILE="+tc.child)
			ctx := context.Background()
			reg := reconcileTools(dir, "", tc.mode)
			f := reconcileFlowFor(t, reg, tc.child)
			e := engine.New(engine.Config{Tools: reg, Models: reconcileModels(), Store: st, Clock: pastLease(t, st, "refund-run")})
			res, err := e.Resume(ctx, f, "refund-run")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Fatalf("after resume: %s (%+v), pending %+v; want %s", res.Status, res.Error, res.Pending, tc.status)
			}
			ledger := filepath.Join(dir, "ledger")
			keys := readLines(t, ledger)
			if len(keys) != tc.refunds || len(slices.Compact(slices.Sorted(slices.Values(keys)))) != tc.refunds {
				t.Fatalf("ledger %v: want %d refunds, each key once", keys, tc.refunds)
			}
			calls, err := st.Calls(ctx, "refund-run", "refund")
			if err != nil {
				t.Fatal(err)
			}
			var reconciled []string
			for _, c := range calls {
				if c.Reconciled != "" {
					reconciled = append(reconciled, c.Reconciled)
				}
			}
			if tc.reconciled != "" && (len(reconciled) != 1 || reconciled[0] != tc.reconciled) {
				t.Fatalf("call records of refund say reconciled %v, want %q", reconciled, tc.reconciled)
			}
			if tc.status == trace.RunWaiting {
				if res.Steps["refund"].Status != trace.StepUnknown || len(res.Pending) != 1 || !strings.Contains(res.Pending[0].Message, tc.asked) {
					t.Fatalf("refund %s, pending %+v: want a person asked, told %q", res.Steps["refund"].Status, res.Pending, tc.asked)
				}
				if !tc.approve {
					return
				}
				if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "refund-run", StepID: "refund", Status: store.ApprovalApproved, DecidedBy: "ann"}); err != nil {
					t.Fatal(err)
				}
				if res, err = e.Resume(ctx, f, "refund-run"); err != nil {
					t.Fatal(err)
				}
				if res.Status != trace.RunSucceeded {
					t.Fatalf("after approval: %s (%+v)", res.Status, res.Error)
				}
				keys = readLines(t, ledger)
				// the call in doubt made once more — a round at its next
				// attempt (a new key), a fallback with its one key (its
				// step's call failed for good and is not made again) —
				// and round 3, which had not been made.
				want, distinct := tc.refunds+1, tc.refunds
				if tc.child == "repeat" {
					want, distinct = want+1, want+1
				}
				if len(keys) != want || len(slices.Compact(slices.Sorted(slices.Values(keys)))) != distinct {
					t.Fatalf("after approval the ledger holds %v: want the call in doubt made once more, and only what had not been made", keys)
				}
			}
			last := keys[len(keys)-1]
			switch tc.child {
			case "repeat":
				// the loop went on from the round in doubt: o-2 once, the
				// step's output the last round's.
				if got := res.Outputs["refund"].(map[string]any)["refund_id"]; got != "r:"+last || !strings.Contains(last, "#3/") {
					t.Fatalf("repeat output %v, ledger %v: want the third round's", got, keys)
				}
			default:
				if got := res.Outputs["after"].(map[string]any)["refund"]; got != "r:"+last && got != "r:"+keys[0] {
					t.Fatalf("after got %v, ledger %v", got, keys)
				}
				if s := res.Steps["refund"].Status; s != trace.StepFellBack {
					t.Fatalf("refund %s, want fell_back", s)
				}
			}
		})
	}
}
