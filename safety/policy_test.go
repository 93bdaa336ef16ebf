package safety_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

func prov(pairs ...string) safety.Provenance {
	p := safety.Provenance{}
	for i := 0; i < len(pairs); i += 2 {
		p.Add(pairs[i], safety.Origin(pairs[i+1]))
	}
	return p
}

// TestDefaultRules decides one case per default rule, and the cases next
// to each that the rule must leave alone.
func TestDefaultRules(t *testing.T) {
	gate := &safety.Policy{Rules: safety.DefaultRules()}
	send := tool.Spec{Name: "send_email", Effect: tool.EffectExternal}
	lookup := tool.Spec{Name: "lookup", Effect: tool.EffectRead}
	refund := tool.Spec{Name: "refund", Effect: tool.EffectExternal, Tags: []string{"money"}}
	file := tool.Spec{Name: "file_report", Effect: tool.EffectWrite, Tags: []string{"compliance"}}
	drop := tool.Spec{Name: "drop_table", Effect: tool.EffectDestructive, Reversibility: tool.Irreversible}
	post := tool.Spec{Name: "post", Effect: tool.EffectWrite, Reversibility: tool.Irreversible}
	cases := []struct {
		name    string
		inv     safety.Invocation
		verdict safety.Verdict
		rule    string
		reason  string
	}{
		{"inferred arg drives external", safety.Invocation{Tool: send, Provenance: prov("/to", "inferred", "/body", "constant")},
			safety.RequireApproval, "inferred-drives-effect", "argument /to comes from inferred"},
		{"inferred mixed with a tool output still counts", safety.Invocation{Tool: send, Provenance: prov("/to", "db", "/to", "inferred")},
			safety.RequireApproval, "inferred-drives-effect", "argument /to comes from db + inferred"},
		{"user-mentioned arg drives external", safety.Invocation{Tool: send, Provenance: prov("/to", "user-mentioned", "/body", "user")},
			safety.RequireApproval, "inferred-drives-effect", "argument /to comes from user-mentioned"},
		{"user-mentioned arg a tool result verified", safety.Invocation{Tool: send, Provenance: prov("/to", "user-mentioned"),
			Verified: []safety.Verification{{Pointer: "/to", Tool: "lookup", Ref: "step lookup", Field: "/email"}}}, safety.Allow, "", ""},
		{"user-mentioned arg of a read", safety.Invocation{Tool: lookup, Provenance: prov("/q", "user-mentioned")}, safety.Allow, "", ""},
		{"inferred arg of a read", safety.Invocation{Tool: lookup, Provenance: prov("/q", "inferred")}, safety.Allow, "", ""},
		{"user and tool args drive external", safety.Invocation{Tool: send, Provenance: prov("/to", "user", "/body", "tool:render")}, safety.Allow, "", ""},
		{"approved inferred call", safety.Invocation{Tool: send, Approved: true, Provenance: prov("/to", "inferred")}, safety.Allow, "", ""},
		{"money side effect", safety.Invocation{Tool: refund, Provenance: prov("/amount", "user")},
			safety.RequireApproval, "money-or-compliance", "tool refund is tagged money"},
		{"compliance side effect", safety.Invocation{Tool: file}, safety.RequireApproval, "money-or-compliance", "tagged compliance"},
		{"money tag without side effect", safety.Invocation{Tool: tool.Spec{Name: "quote", Effect: tool.EffectRead, Tags: []string{"money"}}}, safety.Allow, "", ""},
		{"destructive without a tier", safety.Invocation{Tool: drop}, safety.Allow, "", ""},
		{"destructive at tier 2", safety.Invocation{Tool: drop, Tier: 2}, safety.Allow, "", ""},
		{"destructive at tier 3", safety.Invocation{Tool: drop, Tier: 3}, safety.RequireApproval, "destructive-at-tier-3", "risk tier 3"},
		{"irreversible at tier 4", safety.Invocation{Tool: post, Tier: 4}, safety.RequireApproval, "irreversible-at-tier-3", "tool post is irreversible"},
		{"inferred arg a tool result verified", safety.Invocation{Tool: send, Provenance: prov("/to", "inferred", "/body", "inferred"),
			Verified: []safety.Verification{{Pointer: "/body", Tool: "lookup", Ref: "step lookup"}, {Pointer: "/to", Tool: "lookup", Ref: "step lookup"}}}, safety.Allow, "", ""},
		{"one inferred arg verified, one not", safety.Invocation{Tool: send, Provenance: prov("/to", "inferred", "/body", "inferred"),
			Verified: []safety.Verification{{Pointer: "/to", Tool: "lookup", Ref: "step lookup"}}},
			safety.RequireApproval, "inferred-drives-effect", "argument /body comes from inferred; no tool result of this run confirms it"},
		{"model-chosen side effect without declaration", safety.Invocation{Tool: send, Chosen: true, Provenance: prov("/to", "user")},
			safety.RequireReview, "undeclared-side-effect", "the model declared nothing for this call"},
		{"model-chosen side effect with an unsupported fact", safety.Invocation{Tool: send, Chosen: true, Provenance: prov("/to", "user"),
			Declaration: &safety.Declaration{Action: "send", Facts: []safety.Fact{{Claim: "to", Source: "user", Evidence: "x@y.z"}}},
			Claims:      []safety.ClaimVerdict{{Claim: "to", Evidence: "not in the user's input"}}},
			safety.RequireReview, "undeclared-side-effect", `declared fact "to" is unverified: not in the user's input`},
		{"model-chosen side effect with a verified declaration", safety.Invocation{Tool: send, Chosen: true, Provenance: prov("/to", "user"),
			Declaration: &safety.Declaration{Action: "send", Facts: []safety.Fact{{Claim: "to", Source: "user", Evidence: "x@y.z"}}},
			Claims:      []safety.ClaimVerdict{{Claim: "to", Supported: true}}}, safety.Allow, "", ""},
		{"model-chosen read without declaration", safety.Invocation{Tool: lookup, Chosen: true}, safety.Allow, "", ""},
		{"flow step without declaration", safety.Invocation{Tool: send, Provenance: prov("/to", "user")}, safety.Allow, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := gate.Check(context.Background(), &c.inv)
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != c.verdict || d.Rule != c.rule {
				t.Fatalf("decision = %s by %q (%s), want %s by %q", d.Verdict, d.Rule, d.Reason, c.verdict, c.rule)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", d.Reason, c.reason)
			}
		})
	}
}

