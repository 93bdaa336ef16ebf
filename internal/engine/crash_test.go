package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/clocktest"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The crash test runs a flow in a child process (this test binary, re-run
// with REIN_CRASH_AT set) that kills itself with SIGKILL at one point, then
// resumes the run here from the same SQLite file. Tools count their calls
// in files, which survive the kill.
const crashRunFlow = `name: crash
steps:
  - {id: one, tool: plain, args: {}}
  - {id: idem, tool: idem, args: {}}
  - {id: once, tool: once, args: {}}
  - {id: last, tool: plain, args: {}}
  - {id: pure, tool: pure, args: {}}
`

// crashTools are the flow's tools: each appends its call's step and
// idempotency key to dir/<step>.log, and kills the process when at says so.
func crashTools(dir, at string) *tool.Registry {
	reg := &tool.Registry{}
	mk := func(name string, effect tool.Effect, idempotent bool) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Effect: effect, Idempotent: idempotent}, func(ctx context.Context, _ any) (any, error) {
			info := tool.CallInfoFrom(ctx)
			f, err := os.OpenFile(filepath.Join(dir, info.StepID+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			_, err = f.WriteString(info.IdempotencyKey + "\n")
			f.Close()
			if err != nil {
				return nil, err
			}
			if at == "during:"+info.StepID {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return map[string]any{"step": info.StepID}, nil
		})
	}
	// pure has no effect and is idempotent: its start is not a barrier of
	// its own (it rides with last's settlement here).
	for _, t := range []tool.Tool{mk("plain", tool.EffectWrite, false), mk("idem", tool.EffectWrite, true),
		mk("once", tool.EffectWrite, false), mk("pure", tool.EffectNone, true)} {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	return reg
}

// killingStore kills the process instead of committing a transition that
// starts (before:STEP) or settles (after:STEP) the named step.
type killingStore struct {
	store.Store
	at string
}

func (k *killingStore) Commit(ctx context.Context, t *store.Transition) error {
	for _, s := range t.Steps {
		if k.at == "before:"+s.StepID && s.Status == trace.StepRunning ||
			k.at == "after:"+s.StepID && s.Status == trace.StepSucceeded {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return k.Store.Commit(ctx, t)
}

func crashFlowFor(t testing.TB, reg *tool.Registry) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte(crashRunFlow), "crash.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	at := os.Getenv("REIN_CRASH_AT")
	if at == "" {
		t.Skip("the crash test's child process (run by TestCrashAndResume)")
	}
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := crashTools(dir, at)
	e := engine.New(engine.Config{Tools: reg, Store: &killingStore{Store: st, at: at}})
	_, err = e.Run(context.Background(), crashFlowFor(t, reg), nil, &engine.RunOptions{RunID: "crash-run"})
	t.Fatalf("the child was meant to die at %s, but its run returned (%v)", at, err)
}

func TestCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	cases := []struct {
		at string
		// calls per step after the resume; keys says how many distinct
		// idempotency keys the idem step saw.
		calls  map[string]int
		status trace.RunStatus
	}{
		// a step's start shares its commit with the settlement of the step
		// before it: killed there, idem (idempotent) runs again with the
		// same key and once starts afresh.
		{"before:once", map[string]int{"one": 1, "idem": 2, "once": 1, "last": 1, "pure": 1}, trace.RunSucceeded},
		{"during:idem", map[string]int{"one": 1, "idem": 2, "once": 1, "last": 1, "pure": 1}, trace.RunSucceeded},
		{"during:once", map[string]int{"one": 1, "idem": 1, "once": 1, "last": 0, "pure": 0}, trace.RunWaiting},
		{"after:once", map[string]int{"one": 1, "idem": 1, "once": 1, "last": 0, "pure": 0}, trace.RunWaiting},
		// one's effect happened, its settlement (shared with idem's start)
		// was not committed: one is unknown until a person settles it.
		{"after:one", map[string]int{"one": 1, "idem": 1, "once": 1, "last": 1, "pure": 1}, trace.RunSucceeded},
		// pure's start rode with last's settlement: killed while it runs,
		// or before its own settlement is committed, it runs again with
		// the same key, and nothing before it does.
		{"during:pure", map[string]int{"one": 1, "idem": 1, "once": 1, "last": 1, "pure": 2}, trace.RunSucceeded},
		{"after:pure", map[string]int{"one": 1, "idem": 1, "once": 1, "last": 1, "pure": 2}, trace.RunSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.at, func(t *testing.T) {
			t.Parallel()
			dir, st := killedChild(t, "TestCrashChild", "REIN_CRASH_AT="+tc.at)
			ctx := context.Background()
			reg := crashTools(dir, "")
			e := engine.New(engine.Config{Tools: reg, Store: st, Clock: pastLease(t, st, "crash-run")})
			f := crashFlowFor(t, reg)
			if strings.HasPrefix(tc.at, "after:one") {
				// the crash came before one's settlement was committed: one
				// is not idempotent, so it is unknown; a person says it
				// happened (settle), and the run goes on without repeating it.
				res, err := e.Resume(ctx, f, "crash-run")
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != trace.RunWaiting || res.Steps["one"].Status != trace.StepUnknown {
					t.Fatalf("status %s, one %s", res.Status, res.Steps["one"].Status)
				}
				if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "crash-run", StepID: "one", Status: store.ApprovalSettled, Output: json.RawMessage(`{"step":"one"}`)}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := e.Resume(ctx, f, "crash-run")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Fatalf("after resume: %s (%+v), want %s", res.Status, res.Error, tc.status)
			}
			for step, want := range tc.calls {
				keys := readLines(t, filepath.Join(dir, step+".log"))
				if len(keys) != want {
					t.Errorf("step %s ran %d times, want %d (keys %v)", step, len(keys), want, keys)
				}
				if (step == "idem" || step == "pure") && len(keys) == 2 && keys[0] != keys[1] {
					t.Errorf("the idempotent step %s was re-run with another key: %v", step, keys)
				}
			}
			if tc.status == trace.RunWaiting {
				if res.Steps["once"].Status != trace.StepUnknown || len(res.Pending) != 1 || res.Pending[0].Kind != store.KindUnknown {
					t.Fatalf("once %s, pending %+v: the non-idempotent step must be marked unknown", res.Steps["once"].Status, res.Pending)
				}
			}
		})
	}
}

// pastLease returns the clock of the engine that takes over the dead
// child's run: the wall clock, read past the expiry of the child's lease
// when that is still ahead. Nobody waits for the lease to lapse; the
// takeover is judged by the clock the engine gives the store. (On Linux
// the engine takes a dead local owner's lease at once anyway, on other
// systems it needs the lease expired.)
func pastLease(t *testing.T, st store.Store, runID string) engine.Clock {
	t.Helper()
	run, err := st.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	skew := time.Until(run.LeaseExpires)
	if run.LeaseOwner == "" || skew < 0 {
		skew = 0
	}
	return clocktest.Skewed(skew)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}
