package safety

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// RunRisk is one run's risk tier and what its controls need: assessed at
// intake (NewRunRisk), raised as the run learns more (Raise), never
// lowered. The reviewer it asks sees the run's Evidence (the user's input
// and the recorded tool results) and nothing else of the run. The engine
// puts it in the run's context (WithRunRisk), where Controls finds it.
// Safe for concurrent use.
type RunRisk struct {
	tier atomic.Int32
	mu   sync.Mutex
	cfg  RunRiskConfig
	// reviews remembers each call's review, so that asking the gate twice
	// about one call (before a step parks, then in the pipeline) asks the
	// reviewer once.
	reviews map[string]Decision
}

// RunRiskConfig is what a RunRisk is built with.
type RunRiskConfig struct {
	// Evidence is the run's record of the user's input and its tool
	// results, the evidence the reviewer sees (Evidence.ForReview); nil:
	// none. The caller keeps adding to it as the run goes on.
	Evidence *Evidence
	// OnRaise is told of every change of the tier, in order, while the
	// RunRisk's lock is held (it must not call back into the RunRisk).
	OnRaise func(TierChange)
	// Reviewer checks the claims of a call that needs review; nil: none is
	// configured, and such a call needs a person's approval instead.
	Reviewer Reviewer
	// OnReview is told of every review the reviewer made (or failed to).
	OnReview func(*Invocation, *ReviewOutcome)
	// PostCheck, when set, runs the configured post-check after a
	// side-effect call of a tier-4 run; its error fails the call.
	PostCheck func(ctx context.Context, inv *Invocation, output any) error
}

// TierChange is one change of a run's risk tier: the stage that assessed
// it (intake, plan, step, call) and why.
type TierChange struct {
	From, To int
	Stage    string
	// StepID names the step (and Tool the tool) whose assessment raised
	// the tier; empty at intake.
	StepID, Tool string
	Reasons      []string
}

// NewRunRisk returns a run's RunRisk at tier (1 to 4), the intake
// assessment, telling OnRaise of it as a change from 0.
func NewRunRisk(tier int, reasons []string, cfg RunRiskConfig) *RunRisk {
	r := &RunRisk{cfg: cfg}
	r.Raise(TierChange{To: tier, Stage: "intake", Reasons: reasons})
	return r
}

// RestoreRunRisk returns a RunRisk at tier, telling OnRaise nothing: a
// resumed run's at the tier its journal reached, or a run's whose intake
// change the caller journals itself.
func RestoreRunRisk(tier int, cfg RunRiskConfig) *RunRisk {
	r := &RunRisk{cfg: cfg}
	r.tier.Store(int32(tier))
	return r
}

// Tier returns the run's current tier.
func (r *RunRisk) Tier() int { return int(r.tier.Load()) }

// Raise sets the tier to c.To when that is higher than the current one,
// tells OnRaise (with From filled in) and reports whether it did. A lower
// or equal tier changes nothing: a tier is never lowered.
func (r *RunRisk) Raise(c TierChange) bool {
	if c.To <= r.Tier() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	from := r.Tier()
	if c.To <= from {
		return false
	}
	c.From = from
	r.tier.Store(int32(c.To))
	if r.cfg.OnRaise != nil {
		r.cfg.OnRaise(c)
	}
	return true
}

type runRiskKey struct{}

// WithRunRisk returns ctx carrying r, for Controls.
func WithRunRisk(ctx context.Context, r *RunRisk) context.Context {
	return context.WithValue(ctx, runRiskKey{}, r)
}

// RunRiskFrom returns the RunRisk of ctx, or nil.
func RunRiskFrom(ctx context.Context) *RunRisk {
	r, _ := ctx.Value(runRiskKey{}).(*RunRisk)
	return r
}

// ReviewConfig is rein.yaml / flow review:, which calls the reviewer
// checks. The model is the engine's concern.
type ReviewConfig struct {
	// Model names the reviewer's model.
	Model string
	// Tools and Steps narrow the calls reviewed at MinTier (empty: all);
	// a rule's require_review is reviewed whatever they say.
	Tools, Steps []string
	// MinTier is the tier from which side-effect calls are reviewed. Zero:
	// 3.
	MinTier int
}

// Controls is the gate of a run with risk tiers (the table at TierNone).
// It tells Gate the run's tier (Invocation.Tier), raises the tier when a
// call is riskier than the run was assessed (stage "call"), and adds the
// tier's controls to Gate's decision:
//
//   - tier ≥ 3 (or review: min_tier): a side-effect call gets
//     require_review (rule tier-review) unless Gate said more;
//   - require_review, from a rule or the tier, runs the reviewer (not for
//     a call a person approved, which is allowed; not, when a rule asked,
//     for a call a model chose whose declaration is missing or
//     unverified, which is left require_review so that the model
//     verifies first — invoke.VerifyError): every
//     claim supported → allow; a claim unsupported → require_approval
//     (rule reviewer) naming the claims; the reviewer failing, or none
//     configured → require_approval;
//   - tier 4: a side-effect call not approved by a person gets
//     require_approval (rule tier-approval), and after it succeeded the
//     post-check runs (PostCheck).
//
// Without a RunRisk in the context (a call outside a run) Controls is
// Gate with the invocation's own tier. Safe for concurrent use.
type Controls struct {
	Gate   Gate
	Risk   *RiskConfig
	Review *ReviewConfig
}

