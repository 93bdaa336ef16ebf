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

// TestAssess takes each signal of the table alone, and the floor, and
// checks the tier it gives and that the reason names it.
func TestAssess(t *testing.T) {
	t.Parallel()
	read := tool.Spec{Name: "lookup", Effect: tool.EffectRead, Tags: []string{"money"}, Resources: make([]string, 50)}
	write := tool.Spec{Name: "save", Effect: tool.EffectWrite, Reversibility: tool.Reversible}
	ext := tool.Spec{Name: "notify", Effect: tool.EffectExternal}
	del := tool.Spec{Name: "purge", Effect: tool.EffectDestructive, Reversibility: tool.Reversible}
	cases := []struct {
		name   string
		s      safety.Signals
		tier   int
		reason string
	}{
		{"nothing", safety.Signals{}, 1, ""},
		{"read tools never raise, tags and resources included", safety.Signals{Tools: []tool.Spec{read}, FanOut: 100, Args: 2, Inferred: 2}, 1, ""},
		{"effect write", safety.Signals{Tools: []tool.Spec{write}}, 2, "effect: tool save has effect write (tier 2)"},
		{"effect external", safety.Signals{Tools: []tool.Spec{ext}}, 2, "effect: tool notify has effect external"},
		{"effect destructive", safety.Signals{Tools: []tool.Spec{del}}, 3, "effect: tool purge is destructive (tier 3)"},
		{"compensatable", safety.Signals{Tools: []tool.Spec{{Name: "c", Effect: tool.EffectWrite, Reversibility: tool.Compensatable}}}, 2, "reversibility: tool c can only be compensated"},
		{"irreversible", safety.Signals{Tools: []tool.Spec{{Name: "i", Effect: tool.EffectWrite, Reversibility: tool.Irreversible}}}, 3, "reversibility: tool i is irreversible (tier 3)"},
		{"irreversible and destructive", safety.Signals{Tools: []tool.Spec{{Name: "d", Effect: tool.EffectDestructive, Reversibility: tool.Irreversible}}}, 4, "destructive and irreversible (tier 4)"},
		{"tag user-facing", safety.Signals{Tools: []tool.Spec{{Name: "u", Effect: tool.EffectWrite, Tags: []string{"user-facing"}}}}, 2, "blast radius: tool u is tagged user-facing"},
		{"tag money", safety.Signals{Tools: []tool.Spec{{Name: "m", Effect: tool.EffectWrite, Tags: []string{"money"}}}}, 3, "blast radius: tool m is tagged money (tier 3)"},
		{"tag compliance", safety.Signals{Tools: []tool.Spec{{Name: "m", Effect: tool.EffectExternal, Tags: []string{"compliance"}}}}, 3, "tagged compliance"},
		{"fan-out at the limit", safety.Signals{Tools: []tool.Spec{write}, FanOut: 10}, 2, ""},
		{"fan-out above the limit", safety.Signals{Tools: []tool.Spec{write}, FanOut: 11}, 3, "fans out to 11 calls with side effects (max_fan_out 10)"},
		{"fan-out limit configured", safety.Signals{Tools: []tool.Spec{write}, FanOut: 3, Config: &safety.RiskConfig{MaxFanOut: 2}}, 3, "max_fan_out 2"},
		{"resources", safety.Signals{Tools: []tool.Spec{{Name: "r", Effect: tool.EffectWrite, Resources: []string{"a/{id}", "b/{id}"}}}, FanOut: 6}, 3, "12 resources written (max_resources 10)"},
		{"a few inferred args", safety.Signals{Tools: []tool.Spec{write}, Args: 3, Inferred: 1}, 2, "premise uncertainty: 1 of 3 arguments"},
		{"half the args inferred", safety.Signals{Tools: []tool.Spec{write}, Args: 4, Inferred: 2}, 3, "premise uncertainty: 2 of 4 arguments driving side effects were written by a model and no tool result verified them (tier 3)"},
		// before the calls, a model's argument may yet be verified: tier 2 at most.
		{"half the args inferred, ahead", safety.Signals{Tools: []tool.Spec{write}, Args: 4, Inferred: 2, Ahead: true}, 2, "premise uncertainty: 2 of 4 arguments driving side effects were written by a model (tier 2)"},
		{"unverified assumption", safety.Signals{Tools: []tool.Spec{write}, Unverified: []string{"region is EU"}}, 3, `unverified assumption "region is EU" (tier 3)`},
		{"unverified assumption behind a destructive effect", safety.Signals{Tools: []tool.Spec{del}, Unverified: []string{"x"}}, 4, "behind a destructive or irreversible effect (tier 4)"},
		{"cost by tool", safety.Signals{Tools: []tool.Spec{read}, Config: &safety.RiskConfig{ToolCost: map[string]int{"lookup": 4}}}, 4, "cost of error: risk costs tool lookup at tier 4"},
		{"cost by tag", safety.Signals{Tools: []tool.Spec{read}, Config: &safety.RiskConfig{TagCost: map[string]int{"money": 3}}}, 3, "cost of error: risk costs tag money (tool lookup) at tier 3"},
		{"floor", safety.Signals{Tools: []tool.Spec{write}, Config: &safety.RiskConfig{MinTier: 3}}, 3, "floor: risk min_tier is 3"},
		{"the most conservative wins", safety.Signals{Tools: []tool.Spec{write, del, ext}, Args: 10, Inferred: 1}, 3, "effect: tool purge is destructive"},
	}
	for _, tc := range cases {
		tier, reasons := safety.Assess(tc.s)
		if tier != tc.tier {
			t.Errorf("%s: tier %d, want %d (%q)", tc.name, tier, tc.tier, reasons)
		}
		if got := safety.TierOf(&tc.s); got != tier {
			t.Errorf("%s: TierOf %d, Assess %d", tc.name, got, tier)
		}
		if tc.reason == "" {
			if tier == 1 && len(reasons) != 0 {
				t.Errorf("%s: reasons %q for tier 1", tc.name, reasons)
			}
			continue
		}
		if !strings.Contains(strings.Join(reasons, "\n"), tc.reason) {
			t.Errorf("%s: reasons %q do not say %q", tc.name, reasons, tc.reason)
		}
		if !strings.HasSuffix(reasons[0], fmt.Sprintf("(tier %d)", tier)) {
			t.Errorf("%s: the first reason %q is not one that gave tier %d", tc.name, reasons[0], tier)
		}
	}
}