// TestMostSevereRuleWins: every rule is checked; block beats approval,
// approval beats review, and among equals the first rule decides.
func TestMostSevereRuleWins(t *testing.T) {
	spec := tool.Spec{Name: "pay", Effect: tool.EffectExternal, Tags: []string{"money"}}
	gate := &safety.Policy{Rules: []safety.Rule{
		{Name: "review-money", Tags: []string{"money"}, Verdict: safety.RequireReview},
		{Name: "approve-external", Effects: []tool.Effect{tool.EffectExternal}, Verdict: safety.RequireApproval},
		{Name: "approve-pay", Tools: []string{"pay"}, Verdict: safety.RequireApproval},
		{Name: "no-model-payments", Tools: []string{"pay"}, Provenance: []safety.Origin{"inferred"}, Verdict: safety.Block, Reason: "payments are never computed by a model"},
		{Name: "any-tool-output", Provenance: []safety.Origin{"tool:*"}, Verdict: safety.RequireReview},
	}}
	check := func(inv safety.Invocation) safety.Decision {
		t.Helper()
		d, err := gate.Check(context.Background(), &inv)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := check(safety.Invocation{Tool: spec, Provenance: prov("/amount", "inferred")}); d.Verdict != safety.Block || d.Rule != "no-model-payments" ||
		!strings.HasPrefix(d.Reason, "payments are never computed by a model (") {
		t.Errorf("inferred payment: %+v", d)
	}
	if d := check(safety.Invocation{Tool: spec, Provenance: prov("/amount", "user")}); d.Verdict != safety.RequireApproval || d.Rule != "approve-external" {
		t.Errorf("user payment: %+v", d)
	}
	if d := check(safety.Invocation{Tool: spec, Approved: true, Provenance: prov("/amount", "user")}); d.Verdict != safety.RequireReview || d.Rule != "review-money" {
		t.Errorf("approved payment: %+v", d)
	}
	if d := check(safety.Invocation{Tool: tool.Spec{Name: "x"}, Provenance: prov("/a", "tool:fetch")}); d.Verdict != safety.RequireReview || d.Rule != "any-tool-output" {
		t.Errorf("tool:* pattern: %+v", d)
	}
	if d := check(safety.Invocation{Tool: tool.Spec{Name: "x"}, Provenance: prov("/a", "db")}); d.Rule != "any-tool-output" {
		t.Errorf("tool:* should match db: %+v", d)
	}
}

// TestAllowAllocatesNothing: the gate is on the path of every tool call.
func TestAllowAllocatesNothing(t *testing.T) {
	gate := &safety.Policy{Rules: safety.DefaultRules()}
	inv := safety.Invocation{Tool: tool.Spec{Name: "send", Effect: tool.EffectExternal}, Provenance: prov("/to", "user", "/body", "tool:render")}
	allocs := testing.AllocsPerRun(100, func() {
		if d, _ := gate.Check(context.Background(), &inv); d.Verdict != safety.Allow {
			t.Fatal(d)
		}
	})
	if allocs != 0 {
		t.Errorf("an allowed call allocates %v times, want 0", allocs)
	}
}

// BenchmarkPolicyCheck is the default gate on a call it allows and on one
// it refers to a person (docs/performance.md).
func BenchmarkPolicyCheck(b *testing.B) {
	gate := &safety.Policy{Rules: safety.DefaultRules()}
	allow := safety.Invocation{Tool: tool.Spec{Name: "send", Effect: tool.EffectExternal}, Provenance: prov("/to", "user", "/body", "tool:render", "/subject", "constant")}
	approve := safety.Invocation{Tool: tool.Spec{Name: "send", Effect: tool.EffectExternal}, Provenance: prov("/to", "inferred", "/body", "tool:render")}
	b.Run("allow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = gate.Check(context.Background(), &allow)
		}
	})
	b.Run("require_approval", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = gate.Check(context.Background(), &approve)
		}
	})
}

