package temporal

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
)

// TestContinueAsNew: a run told to continue as new (Temporal suggests it
// halfway, while a retried step waits for its backoff) does so at the next
// point where nothing is in flight, carrying its state; the new run goes
// on from there: every step runs once (the retried one its three
// attempts), none again, and the run settles as one that never continued.
func TestContinueAsNew(t *testing.T) {
	settle := func(suggest bool) (*Status, *ledger, int) {
		l := newLedger()
		l.fails["t2"] = failPlan{n: 2, class: fault.Transient}
		p := load(t, `name: long
steps:
  - {id: s1, tool: t1, args: {n: "{input.n}"}}
  - {id: s2, tool: t2, args: {prev: "{s1.n}"}, retries: 3, backoff: {initial: 1m, max: 1m}}
  - {id: s3, tool: t3, args: {prev: "{s2.n}"}}
  - {id: s4, tool: t4, args: {prev: "{s3.n}"}, repeat: {until: "iteration >= 1", max: 3}}
  - {id: s5, tool: t5, args: {prev: "{s4.n}"}}
`, l.tool("t1", true), l.tool("t2", true), l.tool("t3", true), l.tool("t4", true), l.tool("t5", true))
		in, err := StartInput(p, map[string]any{"n": 1})
		if err != nil {
			t.Fatal(err)
		}
		for gen := 0; ; gen++ {
			h := newHarness(t, p)
			if suggest && gen == 0 {
				h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 30*time.Second)
			}
			h.env.ExecuteWorkflow(p.Flow.Name, in)
			err := h.env.GetWorkflowError()
			var can *workflow.ContinueAsNewError
			if errors.As(err, &can) {
				if gen > 3 {
					t.Fatal("the run keeps continuing as new")
				}
				in = Start{}
				if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
					t.Fatal(err)
				}
				if in.Carry == nil || in.Carry.Generation != gen {
					t.Fatalf("generation %d continued without its state: %+v", gen, in.Carry)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var st Status
			if err := h.env.GetWorkflowResult(&st); err != nil {
				t.Fatal(err)
			}
			return &st, l, gen
		}
	}
	plain, _, gens := settle(false)
	if gens != 0 {
		t.Fatalf("a run without the suggestion continued as new %d times", gens)
	}
	st, l, gens := settle(true)
	if gens != 1 {
		t.Fatalf("continued as new %d times, want once", gens)
	}
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	want := map[string]string{"t1": "run-1/s1/1", "t2": "run-1/s2/1 run-1/s2/2 run-1/s2/3", "t3": "run-1/s3/1", "t4": "run-1/s4#1/1 run-1/s4#2/1", "t5": "run-1/s5/1"}
	for name, keys := range want {
		if got := strings.Join(l.keys(name), " "); got != keys {
			t.Errorf("%s calls %q, want %q", name, got, keys)
		}
	}
	for i, s := range st.Steps {
		p := plain.Steps[i]
		if s.Status != p.Status || s.Attempts != p.Attempts || string(st.Outputs[s.ID]) != string(plain.Outputs[s.ID]) {
			t.Errorf("step %s: %+v %s, without continue-as-new %+v %s", s.ID, s, st.Outputs[s.ID], p, plain.Outputs[s.ID])
		}
	}
}