// TestRunRiskNeverLowers: a raise to a lower or equal tier changes
// nothing and is not reported.
func TestRunRiskNeverLowers(t *testing.T) {
	t.Parallel()
	var changes []safety.TierChange
	rr := safety.NewRunRisk(2, []string{"intake"}, safety.RunRiskConfig{OnRaise: func(c safety.TierChange) { changes = append(changes, c) }})
	if rr.Raise(safety.TierChange{To: 1}) || rr.Raise(safety.TierChange{To: 2}) {
		t.Error("a raise to a lower or equal tier reported a change")
	}
	if !rr.Raise(safety.TierChange{To: 3, Stage: "plan"}) || rr.Tier() != 3 {
		t.Errorf("raise to 3: tier %d", rr.Tier())
	}
	if len(changes) != 2 || changes[0].From != 0 || changes[0].To != 2 || changes[1].From != 2 || changes[1].To != 3 || changes[1].Stage != "plan" {
		t.Errorf("changes %+v", changes)
	}
}

type fakeReviewer struct {
	verdicts []safety.ClaimVerdict
	err      error
	asked    []*safety.ReviewRequest
}

func (f *fakeReviewer) Review(_ context.Context, req *safety.ReviewRequest) ([]safety.ClaimVerdict, error) {
	f.asked = append(f.asked, req)
	return f.verdicts, f.err
}

