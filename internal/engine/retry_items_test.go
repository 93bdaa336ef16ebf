package engine_test

import (
	"context"
	"fmt"
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

// The retried-items test: pay charges each of two items, one at a time,
// answering with its idempotency key; its check finds a call happened
// when its key is in dir/done (written once a charge returned). In mode
// fallback, item b's charge is declined and the item falls back to
// backup, which answers with its key too. after fails until dir/up
// exists. A child process runs the flow (pay's items
// succeed, after fails), retries it from pay (rein runs retry --from pay)
// and dies by SIGKILL in item 1's retried call, after item 0 was made
// again. The parent resumes: item 1's output from before the retry must
// not settle the retried item.
const retryItemsFlow = `name: retry_items
steps:
  - {id: pay, tool: charge, for_each: "{input.items}", concurrency: 1, args: {item: "{item}"}%s}
  - {id: after, tool: verify, args: {paid: "{pay}"}}
`

// retryItemsFallback is what pay adds in mode fallback.
const retryItemsFallback = `, on_error: fallback, fallback: {tool: backup}`

// retryItemsEngine builds the flow's engine (in mode, "" or fallback)
// over dir and st; every tool appends its key (without the run id) to
// dir/calls, and charge kills the process when its key is kill.
func retryItemsEngine(t testing.TB, dir string, st store.Store, mode, kill string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	t.Helper()
	appendLine := func(name, line string) error {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(line + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	shortKey := func(ctx context.Context) string {
		info := tool.CallInfoFrom(ctx)
		return strings.TrimPrefix(info.IdempotencyKey, info.RunID+"/")
	}
	charge := tool.Func(tool.Spec{Name: "charge", Effect: tool.EffectExternal, Idempotent: true}, func(ctx context.Context, args any) (any, error) {
		key := shortKey(ctx)
		if err := appendLine("calls", key); err != nil {
			return nil, err
		}
		if key == kill {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		if mode == "fallback" && args.(map[string]any)["item"] == "b" {
			return nil, fault.Errorf(fault.Business, "the card of item b is declined")
		}
		return map[string]any{"key": key}, appendLine("done", tool.CallInfoFrom(ctx).IdempotencyKey)
	})
	checked := tool.WithCheck(charge, func(_ context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
		b, err := os.ReadFile(filepath.Join(dir, "done"))
		if err != nil {
			return tool.CheckResult{}, err
		}
		if !slices.Contains(strings.Fields(string(b)), req.IdempotencyKey) {
			return tool.CheckResult{}, nil
		}
		return tool.CheckResult{Happened: true, Output: map[string]any{"key": req.IdempotencyKey}}, nil
	})
	verify := tool.Func(tool.Spec{Name: "verify", Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, args any) (any, error) {
		if err := appendLine("calls", shortKey(ctx)); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(dir, "up")); err != nil {
			return nil, fault.Errorf(fault.Business, "the ledger is closed")
		}
		return args, nil
	})
	backup := tool.Func(tool.Spec{Name: "backup", Effect: tool.EffectExternal, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		key := shortKey(ctx)
		return map[string]any{"key": key}, appendLine("calls", key)
	})
	reg := &tool.Registry{}
	for _, tl := range []tool.Tool{checked, verify, backup} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	src := fmt.Sprintf(retryItemsFlow, "")
	if mode == "fallback" {
		src = fmt.Sprintf(retryItemsFlow, retryItemsFallback)
	}
	f, err := flow.Parse([]byte(src), "retry_items.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Store: st, Clock: clock}), f
}

// TestRetryItemsChild is the child's body; it does nothing in a normal run.
func TestRetryItemsChild(t *testing.T) {
	kill, mode := os.Getenv("REIN_RETRY_ITEMS_KILL"), os.Getenv("REIN_RETRY_ITEMS_MODE")
	if kill == "" {
		t.Skip("the retried-items test's child process (run by TestRetriedItemsAreMadeAgain)")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := retryItemsEngine(t, dir, st, mode, "", nil)
	res, err := e.Run(ctx, f, map[string]any{"items": []any{"a", "b"}}, &engine.RunOptions{RunID: "ri"})
	want := trace.StepSucceeded
	if mode == "fallback" {
		want = trace.StepFellBack
	}
	if err != nil || res.Status != trace.RunFailed || res.Steps["pay"].Status != want {
		t.Fatalf("run: %v %+v", err, res)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e, f = retryItemsEngine(t, dir, st, mode, kill, nil)
	_, err = e.Retry(ctx, f, "ri", "pay")
	t.Fatalf("the child was meant to die in call %s, but its retry returned (%v)", kill, err)
}

// TestRetriedItemsAreMadeAgain: a for_each step retried with rein runs
// retry --from and killed in an item's retried call is not settled by
// that item's output from before the retry (it is stale): the resume
// checks the retried call in doubt (its check finds it did not happen),
// makes it again under the retried attempt's key, pay[1]/2, and keeps
// item 0, made again before the kill. An item that fell back before the
// retry (mode fallback) is not settled by that fallback either: made
// again, it falls back again under the retried attempt's key.
func TestRetriedItemsAreMadeAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	cases := []struct {
		mode  string
		items []any    // the keys of the calls pay's items' outputs came from
		calls []string // every call made, in order
	}{
		{"", []any{"pay[0]/2", "pay[1]/2"},
			[]string{"pay[0]/1", "pay[1]/1", "after/1", "pay[0]/2", "pay[1]/2", "pay[1]/2", "after/2"}},
		{"fallback", []any{"pay[0]/2", "pay[1]/fallback/2"},
			[]string{"pay[0]/1", "pay[1]/1", "pay[1]/fallback/1", "after/1", "pay[0]/2", "pay[1]/2", "pay[1]/2", "pay[1]/fallback/2", "after/2"}},
	}
	for _, tc := range cases {
		name := tc.mode
		if name == "" {
			name = "plain"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir, st := killedChild(t, "TestRetryItemsChild", "REIN_RETRY_ITEMS_KILL=pay[1]/2", "REIN_RETRY_ITEMS_MODE="+tc.mode)
			e, f := retryItemsEngine(t, dir, st, tc.mode, "", pastLease(t, st, "ri"))
			res, err := e.Resume(ctx, f, "ri")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != trace.RunSucceeded {
				t.Fatalf("after resume: %s (%+v)", res.Status, res.Error)
			}
			var got []any
			for _, v := range res.Outputs["pay"].([]any) {
				got = append(got, v.(map[string]any)["key"])
			}
			if !slices.Equal(got, tc.items) {
				t.Fatalf("pay's items came from the calls keyed %v, want the retried attempt's %v", got, tc.items)
			}
			if calls := readLines(t, filepath.Join(dir, "calls")); !slices.Equal(calls, tc.calls) {
				t.Fatalf("calls %v, want %v", calls, tc.calls)
			}
		})
	}
}
