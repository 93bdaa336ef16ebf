package safety

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/tool"
)

// Rule is one rule of a Policy: when every condition it sets holds for an
// invocation, it gives its verdict. Rules are data (rein.yaml policy:,
// `rein policy test`); conditions left empty hold for every invocation.
type Rule struct {
	// Name identifies the rule in decisions, traces and messages.
	Name string
	// Tools: the tool is one of these.
	Tools []string
	// Effects: the tool's effect is one of these ("" counts as none).
	Effects []tool.Effect
	// Reversibility: the tool's reversibility is one of these.
	Reversibility []tool.Reversibility
	// Tags: the tool carries one of these tags.
	Tags []string
	// Provenance: some argument has one of these origins; "tool:*" stands
	// for any tool's output (db included).
	Provenance []Origin
	// Unverified narrows Provenance to arguments that no source-of-truth
	// field of a tool result of this run holds (Invocation.Verified,
	// tool.Spec.Verifies). It needs Provenance.
	Unverified bool
	// Declaration: the call is chosen by a model and its declaration is in
	// one of these states (missing, unverified, verified).
	Declaration []DeclarationState
	// MinTier: the invocation's risk tier is known and at least MinTier.
	// Zero: any tier, known or not.
	MinTier int
	Verdict Verdict
	// Reason says why, for people; the decision adds what matched.
	Reason string
}

// Policy is a Gate over rules. Every rule is checked; the decision is the
// most severe verdict of the rules that hold (block, then
// require_approval, then require_review; among equals, the first rule),
// allow when none holds. A require_approval rule does not hold for an
// invocation a person approved (Invocation.Approved). A Policy is
// immutable once in use and safe for concurrent use.
type Policy struct {
	Rules []Rule
}

var _ Gate = (*Policy)(nil)

// severity orders verdicts, allow lowest.
func severity(v Verdict) int {
	switch v {
	case Block:
		return 3
	case RequireApproval:
		return 2
	case RequireReview:
		return 1
	}
	return 0
}

// Valid reports whether v is one of the verdicts.
func (v Verdict) Valid() bool {
	switch v {
	case Allow, Block, RequireApproval, RequireReview:
		return true
	}
	return false
}

// Check decides on inv. It allocates only for a rule that holds.
func (p *Policy) Check(_ context.Context, inv *Invocation) (Decision, error) {
	best := -1
	var bestArg string
	for i := range p.Rules {
		r := &p.Rules[i]
		if inv.Approved && r.Verdict == RequireApproval {
			continue
		}
		arg, ok := r.holds(inv)
		if !ok || best >= 0 && severity(r.Verdict) <= severity(p.Rules[best].Verdict) {
			continue
		}
		best, bestArg = i, arg
	}
	if best < 0 {
		return Decision{Verdict: Allow}, nil
	}
	r := &p.Rules[best]
	return Decision{Verdict: r.Verdict, Rule: r.Name, Reason: r.explain(inv, bestArg)}, nil
}

// holds reports whether every condition of r holds for inv, and for a
// provenance condition which argument matched.
func (r *Rule) holds(inv *Invocation) (string, bool) {
	spec := &inv.Tool
	if len(r.Tools) > 0 && !slices.Contains(r.Tools, spec.Name) {
		return "", false
	}
	if len(r.Effects) > 0 && !slices.Contains(r.Effects, effectOf(spec)) {
		return "", false
	}
	if len(r.Reversibility) > 0 && !slices.Contains(r.Reversibility, spec.Reversibility) {
		return "", false
	}
	if len(r.Tags) > 0 && !slices.ContainsFunc(spec.Tags, func(t string) bool { return slices.Contains(r.Tags, t) }) {
		return "", false
	}
	if r.MinTier > 0 && inv.Tier < r.MinTier {
		return "", false
	}
	if len(r.Declaration) > 0 && !slices.Contains(r.Declaration, StateOf(inv.Chosen, inv.Declaration, inv.Claims)) {
		return "", false
	}
	if len(r.Provenance) > 0 {
		if r.Unverified && len(inv.Verified) > 0 {
			ptr, _, ok := inv.Provenance.Find(func(ptr string, o Origin) bool { return r.matchesOrigin(o) && !isVerified(inv.Verified, ptr) })
			return ptr, ok
		}
		ptr, _, ok := inv.Provenance.Has(r.matchesOrigin)
		return ptr, ok
	}
	return "", true
}