var _ PostChecker = (*Controls)(nil)

// PostChecker is a Gate that also checks a call's effect after it
// happened. The invocation pipeline calls PostCheck after a call
// succeeded; its error fails the call (a policy error).
type PostChecker interface {
	PostCheck(ctx context.Context, inv *Invocation, output any) error
}

// Check decides on inv as the type's documentation says.
func (c *Controls) Check(ctx context.Context, inv *Invocation) (Decision, error) {
	rr := RunRiskFrom(ctx)
	if rr != nil {
		c.raiseFor(rr, inv)
		inv.Tier = rr.Tier()
	}
	var d Decision
	if c.Gate != nil {
		var err error
		if d, err = c.Gate.Check(ctx, inv); err != nil {
			return d, err
		}
	}
	if d.Verdict == "" {
		d.Verdict = Allow
	}
	side := SideEffect(inv.Tool.Effect)
	if side && severity(d.Verdict) < severity(RequireReview) && c.reviews(inv) {
		d = Decision{Verdict: RequireReview, Rule: "tier-review",
			Reason: fmt.Sprintf("at risk tier %d a reviewer checks every side-effect call", inv.Tier)}
	}
	if d.Verdict == RequireReview && inv.Approved {
		// a person approved this exact call: that is the stronger control.
		d = Decision{Verdict: Allow, Rule: d.Rule, Reason: "a person approved this call; it is not reviewed"}
	}
	if d.Verdict == RequireReview {
		if st := StateOf(inv.Chosen, inv.Declaration, inv.Claims); d.Rule != "tier-review" && (st == DeclarationMissing || st == DeclarationUnverified) {
			// the model verifies first (invoke.VerifyError): a reviewer
			// has no checked claims to judge yet.
			return d, nil
		}
		d = c.review(ctx, rr, inv, d)
	}
	if side && inv.Tier >= TierApproved && !inv.Approved && severity(d.Verdict) < severity(RequireApproval) {
		why := fmt.Sprintf("at risk tier %d a person approves every side-effect call", inv.Tier)
		if d.Rule == "reviewer" {
			why += "; " + d.Reason
		}
		d = Decision{Verdict: RequireApproval, Rule: "tier-approval", Reason: why}
	}
	return d, nil
}

// raiseFor raises rr's tier to what inv alone is assessed at: its tool,
// the share of its arguments a model wrote that no tool result verified,
// and its declaration's unverified assumptions. The tier is worked out
// without reasons first; they are written only for a raise.
func (c *Controls) raiseFor(rr *RunRisk, inv *Invocation) {
	s := Signals{Tools: []tool.Spec{inv.Tool}, Config: c.Risk}
	if SideEffect(inv.Tool.Effect) {
		for ptr, os := range inv.Provenance {
			s.Args++
			if slices.ContainsFunc(os, Origin.Unsourced) && !verified(inv.Verified, ptr) {
				s.Inferred++
			}
		}
		if d := inv.Declaration; d != nil {
			for _, a := range d.Assumptions {
				s.Unverified = append(s.Unverified, a.Claim)
			}
		}
	}
	if TierOf(&s) <= rr.Tier() {
		return
	}
	tier, reasons := Assess(s)
	rr.Raise(TierChange{To: tier, Stage: "call", StepID: inv.StepID, Tool: inv.Tool.Name, Reasons: reasons})
}

// reviews reports whether the tier's controls include a review of inv.
func (c *Controls) reviews(inv *Invocation) bool {
	from := TierReviewed
	if c.Review != nil && c.Review.MinTier > 0 {
		from = c.Review.MinTier
	}
	if inv.Tier < from {
		return false
	}
	if c.Review == nil {
		return true
	}
	// a plan step's call is step/plan-step: the flow step decides.
	step, _, _ := strings.Cut(inv.StepID, "/")
	return (len(c.Review.Tools) == 0 || slices.Contains(c.Review.Tools, inv.Tool.Name)) &&
		(len(c.Review.Steps) == 0 || slices.Contains(c.Review.Steps, step))
}

// ReviewCall asks the reviewer of the RunRisk in ctx about inv, as a
// require_review would, whatever the tier and review: narrow: allow when
// it finds every claim supported, require_approval otherwise, and when
// there is no RunRisk or no reviewer. The review is remembered per call,
// so the gate asked about the same call later does not ask again.
// Remediation uses it for a tier-3 undo or compensation.
func (c *Controls) ReviewCall(ctx context.Context, inv *Invocation, why string) Decision {
	return c.review(ctx, RunRiskFrom(ctx), inv, Decision{Verdict: RequireReview, Rule: "tier-review", Reason: why})
}