func TestJoin(t *testing.T) {
	review := &safety.Policy{Rules: []safety.Rule{{Name: "review", Verdict: safety.RequireReview}}}
	block := &safety.Policy{Rules: []safety.Rule{{Name: "block", Tools: []string{"x"}, Verdict: safety.Block}}}
	if safety.Join() != safety.AllowAll || safety.Join(nil, safety.AllowAll) != safety.AllowAll {
		t.Error("Join of no gates is not AllowAll")
	}
	if g := safety.Join(nil, review); g != safety.Gate(review) {
		t.Error("Join of one gate is not that gate")
	}
	g := safety.Join(review, block)
	for name, want := range map[string]string{"x": "block", "y": "review"} {
		d, err := g.Check(context.Background(), &safety.Invocation{Tool: tool.Spec{Name: name}})
		if err != nil || d.Rule != want {
			t.Errorf("tool %s: %+v %v, want rule %s", name, d, err, want)
		}
	}
}

// ByTool hands each call to its tool's gate and allows a tool without one.
func TestByTool(t *testing.T) {
	t.Parallel()
	block := &safety.Policy{Rules: []safety.Rule{{Name: "no", Verdict: safety.Block}}}
	g := safety.ByTool(map[string]safety.Gate{"send": block})
	for name, want := range map[string]safety.Verdict{"send": safety.Block, "read": safety.Allow} {
		d, err := g.Check(context.Background(), &safety.Invocation{Tool: tool.Spec{Name: name}})
		if err != nil || d.Verdict != want {
			t.Errorf("%s: %+v %v, want %s", name, d, err, want)
		}
	}
}
