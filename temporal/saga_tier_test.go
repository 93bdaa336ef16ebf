package temporal

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/tool"
)

// tieredSaga: the run is at risk tier 4 from its intake (the charge's
// cost), so a person approves the charge; its step after fails (a read).
const tieredSaga = `name: tiered
on_failure: compensate
risk: {costs: {tools: {charge: 4}}}
steps:
  - {id: take, tool: charge, args: {amount: 5}}
  - {id: ship, tool: peek, args: {fail: true}, requires: [take]}
`

// TestSagaTierFloor: a compensation is assessed at its own risk tier with
// the run's highest tier as its floor, as a local run's is: the refund of
// a charge made at tier 4 (approved by a person) waits for a person too,
// under take/1/compensate, and is made once approved. The failed run's
// state carries the tier its attempts reported.
func TestSagaTierFloor(t *testing.T) {
	l := newLedger()
	p := load(t, tieredSaga,
		l.toolOf(tool.Spec{Name: "charge", Effect: tool.EffectExternal, Reversibility: tool.Compensatable,
			Compensate: &tool.Compensation{Tool: "refund", Args: map[string]any{"amount": "{args.amount}"}}}),
		l.toolOf(tool.Spec{Name: "refund", Effect: tool.EffectExternal, Idempotent: true}),
		l.toolOf(tool.Spec{Name: "peek", Effect: tool.EffectRead, Idempotent: true}))
	h := newHarness(t, p)
	var pend [][]Pending
	var decisions []*updated
	step := func(id string) {
		var ps []Pending
		h.query(QueryPending, &ps)
		pend = append(pend, ps)
		decisions = append(decisions, h.update(Decision{Step: id, Action: ActionApprove, By: "ana"}))
	}
	h.env.RegisterDelayedCallback(func() { step("take") }, time.Minute)
	h.env.RegisterDelayedCallback(func() { step("take/1/compensate") }, 2*time.Minute)
	floors := map[string]int{} // the floor each compensation activity was handed
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in attemptIn
		if args.Get(&in) == nil && in.Op == opCompensate {
			floors[info.ActivityID] = in.Tier
		}
	})
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	_, cl := h.execute(in)
	if cl == nil || cl.Status.Status != "failed" || cl.Status.Error == nil || cl.Status.Error.Step != "ship" {
		t.Fatalf("the run did not close failed at ship: %+v", cl)
	}
	for _, d := range decisions {
		if !d.done || d.err != nil {
			t.Errorf("decision: %+v", d)
		}
	}
	if len(pend) != 2 || len(pend[0]) != 1 || pend[0][0].Step != "take" || len(pend[1]) != 1 || pend[1][0].Step != "take/1/compensate" ||
		pend[1][0].Kind != "escalation" || !strings.Contains(pend[1][0].Error, "floor: the run is at risk tier 4") {
		t.Fatalf("pending before each decision %+v: want the charge, then its refund held at the run's tier 4", pend)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/take/1/compensate" {
		t.Errorf("refund calls %v: made once, once a person approved it", got)
	}
	if cl.Next.Carry.Tier != 4 || floors["run-1/take/1/compensate"] != 4 || floors["run-1/take/1/compensate#2"] != 4 {
		t.Errorf("carried tier %d, compensations' floors %v: want 4 (what the attempts reported)", cl.Next.Carry.Tier, floors)
	}
}