// review runs the reviewer on inv (once per call: the decision is
// remembered by step, attempt, tool and args) and turns its verdicts into
// the decision.
func (c *Controls) review(ctx context.Context, rr *RunRisk, inv *Invocation, asked Decision) Decision {
	if rr == nil || rr.cfg.Reviewer == nil {
		return Decision{Verdict: RequireApproval, Rule: asked.Rule,
			Reason: asked.Reason + "; no reviewer is configured (review:), so a person decides"}
	}
	key := reviewKey(inv)
	rr.mu.Lock()
	d, ok := rr.reviews[key]
	rr.mu.Unlock()
	if ok {
		return d
	}
	req := rr.request(inv)
	verdicts, err := rr.cfg.Reviewer.Review(ctx, req)
	out := &ReviewOutcome{Claims: req.Claims, Verdicts: verdicts, Err: err}
	d = out.decide()
	out.Decision = d
	if rr.cfg.OnReview != nil {
		rr.cfg.OnReview(inv, out)
	}
	rr.mu.Lock()
	if rr.reviews == nil {
		rr.reviews = map[string]Decision{}
	}
	rr.reviews[key] = d
	rr.mu.Unlock()
	return d
}

func reviewKey(inv *Invocation) string {
	b := fmt.Appendf(nil, "%s\x00%d\x00%s\x00", inv.StepID, inv.Attempt, inv.Tool.Name)
	b, _ = value.AppendCanonical(b, inv.Args)
	return string(b)
}

// PostCheck runs the configured post-check after a side-effect call of a
// tier-4 run; nil otherwise.
func (c *Controls) PostCheck(ctx context.Context, inv *Invocation, output any) error {
	if c.Risk == nil || c.Risk.PostCheck == "" || !SideEffect(inv.Tool.Effect) {
		return nil
	}
	rr := RunRiskFrom(ctx)
	if rr == nil || rr.Tier() < TierApproved || rr.cfg.PostCheck == nil {
		return nil
	}
	return rr.cfg.PostCheck(ctx, inv, output)
}

// ReviewOutcome is one review: the claims asked about, the reviewer's
// verdicts or its error, and the decision they made.
type ReviewOutcome struct {
	Claims   []string
	Verdicts []ClaimVerdict
	Err      error
	Decision Decision
}

// decide turns the verdicts into a decision: every claim supported →
// allow; otherwise require_approval naming what was not.
func (o *ReviewOutcome) decide() Decision {
	if o.Err != nil {
		return Decision{Verdict: RequireApproval, Rule: "reviewer", Reason: "the reviewer failed, so a person decides: " + o.Err.Error()}
	}
	var bad []string
	for _, v := range o.Verdicts {
		if !v.Supported {
			s := fmt.Sprintf("%q", v.Claim)
			if v.Evidence != "" {
				s += " (" + v.Evidence + ")"
			}
			bad = append(bad, s)
		}
	}
	if len(bad) > 0 {
		return Decision{Verdict: RequireApproval, Rule: "reviewer", Reason: "the reviewer found claims unsupported: " + strings.Join(bad, "; ")}
	}
	if len(o.Verdicts) == 0 {
		return Decision{Verdict: RequireApproval, Rule: "reviewer", Reason: "the reviewer judged no claim, so a person decides"}
	}
	return Decision{Verdict: Allow, Rule: "reviewer", Reason: fmt.Sprintf("the reviewer found all %d claims supported", len(o.Verdicts))}
}

// Assessor is a Gate that takes in what a run will do as soon as it is
// known — the tools of a plan before its first step runs — so that the
// tier is raised before any of it happens. The plan executor calls it.
type Assessor interface {
	AssessAhead(ctx context.Context, stage, stepID string, s Signals)
}

var _ Assessor = (*Controls)(nil)

// AssessAhead raises the tier of the run in ctx to what s is assessed at
// (with the Controls' RiskConfig), at stage for step stepID.
func (c *Controls) AssessAhead(ctx context.Context, stage, stepID string, s Signals) {
	rr := RunRiskFrom(ctx)
	if rr == nil {
		return
	}
	s.Config = c.Risk
	if TierOf(&s) <= rr.Tier() {
		return
	}
	tier, reasons := Assess(s)
	rr.Raise(TierChange{To: tier, Stage: stage, StepID: stepID, Reasons: reasons})
}

// CountArgs adds p's arguments to s's Args, and those a model wrote to
// Inferred (inferred or user-mentioned), when spec has a side effect.
func (s *Signals) CountArgs(spec *tool.Spec, p Provenance) {
	if !SideEffect(spec.Effect) {
		return
	}
	for _, os := range p {
		s.Args++
		for _, o := range os {
			if o.Unsourced() {
				s.Inferred++
				break
			}
		}
	}
}

// verified reports whether ptr is among vs.
func verified(vs []Verification, ptr string) bool {
	for i := range vs {
		if vs[i].Pointer == ptr {
			return true
		}
	}
	return false
}
