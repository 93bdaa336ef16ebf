package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// A retry of a run whose saga took back a step's effect makes that step
// again (at its next attempt, with a new key) and then the failed step:
// the world holds what the retried run did, not what the saga undid.
func TestRetryRemakesWhatTheSagaTookBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSQLite(t)
	var mu sync.Mutex
	var keys []string
	mk := tool.Func(tool.Spec{Name: "make", Effect: tool.EffectWrite, Reversibility: tool.Compensatable,
		Compensate: &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}"}}},
		func(ctx context.Context, _ any) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, tool.CallInfoFrom(ctx).IdempotencyKey)
			return map[string]any{"id": "c-1"}, nil
		})
	var archived atomic.Int32
	archive := tool.Func(tool.Spec{Name: "archive", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) {
		archived.Add(1)
		return map[string]any{"ok": true}, nil
	})
	var down atomic.Bool
	down.Store(true)
	flaky := goTool("flaky", func(context.Context, map[string]any) (any, error) {
		if down.Load() {
			return nil, fault.BusinessErr(errors.New("down"))
		}
		return map[string]any{"ok": true}, nil
	})
	reg := &tool.Registry{}
	for _, tl := range []tool.Tool{mk, archive, flaky} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Parse([]byte("name: saga\non_failure: compensate\nsteps:\n  - {id: s, tool: make, args: {}}\n  - {id: next, tool: flaky, args: {}, requires: [s]}\n"),
		"saga.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(engine.Config{Tools: reg, Store: st})
	res, err := e.Run(ctx, f, map[string]any{}, &engine.RunOptions{RunID: "saga"})
	if err != nil || res.Status != trace.RunFailed || archived.Load() != 1 {
		t.Fatalf("first run: %v %v, archived %d: want failed, s compensated once", res.Status, err, archived.Load())
	}
	down.Store(false)
	res, err = e.Retry(ctx, f, "saga", "")
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("retry: %+v %v, want succeeded", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] == keys[1] || !strings.HasSuffix(keys[1], "/s/2") {
		t.Errorf("make's keys %v: want it made again by the retry at attempt 2, with a new key", keys)
	}
	if archived.Load() != 1 {
		t.Errorf("archived %d times, want once (the retry's make stands)", archived.Load())
	}
}

// TakenBack: a step all of whose calls were taken back is made again; one
// of whose calls one stands (frozen, a compensation rejected) is refused,
// naming the call; reads and a step without remediation are kept.
func TestTakenBack(t *testing.T) {
	t.Parallel()
	eff := func(step, key string) *journal.Effect {
		return &journal.Effect{StepID: step, Key: key, Tool: "t", Effect: string(tool.EffectWrite), Reversibility: string(tool.Compensatable), Outcome: "ok"}
	}
	read := &journal.Effect{StepID: "r", Key: "run/r/1", Tool: "get", Effect: string(tool.EffectRead), Outcome: "ok"}
	effects := []*journal.Effect{eff("a", "run/a[0]/1"), eff("a", "run/a[1]/1"), eff("b", "run/b/1"), read, eff("c", "run/c/1")}
	done := func(key string) *journal.Remediation {
		return &journal.Remediation{Key: key, Action: "compensate", Status: journal.RemedyDone}
	}
	last := map[string]*journal.Remediation{
		"run/a[0]/1": done("run/a[0]/1"),
		"run/a[1]/1": {Key: "run/a[1]/1", Action: "compensate", Status: journal.RemedyResolved, Decision: string(store.ApprovalSettled)},
		"run/b/1":    done("run/b/1"),
	}
	got, err := engine.TakenBack("run", effects, last)
	if err != nil || !got["a"] || !got["b"] || got["c"] || got["r"] || len(got) != 2 {
		t.Fatalf("TakenBack = %v %v, want a and b", got, err)
	}
	last["run/a[1]/1"] = &journal.Remediation{Key: "run/a[1]/1", Action: "compensate", Status: journal.RemedyResolved, Decision: string(store.ApprovalRejected)}
	_, err = engine.TakenBack("run", effects, last)
	if err == nil || fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "run/a[1]/1") {
		t.Errorf("a step half taken back: %v, want a business error naming run/a[1]/1", err)
	}
}