// TestControlsPerTier: the controls each tier adds to the policy's
// decision on a side-effect call, and on a read.
func TestControlsPerTier(t *testing.T) {
	t.Parallel()
	write := tool.Spec{Name: "save", Effect: tool.EffectWrite}
	read := tool.Spec{Name: "lookup", Effect: tool.EffectRead}
	supported := []safety.ClaimVerdict{{Claim: "c", Supported: true}}
	cases := []struct {
		name     string
		tier     int
		spec     tool.Spec
		reviewer *fakeReviewer
		approved bool
		verdict  safety.Verdict
		rule     string
		reviews  int
	}{
		{"tier 1 read: nothing added", 1, read, &fakeReviewer{}, false, safety.Allow, "", 0},
		{"tier 2 write: the light gate only", 2, write, &fakeReviewer{}, false, safety.Allow, "", 0},
		{"tier 3 read: no review", 3, read, &fakeReviewer{}, false, safety.Allow, "", 0},
		{"tier 3 write, claims supported", 3, write, &fakeReviewer{verdicts: supported}, false, safety.Allow, "reviewer", 1},
		{"tier 3 write, a claim unsupported", 3, write, &fakeReviewer{verdicts: []safety.ClaimVerdict{{Claim: "region is EU", Evidence: "input says US"}}}, false, safety.RequireApproval, "reviewer", 1},
		{"tier 3 write, the reviewer fails", 3, write, &fakeReviewer{err: errors.New("model down")}, false, safety.RequireApproval, "reviewer", 1},
		{"tier 3 write, no reviewer", 3, write, nil, false, safety.RequireApproval, "tier-review", 0},
		{"tier 4 write, claims supported: a person still approves", 4, write, &fakeReviewer{verdicts: supported}, false, safety.RequireApproval, "tier-approval", 1},
		{"tier 4 write, approved by a person: not reviewed", 4, write, &fakeReviewer{verdicts: supported}, true, safety.Allow, "tier-review", 0},
		{"tier 4 read", 4, read, &fakeReviewer{}, false, safety.Allow, "", 0},
	}
	for _, tc := range cases {
		ev := &safety.Evidence{}
		ev.AddUser("input", map[string]any{"q": "x"})
		cfg := safety.RunRiskConfig{Evidence: ev}
		if tc.reviewer != nil {
			cfg.Reviewer = tc.reviewer
		}
		rr := safety.NewRunRisk(tc.tier, nil, cfg)
		c := &safety.Controls{Gate: safety.AllowAll}
		inv := safety.Invocation{StepID: "s", Attempt: 1, Tool: tc.spec, Args: map[string]any{"id": "1"}, Approved: tc.approved}
		d, err := c.Check(safety.WithRunRisk(context.Background(), rr), &inv)
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict != tc.verdict || d.Rule != tc.rule {
			t.Errorf("%s: %s by %q (%s), want %s by %q", tc.name, d.Verdict, d.Rule, d.Reason, tc.verdict, tc.rule)
		}
		if inv.Tier != tc.tier {
			t.Errorf("%s: the gate saw tier %d", tc.name, inv.Tier)
		}
		if tc.reviewer != nil && len(tc.reviewer.asked) != tc.reviews {
			t.Errorf("%s: reviewer asked %d times, want %d", tc.name, len(tc.reviewer.asked), tc.reviews)
		}
		if tc.rule == "reviewer" && tc.verdict == safety.RequireApproval && tc.reviewer.err == nil && !strings.Contains(d.Reason, `"region is EU" (input says US)`) {
			t.Errorf("%s: reason %q does not name the unsupported claim", tc.name, d.Reason)
		}
	}
}

// TestControlsReviewOnce: asking about the same call twice (a step that
// parks, then the pipeline) asks the reviewer once; a rule's
// require_review is reviewed at any tier.
func TestControlsReviewOnce(t *testing.T) {
	t.Parallel()
	f := &fakeReviewer{verdicts: []safety.ClaimVerdict{{Claim: "c", Supported: true}}}
	rr := safety.NewRunRisk(2, nil, safety.RunRiskConfig{Reviewer: f})
	c := &safety.Controls{Gate: &safety.Policy{Rules: []safety.Rule{{Name: "look", Tools: []string{"save"}, Verdict: safety.RequireReview}}}}
	ctx := safety.WithRunRisk(context.Background(), rr)
	for range 2 {
		inv := safety.Invocation{StepID: "s", Attempt: 1, Tool: tool.Spec{Name: "save", Effect: tool.EffectWrite}, Args: map[string]any{"a": 1.0}}
		if d, _ := c.Check(ctx, &inv); d.Verdict != safety.Allow {
			t.Fatalf("decision %+v", d)
		}
	}
	if len(f.asked) != 1 {
		t.Errorf("reviewer asked %d times", len(f.asked))
	}
}

