package sched

import (
	"context"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/expression"
	"github.com/reinhq/rein/internal/engine/sched/fan"
)

// TestItemsSettle pins what a settled for_each item means under each
// on_error, and that a failure stops the items.
func TestItemsSettle(t *testing.T) {
	t.Parallel()
	run, recover := fan.Unit{Index: 1, Op: fan.Run}, fan.Unit{Index: 1, Op: fan.Recover}
	for _, c := range []struct {
		name    string
		onError flow.OnError
		u       fan.Unit
		failed  bool
		class   fault.Class
		stopped bool
		want    ItemVerdict
	}{
		{"ok", "", run, false, "", false, ItemDone},
		{"business fails the step", "", run, true, fault.Business, false, ItemFailed},
		{"escalate fails the step per item", flow.Escalate, run, true, fault.Business, false, ItemFailed},
		{"skip defaults", flow.Skip, run, true, fault.Business, false, ItemDefaulted},
		{"fallback falls back", flow.Fallback, run, true, fault.Business, false, ItemFallingBack},
		{"a fallback's output fills", flow.Fallback, recover, false, "", false, ItemDone},
		{"a failed fallback fails", flow.Fallback, recover, true, fault.Business, false, ItemFailed},
		{"budget is never absorbed", flow.Skip, run, true, fault.Budget, false, ItemFailed},
		{"nothing is absorbed once stopped", flow.Skip, run, true, fault.Business, true, ItemFailed},
	} {
		s := &flow.Step{ID: "s", OnError: c.onError, ForEach: &flow.ForEach{Concurrency: 2}}
		var it Items
		it.Reset(s, 3)
		it.Next(0)
		it.Next(1)
		got := it.Settle(c.u, c.failed, c.class, c.stopped)
		if got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
		u, ok := it.Next(1)
		switch {
		case got == ItemFailed && ok:
			t.Errorf("%s: item %d handed out after the step failed", c.name, u.Index)
		case got == ItemFallingBack && (!ok || u.Op != fan.Recover || u.Index != 1):
			t.Errorf("%s: next is %+v, want item 1's fallback", c.name, u)
		case (got == ItemDone || got == ItemDefaulted) && (!ok || u != fan.Unit{Index: 2}):
			t.Errorf("%s: next is %+v (%v), want item 2", c.name, u, ok)
		}
	}
}

// TestRoundsSettle: rounds end when until holds, at max, or on a failure.
func TestRoundsSettle(t *testing.T) {
	t.Parallel()
	until, err := expression.Compile("output >= 2")
	if err != nil {
		t.Fatal(err)
	}
	s := &flow.Step{ID: "s", Repeat: &flow.Repeat{Until: until, Max: 5}}
	var r Rounds
	r.Reset(s)
	ctx := context.Background()
	for k := 0; k < 3; k++ {
		u, ok := r.Next(0)
		if !ok || u.Index != k {
			t.Fatalf("round %d: next %+v %v", k, u, ok)
		}
		if r.CanStart(1) {
			t.Fatal("a second round could start while one runs")
		}
		done, err := r.Settle(ctx, k, false, map[string]any{"output": float64(k)})
		if err != nil || done != (k == 2) {
			t.Fatalf("round %d: done %v, err %v", k, done, err)
		}
	}
	if _, ok := r.Next(0); ok {
		t.Fatal("a round after until held")
	}
	r.Reset(s)
	r.Next(0)
	if done, _ := r.Settle(ctx, 0, true, nil); !done || r.CanStart(0) {
		t.Fatal("a failed round does not end the rounds")
	}
	r.Reset(s)
	r.Next(0)
	if _, err := r.Settle(ctx, 0, false, map[string]any{"output": "x"}); err == nil || r.CanStart(0) {
		t.Fatal("an until that cannot be evaluated does not stop the rounds with its error")
	}
}
