package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// retryFlow: charge has an effect and is not idempotent; notify fails (a
// transient error, no retries left) until the file "up" exists.
const retryFlow = `name: retry
steps:
  - {id: charge, tool: charge, args: {}}
  - {id: notify, tool: notify, args: {}, retries: 0}
  - {id: done, tool: charge, args: {}}
`

func retryEngine(t *testing.T, src string) (*engine.Engine, *flow.Flow, string, *sqlite.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logCall := func(ctx context.Context) error {
		info := tool.CallInfoFrom(ctx)
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(strings.TrimPrefix(info.IdempotencyKey, info.RunID+"/") + "\n")
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
	f, err := flow.Parse([]byte(src), "retry.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Store: st}), f, dir, st
}

// TestRetryReopensAFailedRun: a run that failed after an effect (charge)
// is retried at its failed step: the same run, charge not made again,
// notify at its next attempt (a new idempotency key); then, retried from
// charge, charge and everything after it run again at new attempts. The
// journal keeps every attempt. A run that did not fail, a step the flow
// lacks and a step that never ran are refused.
func TestRetryReopensAFailedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, f, dir, st := retryEngine(t, retryFlow)
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r1"})
	if err != nil || res.Status != trace.RunFailed {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := e.Retry(ctx, f, "r1", "done"); err == nil || !strings.Contains(err.Error(), "step done never ran") {
		t.Fatalf("retry from a step that never ran: %v", err)
	}
	if _, err := e.Retry(ctx, f, "r1", "notfy"); fault.ClassOf(err) != fault.NotFound || !strings.Contains(err.Error(), `did you mean "notify"`) {
		t.Fatalf("retry from an unknown step: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = e.Retry(ctx, f, "r1", "")
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("retry: %v %+v", err, res)
	}
	wantStep(t, res, "charge", trace.StepSucceeded, 1)
	wantStep(t, res, "notify", trace.StepSucceeded, 2)
	if got := strings.Fields(readFile(t, filepath.Join(dir, "calls"))); strings.Join(got, " ") != "charge/1 notify/1 notify/2 done/1" {
		t.Fatalf("calls %v: want charge once, notify again at attempt 2", got)
	}
	if _, err := e.Retry(ctx, f, "r1", ""); fault.HintOf(err).Code != fault.HintNotFailed || !strings.Contains(err.Error(), "run r1 is not failed (its status is succeeded)") {
		t.Fatalf("retry of a succeeded run: %v", err)
	}

	// a second run, retried from charge: charge, notify and done again.
	if err := os.Remove(filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r2"}); err != nil || res.Status != trace.RunFailed {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Retry(ctx, f, "r2", "charge"); err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("retry --from charge: %v %+v", err, res)
	}
	wantStep(t, res, "charge", trace.StepSucceeded, 2)
	got := strings.Fields(readFile(t, filepath.Join(dir, "calls")))
	if strings.Join(got[4:], " ") != "charge/1 notify/1 charge/2 notify/2 done/1" {
		t.Fatalf("calls of r2 %v", got[4:])
	}
	evs, err := st.Events(ctx, "r2", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		if ev.Kind == journal.RunRetried || ev.Kind == journal.StepReopened {
			kinds = append(kinds, string(ev.Kind)+":"+ev.StepID)
		}
	}
	if strings.Join(kinds, " ") != "run_retried:charge step_reopened:charge step_reopened:notify" {
		t.Fatalf("journal of the retry: %v", kinds)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRetryAsksAgainWhatWaited: a run that failed while a parallel branch
// waited for an approval (closed with the run) is retried: the failed step
// runs again and the approval is asked again, not taken as rejected.
func TestRetryAsksAgainWhatWaited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, f, dir, _ := retryEngine(t, `name: branches
steps:
  - {id: ok, type: approval, message: "go?", requires: []}
  - {id: notify, tool: notify, args: {}, retries: 0, requires: []}
`)
	if res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "w1"}); err != nil || res.Status != trace.RunFailed {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.Retry(ctx, f, "w1", "")
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "ok" {
		t.Fatalf("retry: %v %+v: want notify done and ok asked again", err, res)
	}
	wantStep(t, res, "notify", trace.StepSucceeded, 2)
}
