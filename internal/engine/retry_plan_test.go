package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The retried-plan test: pl's planner proposes a plan of two charges, a
// then b, each answering with its idempotency key; after fails until
// dir/up exists. A child process runs the flow (pl's plan succeeds, after
// fails), retries it from pl (rein runs retry --from pl: the planner
// proposes again) and dies by SIGKILL in plan step b's retried call,
// after a was made again. The parent resumes: b's output from before the
// retry must not settle the retried plan step.
const retryPlanFlow = `name: retry_plan
steps:
  - {id: pl, type: plan, model: m, goal: "charge a, then b", tools: [charge]}
  - {id: after, tool: verify, args: {paid: "{pl.result}"}}
`

// retryPlanModels answers pl's planner plans times, the same plan each.
func retryPlanModels(plans int) *model.Registry {
	var replies []scripted.Reply
	for range plans {
		replies = append(replies, scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "charge", "steps": []any{
			map[string]any{"id": "a", "tool": "charge", "args": map[string]any{"n": "a"}},
			map[string]any{"id": "b", "tool": "charge", "depends_on": []any{"a"}, "args": map[string]any{"n": "b"}},
		}}})
	}
	reg := &model.Registry{}
	reg.SetFallback(scripted.New(replies))
	return reg
}

// retryPlanEngine builds the flow's engine over dir and st, its planner
// answering plans times; every tool appends its key (without the run id)
// to dir/calls, and charge kills the process when its key is kill.
func retryPlanEngine(t testing.TB, dir string, st store.Store, plans int, kill string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	t.Helper()
	logCall := func(ctx context.Context) (string, error) {
		info := tool.CallInfoFrom(ctx)
		key := strings.TrimPrefix(info.IdempotencyKey, info.RunID+"/")
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(key + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return key, err
	}
	reg := &tool.Registry{}
	for _, tl := range []tool.Tool{
		tool.Func(tool.Spec{Name: "charge", Effect: tool.EffectExternal, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
			key, err := logCall(ctx)
			if err == nil && key == kill {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return map[string]any{"key": key}, err
		}),
		tool.Func(tool.Spec{Name: "verify", Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, args any) (any, error) {
			if _, err := logCall(ctx); err != nil {
				return nil, err
			}
			if _, err := os.Stat(filepath.Join(dir, "up")); err != nil {
				return nil, fault.Errorf(fault.Business, "the ledger is closed")
			}
			return args, nil
		}),
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Parse([]byte(retryPlanFlow), "retry_plan.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: retryPlanModels(plans), Store: st, Clock: clock}), f
}

// TestRetryPlanChild is the child's body; it does nothing in a normal run.
func TestRetryPlanChild(t *testing.T) {
	kill := os.Getenv("REIN_RETRY_PLAN_KILL")
	if kill == "" {
		t.Skip("the retried-plan test's child process (run by TestRetriedPlanStepsAreMadeAgain)")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := retryPlanEngine(t, dir, st, 1, "", nil)
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "rp"})
	if err != nil || res.Status != trace.RunFailed || res.Steps["pl"].Status != trace.StepSucceeded {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e, f = retryPlanEngine(t, dir, st, 1, kill, nil)
	_, err = e.Retry(ctx, f, "rp", "pl")
	t.Fatalf("the child was meant to die in call %s, but its retry returned (%v)", kill, err)
}

// TestRetriedPlanStepsAreMadeAgain: a plan step retried with rein runs
// retry --from and killed in a plan step's retried call is not settled by
// that plan step's output from before the retry (it is stale): the
// resume continues the retried attempt's plan (its planner is not asked
// again), keeps a, made again before the kill, and makes b again under
// the retried attempt's key, pl/2/plan1/b (charge is idempotent: no
// start was recorded, nothing is in doubt).
func TestRetriedPlanStepsAreMadeAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	ctx := context.Background()
	dir, st := killedChild(t, "TestRetryPlanChild", "REIN_RETRY_PLAN_KILL=pl/2/plan1/b")
	e, f := retryPlanEngine(t, dir, st, 0, "", pastLease(t, st, "rp"))
	res, err := e.Resume(ctx, f, "rp")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded {
		t.Fatalf("after resume: %s (%+v)", res.Status, res.Error)
	}
	pl, _ := res.Outputs["pl"].(map[string]any)
	outs, _ := pl["outputs"].(map[string]any)
	got := map[string]any{}
	for id, v := range outs {
		got[id] = v.(map[string]any)["key"]
	}
	if got["a"] != "pl/2/plan1/a" || got["b"] != "pl/2/plan1/b" || len(got) != 2 {
		t.Fatalf("pl's plan steps came from the calls keyed %v, want the retried attempt's pl/2/plan1/a and pl/2/plan1/b", got)
	}
	want := []string{"pl/1/plan1/a", "pl/1/plan1/b", "after/1", "pl/2/plan1/a", "pl/2/plan1/b", "pl/2/plan1/b", "after/2"}
	if calls := readLines(t, filepath.Join(dir, "calls")); !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
}