// TestControlsRaisePerCall: a call riskier than the run was assessed
// raises the tier before the gate decides, and the rules see it.
func TestControlsRaisePerCall(t *testing.T) {
	t.Parallel()
	var changes []safety.TierChange
	rr := safety.NewRunRisk(1, nil, safety.RunRiskConfig{OnRaise: func(c safety.TierChange) { changes = append(changes, c) }})
	c := &safety.Controls{Gate: &safety.Policy{Rules: safety.DefaultRules()}}
	inv := safety.Invocation{StepID: "s", Tool: tool.Spec{Name: "drop", Effect: tool.EffectDestructive}}
	d, _ := c.Check(safety.WithRunRisk(context.Background(), rr), &inv)
	if d.Verdict != safety.RequireApproval || d.Rule != "destructive-at-tier-3" || inv.Tier != 3 {
		t.Errorf("decision %+v at tier %d", d, inv.Tier)
	}
	if len(changes) != 2 || changes[1].Stage != "call" || changes[1].Tool != "drop" || changes[1].To != 3 || len(changes[1].Reasons) == 0 {
		t.Errorf("changes %+v", changes)
	}
}

// TestTierOfAllocatesNothing: the per-call check costs no allocation.
func TestTierOfAllocatesNothing(t *testing.T) {
	s := safety.Signals{Tools: []tool.Spec{{Name: "save", Effect: tool.EffectDestructive, Reversibility: tool.Irreversible, Tags: []string{"money"}}}, Args: 2, Inferred: 1}
	if n := testing.AllocsPerRun(100, func() { safety.TierOf(&s) }); n != 0 {
		t.Errorf("TierOf allocates %v times", n)
	}
}

// TestControlsAllocateNothing: the per-call check of a run's tier —
// its context, the call's own assessment, the rules — costs no
// allocation when nothing is raised.
func TestControlsAllocateNothing(t *testing.T) {
	c := &safety.Controls{Gate: &safety.Policy{Rules: safety.DefaultRules()}, Risk: &safety.RiskConfig{}}
	ctx := safety.WithRunRisk(context.Background(), safety.NewRunRisk(2, nil, safety.RunRiskConfig{}))
	inv := safety.Invocation{Tool: tool.Spec{Name: "save", Effect: tool.EffectWrite}, Provenance: prov("/id", "user")}
	if n := testing.AllocsPerRun(100, func() { inv.Tier = 0; _, _ = c.Check(ctx, &inv) }); n != 0 {
		t.Errorf("Controls.Check allocates %v times", n)
	}
}

// TestControlsRaiseForDeclaredAssumptions: a call whose declaration
// rests on assumptions raises the tier (premise uncertainty), and the
// reviewer is asked about each fact and assumption.
func TestControlsRaiseForDeclaredAssumptions(t *testing.T) {
	t.Parallel()
	var changes []safety.TierChange
	f := &fakeReviewer{verdicts: []safety.ClaimVerdict{{Claim: "customer is Ann", Supported: true}, {Claim: "region is EU", Evidence: "nothing says so"}}}
	rr := safety.NewRunRisk(2, nil, safety.RunRiskConfig{Reviewer: f, OnRaise: func(c safety.TierChange) { changes = append(changes, c) }})
	c := &safety.Controls{Gate: safety.AllowAll}
	inv := safety.Invocation{StepID: "ag", Tool: tool.Spec{Name: "create", Effect: tool.EffectWrite},
		Declaration: &safety.Declaration{Action: "create Ann",
			Facts:       []safety.Fact{{Claim: "customer is Ann", Source: "user"}},
			Assumptions: []safety.Assumption{{ID: "region", Claim: "region is EU"}}}}
	d, _ := c.Check(safety.WithRunRisk(context.Background(), rr), &inv)
	if inv.Tier != 3 || len(changes) != 2 || !strings.Contains(strings.Join(changes[1].Reasons, "\n"), `unverified assumption "region is EU" (tier 3)`) {
		t.Errorf("tier %d, changes %+v", inv.Tier, changes)
	}
	if len(f.asked) != 1 || strings.Join(f.asked[0].Claims, "|") != "customer is Ann|region is EU" || f.asked[0].Declaration != inv.Declaration {
		t.Fatalf("reviewer asked %+v", f.asked)
	}
	if d.Verdict != safety.RequireApproval || !strings.Contains(d.Reason, `"region is EU" (nothing says so)`) {
		t.Errorf("decision %+v", d)
	}
}
