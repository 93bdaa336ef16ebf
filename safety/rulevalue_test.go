package safety_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// amount is a Condition on args.amount, as rein.yaml's when: would be:
// above (> n) or at most (<= n).
type amount struct {
	n     float64
	above bool
}

func above(n float64) amount { return amount{n, true} }
func below(n float64) amount { return amount{n, false} }

func (a amount) Holds(_ context.Context, inv *safety.Invocation) (bool, error) {
	args, _ := inv.Args.(map[string]any)
	n, ok := args["amount"].(float64)
	if !ok {
		return false, errors.New("args.amount is not a number")
	}
	return n > a.n == a.above, nil
}

func (a amount) String() string { return fmt.Sprintf("args.amount > %v is %v", a.n, a.above) }

func decide(t *testing.T, g safety.Gate, inv safety.Invocation) safety.Decision {
	t.Helper()
	d, err := g.Check(context.Background(), &inv)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestValueAwareRules: when: reads the args, an allow rule lifts the
// approval rules of its policy but never a block, and a rule on one
// argument's provenance ignores the others.
func TestValueAwareRules(t *testing.T) {
	refund := tool.Spec{Name: "refund", Effect: tool.EffectExternal}
	gate := &safety.Policy{Rules: append(safety.DefaultRules(),
		safety.Rule{Name: "small-ok", Tools: []string{"refund"}, When: below(20), Verdict: safety.Allow, Reason: "small refunds run"},
		safety.Rule{Name: "huge-blocked", Tools: []string{"refund"}, When: above(5000), Verdict: safety.Block},
		safety.Rule{Name: "to-not-inferred", Arguments: []safety.ArgOrigins{{Pointer: "/to", Origins: []safety.Origin{"inferred"}}}, Verdict: safety.RequireApproval},
	)}
	inferred := prov("/amount", "inferred")
	if d := decide(t, gate, safety.Invocation{Tool: refund, Args: map[string]any{"amount": 10.0}, Provenance: inferred}); d.Verdict != safety.Allow || d.Rule != "small-ok" ||
		!strings.Contains(d.Reason, "small refunds run") {
		t.Errorf("small refund: %+v, want allow by small-ok (it lifts inferred-drives-effect)", d)
	}
	if d := decide(t, gate, safety.Invocation{Tool: refund, Args: map[string]any{"amount": 100.0}, Provenance: inferred}); d.Verdict != safety.RequireApproval || d.Rule != "inferred-drives-effect" {
		t.Errorf("medium refund: %+v, want require_approval", d)
	}
	// A block is never lifted: the small-ok rule holds too (the
	// condition below is false for 9999, so make both hold with an
	// always-true allow).
	lift := &safety.Policy{Rules: []safety.Rule{
		{Name: "lift", Verdict: safety.Allow},
		{Name: "huge-blocked", When: above(5000), Verdict: safety.Block},
		{Name: "approve", Verdict: safety.RequireApproval},
	}}
	if d := decide(t, lift, safety.Invocation{Tool: refund, Args: map[string]any{"amount": 9999.0}}); d.Verdict != safety.Block {
		t.Errorf("huge refund with an allow rule: %+v, want block", d)
	}
	if d := decide(t, lift, safety.Invocation{Tool: refund, Args: map[string]any{"amount": 1.0}}); d.Verdict != safety.Allow || d.Rule != "lift" {
		t.Errorf("allow rule should lift approve: %+v", d)
	}
	mail := tool.Spec{Name: "mail", Effect: tool.EffectExternal}
	if d := decide(t, gate, safety.Invocation{Tool: mail, Provenance: prov("/to", "user", "/body", "inferred")}); d.Rule == "to-not-inferred" {
		t.Errorf("an inferred /body matched the /to rule: %+v", d)
	}
	if d := decide(t, gate, safety.Invocation{Tool: mail, Approved: true, Provenance: prov("/to/0", "inferred", "/body", "user")}); d.Verdict != safety.Allow {
		t.Errorf("approved call: %+v", d)
	}
	d := decide(t, &safety.Policy{Rules: gate.Rules[len(gate.Rules)-1:]}, safety.Invocation{Tool: mail, Provenance: prov("/to/0", "inferred")})
	if d.Verdict != safety.RequireApproval || !strings.Contains(d.Reason, "argument /to/0 comes from inferred") {
		t.Errorf("an inferred /to/0 should match the /to rule: %+v", d)
	}
}

// TestWhenThatCannotBeDecidedFailsClosed: a restricting rule holds, an
// allow rule does not, and the reason says why.
func TestWhenThatCannotBeDecidedFailsClosed(t *testing.T) {
	gate := &safety.Policy{Rules: []safety.Rule{
		{Name: "ok", When: below(20), Verdict: safety.Allow},
		{Name: "big", When: above(100), Verdict: safety.RequireApproval},
	}}
	d := decide(t, gate, safety.Invocation{Tool: tool.Spec{Name: "refund"}, Args: map[string]any{"amount": "ten"}})
	if d.Verdict != safety.RequireApproval || d.Rule != "big" || !strings.Contains(d.Reason, "could not be decided (args.amount is not a number)") {
		t.Errorf("undecidable when: %+v", d)
	}
}

// TestLogOnlyRulesDecideNothing: enforce: false rules that hold are
// listed, through a Join too, and change no verdict.
func TestLogOnlyRulesDecideNothing(t *testing.T) {
	watch := &safety.Policy{Rules: []safety.Rule{
		{Name: "would-block", Tools: []string{"refund"}, Verdict: safety.Block, LogOnly: true, Reason: "watching"},
	}}
	other := &safety.Policy{Rules: []safety.Rule{{Name: "review", Tools: []string{"refund"}, Verdict: safety.RequireReview}}}
	d := decide(t, watch, safety.Invocation{Tool: tool.Spec{Name: "refund"}})
	if d.Verdict != safety.Allow || len(d.LogOnly) != 1 || d.LogOnly[0].Rule != "would-block" || d.LogOnly[0].Verdict != safety.Block {
		t.Errorf("log-only: %+v", d)
	}
	d = decide(t, safety.Join(other, watch), safety.Invocation{Tool: tool.Spec{Name: "refund"}})
	if d.Verdict != safety.RequireReview || len(d.LogOnly) != 1 || d.LogOnly[0].Why() != "rule would-block: watching" {
		t.Errorf("joined: %+v", d)
	}
	if d := decide(t, watch, safety.Invocation{Tool: tool.Spec{Name: "other"}}); len(d.LogOnly) != 0 {
		t.Errorf("a log-only rule that does not hold is listed: %+v", d)
	}
}
