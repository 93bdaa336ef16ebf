package fan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine/sched/fan"
)

// drain hands out every unit f gives with inFlight running and names them.
func drain(f *fan.Fan, inFlight int) string {
	var b strings.Builder
	for {
		u, ok := f.Next(inFlight)
		if !ok {
			return b.String()
		}
		inFlight++
		op := "run"
		if u.Op == fan.Recover {
			op = "recover"
		}
		fmt.Fprintf(&b, "%s%d ", op, u.Index)
	}
}

func TestFan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		do   func(f *fan.Fan) string
		want string
	}{
		{"limit bounds", func(f *fan.Fan) string { f.Reset(5, 2); return drain(f, 0) }, "run0 run1 "},
		{"limit counts those in flight", func(f *fan.Fan) string { f.Reset(5, 3); return drain(f, 2) }, "run0 "},
		{"skipped units never go", func(f *fan.Fan) string {
			f.Reset(5, 9)
			f.Skip(0)
			f.Skip(3)
			return drain(f, 0)
		}, "run1 run2 run4 "},
		{"recover goes first", func(f *fan.Fan) string {
			f.Reset(4, 2)
			s := drain(f, 0)
			f.Again(1)
			return s + drain(f, 1)
		}, "run0 run1 recover1 "},
		{"stop hands out nothing", func(f *fan.Fan) string {
			f.Reset(4, 1)
			s := drain(f, 0)
			f.Stop()
			f.Again(0)
			return s + drain(f, 0)
		}, "run0 "},
		{"close ends the units not begun, not recovery", func(f *fan.Fan) string {
			f.Reset(4, 1)
			s := drain(f, 0)
			f.Again(0)
			f.Close()
			return s + drain(f, 0) + drain(f, 0)
		}, "run0 recover0 "},
		{"zero limit counts as one", func(f *fan.Fan) string { f.Reset(3, 0); return drain(f, 0) }, "run0 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var f fan.Fan
			if got := tt.do(&f); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFanDone(t *testing.T) {
	t.Parallel()
	var f fan.Fan
	f.Reset(3, 3)
	f.Skip(1)
	drain(&f, 0)
	f.Settle(0)
	if f.Done() {
		t.Fatal("done with unit 2 unsettled")
	}
	f.Settle(2)
	if !f.Done() {
		t.Fatal("not done with every unit settled or skipped")
	}
}

func TestDAG(t *testing.T) {
	t.Parallel()
	// a plan: 0, 1 ← 0, 2, 3 ← {1, 2}
	deps := [][]int{nil, {0}, nil, {1, 2}}
	var d fan.DAG

	d.Reset(deps, 4, 0, 10)
	if i, _ := d.Next(0); i != 0 {
		t.Fatalf("first unit %d, want 0", i)
	}
	if i, _ := d.Next(1); i != 2 {
		t.Fatalf("second unit %d, want 2 (1 waits on 0)", i)
	}
	if d.CanStart(2) {
		t.Fatal("a unit could start with 1 and 3 waiting")
	}
	d.Settle(0, fan.Succeeded, true)
	if i, _ := d.Next(1); i != 1 {
		t.Fatalf("after 0 settled: %d, want 1", i)
	}
	d.Settle(1, fan.Failed, true)
	if _, ok := d.Next(1); ok || d.CanStart(0) {
		t.Fatal("a unit was handed out after a failure")
	}

	// the budget: 2 counted before, 3 allowed.
	d.Reset(deps, 4, 2, 3)
	d.Reuse(0)
	if i, _ := d.Next(0); i != 1 {
		t.Fatalf("with 0 reused: %d, want 1", i)
	}
	if _, ok := d.Next(1); ok || d.OverBudget() != 2 {
		t.Fatalf("over budget at %d, want 2", d.OverBudget())
	}

	// a unit that did not run gives its count back; waiting blocks dependents.
	d.Reset(deps, 1, 0, 2)
	d.Next(0)
	d.Settle(0, fan.Waiting, false)
	if d.Executed() != 0 {
		t.Fatalf("executed %d after a wait, want 0", d.Executed())
	}
	if i, _ := d.Next(0); i != 2 {
		t.Fatalf("next %d, want 2 (1 waits on the waiting 0)", i)
	}
	d.Settle(2, fan.Succeeded, true)
	if _, ok := d.Next(0); ok || d.Done() {
		t.Fatal("3 handed out though 1 never ran, or done with a unit waiting")
	}
}