// isVerified reports whether vs (sorted by pointer) confirms ptr.
func isVerified(vs []Verification, ptr string) bool {
	_, ok := slices.BinarySearchFunc(vs, ptr, func(v Verification, p string) int { return strings.Compare(v.Pointer, p) })
	return ok
}

func (r *Rule) matchesOrigin(o Origin) bool {
	for _, want := range r.Provenance {
		if want == o || want == "tool:*" && o.IsTool() {
			return true
		}
	}
	return false
}

func effectOf(spec *tool.Spec) tool.Effect {
	if spec.Effect == "" {
		return tool.EffectNone
	}
	return spec.Effect
}

// explain is the decision's reason: the rule's own, then what matched.
func (r *Rule) explain(inv *Invocation, arg string) string {
	var b strings.Builder
	b.WriteString(r.Reason)
	var facts []string
	if len(r.Provenance) > 0 {
		where := "argument " + pointerName(arg)
		facts = append(facts, fmt.Sprintf("%s comes from %s", where, joinOrigins(inv.Provenance[arg])))
	}
	if r.Unverified {
		facts = append(facts, "no tool result of this run confirms it")
	}
	if len(r.Declaration) > 0 {
		facts = append(facts, declarationFact(inv))
	}
	if len(r.Effects) > 0 {
		facts = append(facts, fmt.Sprintf("tool %s has effect %s", inv.Tool.Name, effectOf(&inv.Tool)))
	}
	if len(r.Reversibility) > 0 {
		facts = append(facts, fmt.Sprintf("tool %s is %s", inv.Tool.Name, inv.Tool.Reversibility))
	}
	if len(r.Tags) > 0 {
		facts = append(facts, fmt.Sprintf("tool %s is tagged %s", inv.Tool.Name, strings.Join(inv.Tool.Tags, ", ")))
	}
	if r.MinTier > 0 {
		facts = append(facts, fmt.Sprintf("risk tier %d", inv.Tier))
	}
	if len(facts) > 0 {
		if b.Len() > 0 {
			b.WriteString(" (")
		}
		b.WriteString(strings.Join(facts, "; "))
		if len(r.Reason) > 0 {
			b.WriteString(")")
		}
	}
	if b.Len() == 0 {
		b.WriteString("rule " + r.Name)
	}
	return b.String()
}

func pointerName(ptr string) string {
	if ptr == "" {
		return "(the whole args)"
	}
	return ptr
}

func joinOrigins(os []Origin) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = string(o)
	}
	return strings.Join(s, " + ")
}

