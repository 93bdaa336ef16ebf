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

// TestSagaContinueAsNew: a run whose saga waits on a person continues as
// new when Temporal suggests it (here as a person rejects one of its two
// escalations), carrying the saga: the new run waits on the escalation
// left, under the same id, and approved it makes the refund once more
// with the same key; the run ends failed as one that never continued.
func TestSagaContinueAsNew(t *testing.T) {
	l := newLedger()
	l.fails["refund"] = failPlan{n: 1, class: fault.Transient}
	l.fails["release"] = failPlan{n: 9, class: fault.Business}
	p := load(t, sagaFlow, sagaTools(l, true)...)
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var decisions []*updated
	var pend []Pending
	for gen := 0; ; gen++ {
		h := newHarness(t, p)
		if gen == 0 {
			h.env.RegisterDelayedCallback(func() {
				h.env.SetContinueAsNewSuggested(true)
				decisions = append(decisions, h.update(Decision{Step: "hold/1/undo", Action: ActionReject, By: "ana"}))
			}, time.Minute)
		} else {
			h.env.RegisterDelayedCallback(func() {
				h.query(QueryPending, &pend)
				decisions = append(decisions, h.update(Decision{Step: "take/1/compensate", Action: ActionApprove, By: "ana"}))
			}, time.Minute)
		}
		h.env.ExecuteWorkflow(p.Flow.Name, in)
		werr := h.env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(werr, &can) {
			if gen > 0 {
				t.Fatal("the run keeps continuing as new")
			}
			in = Start{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			c := in.Carry
			if c == nil || len(c.Escalations) != 1 || c.Escalations["run-1/take/1"] == nil || c.Made["run-1/take/1"] != 1 {
				t.Fatalf("the saga's state was not carried: %+v", c)
			}
			continue
		}
		cl, ok := ClosedOf(werr)
		if !ok {
			t.Fatalf("gen %d: workflow error %v, want the run closed failed", gen, werr)
		}
		if gen != 1 {
			t.Fatalf("closed in generation %d, want 1 (continued once)", gen)
		}
		if st := cl.Status; st.Status != "failed" || st.Error == nil || st.Error.Step != "ship" {
			t.Fatalf("run: %+v (error %+v)", st, st.Error)
		}
		break
	}
	for _, d := range decisions {
		if !d.done || d.err != nil {
			t.Errorf("decision: %+v", d)
		}
	}
	if len(pend) != 1 || pend[0].Step != "take/1/compensate" || pend[0].Kind != "escalation" || !strings.Contains(pend[0].Error, "not retried blindly") {
		t.Errorf("pending in the new run %+v, want take/1/compensate", pend)
	}
	if got := l.keys("refund"); len(got) != 2 || got[0] != "run-1/take/1/compensate" || got[1] != got[0] {
		t.Errorf("refund calls %v: failed once, made once more when approved in the new run, with one key", got)
	}
	if l.count("release") != 1 || l.count("charge") != 1 || l.count("ship") != 1 {
		t.Errorf("release %d, charge %d, ship %d calls: want 1 each (nothing ran again)", l.count("release"), l.count("charge"), l.count("ship"))
	}
}
