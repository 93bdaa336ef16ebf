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
	// Arguments: per-argument provenance, each of them holds (the argument
	// at its pointer comes from one of its origins; Unverified narrows
	// these too).
	Arguments []ArgOrigins
	// When: a condition over the invocation's values (args, tool, tier).
	When Condition
	// Verdict is block, require_approval, require_review, or allow: an
	// allow rule that holds lets the call through past the
	// require_approval and require_review rules of the same policy (never
	// past a block, nor past another gate of a Join).
	Verdict Verdict
	// Reason says why, for people; the decision adds what matched.
	Reason string
	// LogOnly (rein.yaml enforce: false) watches a rule before it bites:
	// when it holds, the decision lists it in LogOnly and is otherwise
	// what it would be without the rule.
	LogOnly bool
}

// Policy is a Gate over rules. Every rule is checked, in order; the
// decision is block when a block rule holds; else allow when an allow rule
// holds (the first); else the most severe verdict of the rules that hold
// (require_approval, then require_review; among equals, the first rule);
// allow when none holds. A require_approval rule does not hold for an
// invocation a person approved (Invocation.Approved). Log-only rules that
// hold are listed in the decision's LogOnly and decide nothing. A Policy
// is immutable once in use and safe for concurrent use.
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
func (p *Policy) Check(ctx context.Context, inv *Invocation) (Decision, error) {
	best, allow := -1, -1
	var bestArg, allowArg string
	var bestErr, allowErr error
	var watched []Decision
	for i := range p.Rules {
		r := &p.Rules[i]
		if inv.Approved && r.Verdict == RequireApproval {
			continue
		}
		arg, ok, werr := r.holds(ctx, inv)
		switch {
		case !ok:
		case r.LogOnly:
			watched = append(watched, Decision{Verdict: r.Verdict, Rule: r.Name, Reason: r.explain(inv, arg, werr)})
		case r.Verdict == Allow:
			if allow < 0 {
				allow, allowArg, allowErr = i, arg, werr
			}
		case best < 0 || severity(r.Verdict) > severity(p.Rules[best].Verdict):
			best, bestArg, bestErr = i, arg, werr
		}
	}
	d := Decision{Verdict: Allow, LogOnly: watched}
	switch {
	case best >= 0 && (p.Rules[best].Verdict == Block || allow < 0):
		r := &p.Rules[best]
		d.Verdict, d.Rule, d.Reason = r.Verdict, r.Name, r.explain(inv, bestArg, bestErr)
	case allow >= 0:
		r := &p.Rules[allow]
		d.Rule, d.Reason = r.Name, r.explain(inv, allowArg, allowErr)
	}
	return d, nil
}

// holds reports whether every condition of r holds for inv, which
// argument matched a provenance condition, and the error of a when: that
// could not be decided (the rule then holds unless it allows).
func (r *Rule) holds(ctx context.Context, inv *Invocation) (string, bool, error) {
	arg, ok := r.staticHolds(inv)
	if !ok {
		return "", false, nil
	}
	held, err := r.whenHolds(ctx, inv)
	return arg, held, err
}

// staticHolds checks every condition but When, and names the argument a
// provenance condition matched.
func (r *Rule) staticHolds(inv *Invocation) (string, bool) {
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
	var arg string
	if len(r.Arguments) > 0 {
		var ok bool
		if arg, ok = r.argsHold(inv); !ok {
			return "", false
		}
	}
	if len(r.Provenance) > 0 {
		var ptr string
		var ok bool
		if r.Unverified && len(inv.Verified) > 0 {
			ptr, _, ok = inv.Provenance.Find(func(ptr string, o Origin) bool { return r.matchesOrigin(o) && !isVerified(inv.Verified, ptr) })
		} else {
			ptr, _, ok = inv.Provenance.Has(r.matchesOrigin)
		}
		if !ok {
			return "", false
		}
		if len(r.Arguments) == 0 {
			arg = ptr
		}
	}
	return arg, true
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
func (r *Rule) explain(inv *Invocation, arg string, whenErr error) string {
	var b strings.Builder
	b.WriteString(r.Reason)
	var facts []string
	if r.When != nil {
		if whenErr != nil {
			msg, _, _ := strings.Cut(whenErr.Error(), "\n")
			facts = append(facts, fmt.Sprintf("when: %s could not be decided (%s), so the rule holds", r.When, msg))
		} else {
			facts = append(facts, "when: "+r.When.String())
		}
	}
	if len(r.Provenance) > 0 || len(r.Arguments) > 0 {
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
//   - invalidated-resource: a write, external or destructive call that
//     touches a resource a remediation marked invalid (origin
//     invalidated: InvalidatedRule) needs a person's approval. The
//     invocation pipeline applies it to such a call whatever the gate,
//     naming the resource, the run and premise that invalidated it and how
//     to clear it;
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
		InvalidatedRule(""),
		{Name: "money-or-compliance", Tags: []string{"money", "compliance"}, Effects: side, Verdict: RequireApproval,
			Reason: "a side effect touching money or compliance is escalated to a person"},
		{Name: "destructive-at-tier-3", Effects: []tool.Effect{tool.EffectDestructive}, MinTier: 3, Verdict: RequireApproval,
			Reason: "a destructive effect at risk tier 3 or more needs approval"},
		{Name: "irreversible-at-tier-3", Reversibility: []tool.Reversibility{tool.Irreversible}, MinTier: 3, Verdict: RequireApproval,
			Reason: "an irreversible effect at risk tier 3 or more needs approval"},
	}
}

// InvalidatedRuleName names the default rule about invalidated resources.
const InvalidatedRuleName = "invalidated-resource"

// InvalidatedRule is the default rule invalidated-resource with reason
// (empty: the generic one): an argument of origin invalidated drives a
// write, external or destructive effect, so a person approves the exact
// call.
func InvalidatedRule(reason string) Rule {
	if reason == "" {
		reason = "the call touches a resource a remediation marked invalid (rein resources list); a person approves the exact call, or clears the resource (rein resources clear)"
	}
	return Rule{Name: InvalidatedRuleName, Provenance: []Origin{OriginInvalidated}, Effects: []tool.Effect{tool.EffectWrite, tool.EffectExternal, tool.EffectDestructive},
		Verdict: RequireApproval, Reason: reason}
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
	var watched []Decision
	for _, g := range j.gates {
		d, err := g.Check(ctx, inv)
		if err != nil {
			return Decision{}, err
		}
		if d.Verdict == "" {
			d.Verdict = Allow
		}
		watched = append(watched, d.LogOnly...)
		if severity(d.Verdict) > severity(best.Verdict) || best.Rule == "" && d.Rule != "" && d.Verdict == best.Verdict {
			best = d
		}
	}
	best.LogOnly = watched
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