// DefaultRules is the default rule set (rein.yaml policy: {defaults: true}):
//
//   - inferred-drives-effect: an argument written by a model (inferred)
//     or found only in the user's free text (user-mentioned) may not drive
//     a write, external or destructive effect without a person's approval,
//     unless a source-of-truth field of a tool result of this run (a
//     field the tool's verifies: names) holds its value (Unverified);
//   - undeclared-side-effect: a call a model chose (plan step, agent call,
//     execute_plan step) with a write, external or destructive effect
//     whose declaration is missing or unverified gets require_review: the
//     model is asked to verify (an agent sees an observation naming what
//     to check with which tool, a plan step fails with the JSON pointers
//     of the unsupported facts and may be replanned). Make the rule
//     require_approval to have a person decide instead;
//   - money-or-compliance: a side effect of a tool tagged money or
//     compliance needs approval;
//   - destructive-at-tier-3, irreversible-at-tier-3: a destructive or
//     irreversible effect needs approval at risk tier 3 or more. The
//     engine assesses every gated run's tier (Controls); an invocation
//     that carries none (a call outside a run) never matches them.
//
// It returns a fresh slice.
func DefaultRules() []Rule {
	side := []tool.Effect{tool.EffectWrite, tool.EffectExternal, tool.EffectDestructive}
	return []Rule{
		{Name: "inferred-drives-effect", Provenance: []Origin{OriginInferred, OriginUserMentioned}, Unverified: true, Effects: side, Verdict: RequireApproval,
			Reason: "a value written by a model drives a side effect; a person approves the exact call"},
		{Name: "undeclared-side-effect", Declaration: []DeclarationState{DeclarationMissing, DeclarationUnverified}, Effects: side, Verdict: RequireReview,
			Reason: "a side effect a model chose needs a declaration whose facts the run confirms"},
		{Name: "money-or-compliance", Tags: []string{"money", "compliance"}, Effects: side, Verdict: RequireApproval,
			Reason: "a side effect touching money or compliance is escalated to a person"},
		{Name: "destructive-at-tier-3", Effects: []tool.Effect{tool.EffectDestructive}, MinTier: 3, Verdict: RequireApproval,
			Reason: "a destructive effect at risk tier 3 or more needs approval"},
		{Name: "irreversible-at-tier-3", Reversibility: []tool.Reversibility{tool.Irreversible}, MinTier: 3, Verdict: RequireApproval,
			Reason: "an irreversible effect at risk tier 3 or more needs approval"},
	}
}

// Join returns a gate that asks every gate of gates and takes the most
// severe decision (among equals, the first gate's); an error of any gate
// is the error. Nil gates and AllowAll are left out; with none left it is
// AllowAll, with one that gate.
func Join(gates ...Gate) Gate {
	var gs []Gate
	for _, g := range gates {
		if g != nil && g != AllowAll {
			gs = append(gs, g)
		}
	}
	switch len(gs) {
	case 0:
		return AllowAll
	case 1:
		return gs[0]
	}
	return &joined{gates: gs}
}

// joined is a pointer so that gates compare (a slice would panic).
type joined struct{ gates []Gate }

func (j *joined) Check(ctx context.Context, inv *Invocation) (Decision, error) {
	best := Decision{Verdict: Allow}
	for _, g := range j.gates {
		d, err := g.Check(ctx, inv)
		if err != nil {
			return Decision{}, err
		}
		if d.Verdict == "" {
			d.Verdict = Allow
		}
		if severity(d.Verdict) > severity(best.Verdict) {
			best = d
		}
	}
	return best, nil
}

// declarationFact says what is wrong with inv's declaration.
func declarationFact(inv *Invocation) string {
	switch StateOf(inv.Chosen, inv.Declaration, inv.Claims) {
	case DeclarationMissing:
		return "the model declared nothing for this call"
	case DeclarationVerified:
		return "its declaration is verified"
	}
	if inv.Declaration != nil && len(inv.Declaration.Facts) == 0 {
		return "its declaration states no fact"
	}
	for _, c := range inv.Claims {
		if !c.Supported {
			return fmt.Sprintf("declared fact %q is unverified: %s", cut(c.Claim, 120), c.Evidence)
		}
	}
	return "its declaration is unverified"
}

// ByTool returns a gate that hands each invocation to the gate of its
// tool (gates, by tool name) and allows a tool without one: the gate of a
// server offering tools from several projects, each decided by its own
// rules. gates is not copied and must not change once in use.
func ByTool(gates map[string]Gate) Gate { return byTool(gates) }

type byTool map[string]Gate

func (g byTool) Check(ctx context.Context, inv *Invocation) (Decision, error) {
	if gate := g[inv.Tool.Name]; gate != nil {
		return gate.Check(ctx, inv)
	}
	return Decision{Verdict: Allow}, nil
}
