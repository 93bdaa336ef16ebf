package temporal

import (
	"strings"
	"testing"
	"time"
)

// gatedFlow: the flow's policy requires approval of pay calls above 100;
// small runs at once, big and each (one of its items is above 100) park.
const gatedFlow = `name: gated
policy:
  rules:
    - {name: large-pay, tools: [pay], when: "args.amount > 100", verdict: require_approval, reason: above 100 needs a person}
steps:
  - {id: small, tool: pay, args: {amount: 5}}
  - {id: big, tool: pay, args: {amount: "{input.amount}"}, requires: [small]}
  - {id: each, tool: pay, for_each: input.items, args: {amount: "{item}"}, requires: [big]}
`

// TestGatePark: a tool step whose call the policy gate requires approval
// of parks before it runs (the pending query names the rule), and runs
// once approved; a for_each step parks once for its items, and approved
// runs each of them once.
func TestGatePark(t *testing.T) {
	l := newLedger()
	p := load(t, gatedFlow, l.tool("pay", false))
	h := newHarness(t, p)
	var decisions []*updated
	var asked []string
	ask := func(step string) {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != step || pend[0].Kind != "approval" || !strings.Contains(pend[0].Error, "rule large-pay: above 100 needs a person") {
			t.Errorf("pending before %s: %+v", step, pend)
		}
		var next []NextAction
		h.query(QueryNextActions, &next)
		if len(next) == 0 || next[0].Args.Step != step || next[0].Action != ActionApprove {
			t.Errorf("next_actions before %s: %+v", step, next)
		}
		asked = append(asked, step+":"+strings.Join(l.keys("pay"), ","))
		decisions = append(decisions, h.update(Decision{Step: step, Action: ActionApprove, By: "ana"}))
	}
	h.env.RegisterDelayedCallback(func() { ask("big") }, time.Minute)
	h.env.RegisterDelayedCallback(func() { ask("each") }, 2*time.Minute)
	st := h.run(map[string]any{"amount": 250, "items": []any{3, 400}})
	want := []string{"big:run-1/small/1", "each:run-1/big/1,run-1/small/1"}
	if strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("asked %v, want %v (the calls made before each approval)", asked, want)
	}
	for _, d := range decisions {
		if !d.done || d.err != nil {
			t.Errorf("decision: %+v", d)
		}
	}
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.keys("pay"); strings.Join(got, ",") != "run-1/big/1,run-1/each[0]/1,run-1/each[1]/1,run-1/small/1" {
		t.Errorf("pay calls %v", got)
	}
	if s := stepOf(t, st, "big"); s.Error != "" || s.Attempts != 1 {
		t.Errorf("big: %+v", s)
	}
}

// TestGateParkReject: a step the gate parked, rejected, fails (and the
// run) without its call.
func TestGateParkReject(t *testing.T) {
	l := newLedger()
	p := load(t, gatedFlow, l.tool("pay", false))
	h := newHarness(t, p)
	var reject *updated
	h.env.RegisterDelayedCallback(func() {
		reject = h.update(Decision{Step: "big", Action: ActionReject, By: "bo", Comment: "too much"})
	}, time.Minute)
	st := h.run(map[string]any{"amount": 250, "items": []any{}})
	if reject == nil || !reject.done || reject.err != nil {
		t.Errorf("reject: %+v", reject)
	}
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "big" || st.Error.Message != "rejected by bo: too much" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.keys("pay"); strings.Join(got, ",") != "run-1/small/1" {
		t.Errorf("pay calls %v, want only small's", got)
	}
}
