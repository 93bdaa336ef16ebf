package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The retry crash test: a child process (this test binary) runs retryFlow
// until notify fails, then retries the run (rein runs retry) and dies by
// SIGKILL at one commit point of that: before the retry's reopening is
// committed, while the retried step's tool runs, or while the next
// non-idempotent step's does. Every tool appends its key (step/attempt) to
// calls, which survives the kill. The parent resumes as a person would:
// nothing is made twice without a person, nothing is lost.

// retryCrashEngine is retryEngine's flow and tools over dir and st; the
// tools kill the process when at is "during:<step>/<attempt>".
func retryCrashEngine(t testing.TB, dir string, st store.Store, at string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	t.Helper()
	logCall := func(ctx context.Context) error {
		info := tool.CallInfoFrom(ctx)
		key := strings.TrimPrefix(info.IdempotencyKey, info.RunID+"/")
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(key + "\n")
		f.Close()
		if err == nil && at == "during:"+key {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return err
	}
	reg := &tool.Registry{}
	for _, tl := range []tool.Tool{
		tool.Func(tool.Spec{Name: "charge", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
			return map[string]any{"ok": true}, logCall(ctx)
		}),
		tool.Func(tool.Spec{Name: "notify", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
			if err := logCall(ctx); err != nil {
				return nil, err
			}
			if _, err := os.Stat(filepath.Join(dir, "up")); err != nil {
				return nil, fault.Errorf(fault.Transient, "the mail server is down")
			}
			return map[string]any{"sent": true}, nil
		}),
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Parse([]byte(retryFlow), "retry.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Store: st, Clock: clock}), f
}

// reopenKillingStore dies instead of committing the retry's reopening.
type reopenKillingStore struct{ store.Store }

func (k reopenKillingStore) Commit(ctx context.Context, t *store.Transition) error {
	for _, ev := range t.Events {
		if ev.Kind == journal.RunRetried {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return k.Store.Commit(ctx, t)
}

// TestRetryCrashChild is the child's body; it does nothing in a normal run.
func TestRetryCrashChild(t *testing.T) {
	at := os.Getenv("REIN_RETRY_CRASH_AT")
	if at == "" {
		t.Skip("the retry crash test's child process (run by TestRetryCrash)")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := retryCrashEngine(t, dir, st, "", nil)
	if res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "rt"}); err != nil || res.Status != trace.RunFailed {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var s store.Store = st
	if at == "before:reopen" {
		s = reopenKillingStore{st}
	}
	e, f = retryCrashEngine(t, dir, s, at, nil)
	_, err = e.Retry(ctx, f, "rt", "")
	t.Fatalf("the child was meant to die at %s, but its retry returned (%v)", at, err)
}

// TestRetryCrash: see above. Killed before the reopening commits, the run
// is still failed and a second retry makes notify's attempt 2 once; killed
// in notify's attempt 2 or in done, that call is unknown and a person
// settles it: each call is made once.
func TestRetryCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	for _, at := range []string{"before:reopen", "during:notify/2", "during:done/1"} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir, st := killedChild(t, "TestRetryCrashChild", "REIN_RETRY_CRASH_AT="+at)
			e, f := retryCrashEngine(t, dir, st, "", pastLease(t, st, "rt"))
			res, err := e.Resume(ctx, f, "rt")
			if err != nil {
				t.Fatal(err)
			}
			switch at {
			case "before:reopen":
				if res.Status != trace.RunFailed {
					t.Fatalf("resume after a retry killed before it reopened the run: %s, want failed", res.Status)
				}
				if res, err = e.Retry(ctx, f, "rt", ""); err != nil || res.Status != trace.RunSucceeded {
					t.Fatalf("retry again: %v %+v", err, res)
				}
			default:
				step := strings.TrimSuffix(strings.TrimPrefix(at, "during:"), "/"+at[len(at)-1:])
				if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != step || res.Pending[0].Kind != store.KindUnknown {
					t.Fatalf("status %s, pending %+v: want %s unknown", res.Status, res.Pending, step)
				}
				if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "rt", StepID: step, Status: store.ApprovalSettled,
					Output: []byte(`{"ok": true, "sent": true}`), DecidedBy: "ops"}); err != nil {
					t.Fatal(err)
				}
				if res, err = e.Resume(ctx, f, "rt"); err != nil || res.Status != trace.RunSucceeded {
					t.Fatalf("after %s was settled: %v %+v", step, err, res)
				}
			}
			if got := strings.Join(strings.Fields(readFile(t, filepath.Join(dir, "calls"))), " "); got != "charge/1 notify/1 notify/2 done/1" {
				t.Fatalf("calls %q: want each once (charge, notify at attempts 1 and 2, done)", got)
			}
		})
	}
}
