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
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The retried-fallback test: pay's own tool always fails and its fallback
// (backup) answers with its idempotency key; after fails until dir/up
// exists. A child process runs the flow (pay falls back, after fails),
// retries it from pay (rein runs retry --from pay) and dies by SIGKILL in
// pay's retried call, before any fallback of the retry was made. The
// parent resumes: the fallback made before the retry must not settle the
// retried step.
const retryFallbackFlow = `name: retry_fallback
steps:
  - {id: pay, tool: charge, on_error: fallback, fallback: {tool: backup}}
  - {id: after, tool: verify, args: {paid: "{pay.key}"}}
`

// retryFallbackEngine builds the flow's engine over dir and st; every tool
// appends its key (without the run id) to dir/calls, and charge kills the
// process when its key is kill.
func retryFallbackEngine(t testing.TB, dir string, st store.Store, kill string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	t.Helper()
	logCall := func(ctx context.Context) (string, error) {
		info := tool.CallInfoFrom(ctx)
		key := strings.TrimPrefix(info.IdempotencyKey, info.RunID+"/")
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(key + "\n")
		f.Close()
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
			return nil, fault.Errorf(fault.Business, "the card is declined")
		}),
		tool.Func(tool.Spec{Name: "backup", Effect: tool.EffectExternal, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
			key, err := logCall(ctx)
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
	f, err := flow.Parse([]byte(retryFallbackFlow), "retry_fallback.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Store: st, Clock: clock}), f
}

// TestRetryFallbackChild is the child's body; it does nothing in a normal run.
func TestRetryFallbackChild(t *testing.T) {
	kill := os.Getenv("REIN_RETRY_FALLBACK_KILL")
	if kill == "" {
		t.Skip("the retried-fallback test's child process (run by TestRetriedFallbackIsMadeAgain)")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := retryFallbackEngine(t, dir, st, "", nil)
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "rf"})
	if err != nil || res.Status != trace.RunFailed || res.Steps["pay"].Status != trace.StepFellBack {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e, f = retryFallbackEngine(t, dir, st, kill, nil)
	_, err = e.Retry(ctx, f, "rf", "pay")
	t.Fatalf("the child was meant to die in call %s, but its retry returned (%v)", kill, err)
}

// TestRetriedFallbackIsMadeAgain: a step retried with rein runs retry
// --from and killed before its fallback was made again is not settled by
// the fallback made before the retry (its recorded output is stale): the
// resume runs the step again (its tool is idempotent), and its fallback
// is made again under the retried attempt's key, pay/fallback/2.
func TestRetriedFallbackIsMadeAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	ctx := context.Background()
	dir, st := killedChild(t, "TestRetryFallbackChild", "REIN_RETRY_FALLBACK_KILL=pay/2")
	e, f := retryFallbackEngine(t, dir, st, "", pastLease(t, st, "rf"))
	res, err := e.Resume(ctx, f, "rf")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded || res.Steps["pay"].Status != trace.StepFellBack {
		t.Fatalf("after resume: %s (%+v), pay %s", res.Status, res.Error, res.Steps["pay"].Status)
	}
	if got := res.Outputs["pay"].(map[string]any)["key"]; got != "pay/fallback/2" {
		t.Fatalf("pay's output came from the fallback keyed %v, want the retried attempt's pay/fallback/2", got)
	}
	calls := readLines(t, filepath.Join(dir, "calls"))
	want := []string{"pay/1", "pay/fallback/1", "after/1", "pay/2", "pay/2", "pay/fallback/2", "after/2"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
}
