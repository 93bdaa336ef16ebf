package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/safety/review"
	"github.com/reinhq/rein/tool"
)

// Every undo and compensation passes the risk controls of its own tier
// before the gate: it is assessed (safety.Assess over the compensating
// tool and its args' provenance, with the run's tier as the floor) and,
// when the flow's runs have risk tiers (risk:, review:, or a policy that
// reads the tier — opt-in, as for every call; without them it is made at
// once, through the gate),
//
//	tier 1–2  is made at once, through the run's gate
//	tier 3    is reviewed by the run's reviewer (review:) and made when the
//	          reviewer finds it supported; without a reviewer, or when the
//	          reviewer does not, a person approves it first
//	tier 4    waits for a person's approval
//
// A wait is an escalation of the remediation (rein runs approve RUN
// <step>/<attempt>/<action>), durable like every approval; approving makes
// the call, with the gate told a person approved it. The tier, who let the
// call through (journal.Control…) and why are in its remediation record.

// remedyControls assesses the call req (its tool: spec) for rec, with the
// run's tier floor, and returns the context to make it in — carrying a
// safety.RunRisk at its tier when the flow has risk tiers, so the gate's
// controls see that tier and the reviewer's decision is remembered — and,
// when a person must approve it first, why ("" when it may be made now).
// A call a person approved (approved) is assessed but not held.
func (r *run) remedyControls(ctx context.Context, req *invoke.Request, spec *tool.Spec, rec *journal.Remediation, floor int, approved bool) (context.Context, string) {
	t := r.b.tiers
	tier, reason := r.remedyTier(req, spec, floor)
	rec.Tier, rec.Reason = tier, reason
	if t != nil {
		rc := safety.RunRiskConfig{Evidence: r.ev, OnReview: r.recordReview}
		if t.reviewer != nil {
			rc.Reviewer = &review.Model{Model: reviewMeter{r: r, m: t.reviewer, name: t.reviewerName}, Name: t.reviewerName}
		}
		if t.postCheck != nil {
			rc.PostCheck = r.postCheck // a tier-4 compensation is checked after it, as every call there
		}
		ctx = safety.WithRunRisk(ctx, safety.RestoreRunRisk(tier, rc))
	}
	if approved {
		rec.Control = journal.ControlPerson
		return ctx, ""
	}
	control, why := r.remedyControl(tier)
	switch control {
	case journal.ControlAutomatic:
		rec.Control = journal.ControlAutomatic
		if t == nil {
			rec.Reason += "; " + why
		}
		return ctx, ""
	case journal.ControlReviewer:
		inv := safety.Invocation{RunID: r.id, StepID: req.At.StepID, Attempt: req.At.Attempt, Tool: *spec, Args: req.Args, Provenance: req.Provenance, Tier: tier}
		d := t.controls.ReviewCall(ctx, &inv, fmt.Sprintf("at risk tier %d a reviewer checks every %s", tier, req.At.Remedy))
		if d.Verdict == safety.Allow {
			rec.Control, rec.Reason = journal.ControlReviewer, rec.Reason+"; "+d.Why()
			return ctx, ""
		}
		rec.Control, rec.Reason = journal.ControlPerson, rec.Reason+"; "+d.Why()
		return ctx, fmt.Sprintf("is at risk tier %d (%s) and the reviewer did not let it through: %s", tier, reason, d.Why())
	default:
		rec.Control = journal.ControlPerson
		return ctx, fmt.Sprintf("is at risk tier %d (%s), %s", tier, reason, why)
	}
}

// remedyTier assesses an undo or compensation, the call req of the tool
// spec: safety.Assess over the tool and its args' provenance, raised to
// floor (the run's tier). It returns the tier and why.
func (r *run) remedyTier(req *invoke.Request, spec *tool.Spec, floor int) (int, string) {
	var cfg *safety.RiskConfig
	if t := r.b.tiers; t != nil {
		cfg = t.controls.Risk
	}
	sig := safety.Signals{Tools: []tool.Spec{*spec}, Config: cfg}
	sig.CountArgs(spec, req.Provenance)
	tier, reasons := safety.Assess(sig)
	if floor > tier {
		tier = floor
		reasons = append(reasons, fmt.Sprintf("floor: the run is at risk tier %d (tier %d)", floor, floor))
	}
	return tier, strings.Join(reasons, "; ")
}

// remedyControl is who lets an undo or compensation at tier through
// (journal.Control…), before anyone is asked, and why.
func (r *run) remedyControl(tier int) (control, why string) {
	t := r.b.tiers
	switch {
	case tier <= safety.TierLight:
		return journal.ControlAutomatic, "made at once, through the gate"
	case t == nil:
		// tiers are opt-in: a flow without them gets no tier controls on
		// its calls, and none on the calls that take them back.
		return journal.ControlAutomatic, "risk tiers are off for this flow (risk:, review: or a policy that reads the tier turn them on), so only the gate decides"
	case tier == safety.TierReviewed && t.reviewer != nil:
		return journal.ControlReviewer, "the reviewer checks it first, and a person approves it when the reviewer does not find it supported"
	case tier == safety.TierReviewed:
		return journal.ControlPerson, "where a reviewer checks it, and none is configured (review:), so a person approves it first"
	default:
		return journal.ControlPerson, "where a person approves it before it is made"
	}
}

// RemedyCheck is how an undo or compensation would be let through if it
// were made now, assessed as remediation assesses it but without making
// it or asking anyone (Engine.CheckRemedies).
type RemedyCheck struct {
	// Tier is the call's risk tier (0 for a freeze, which calls nothing).
	Tier int `json:"tier,omitempty"`
	// Control is who lets it through: journal.ControlAutomatic (through
	// the gate), ControlReviewer (tier 3 with review:; a person if the
	// reviewer does not find it supported) or ControlPerson; "" for a
	// freeze that asks no one.
	Control string `json:"control,omitempty"`
	// Why says what the tier and the control come from.
	Why string `json:"why,omitempty"`
}

// CheckRemedies assesses remedies for run runID of flow f as Remediate
// would make them — each undo or compensation at its own risk tier, with
// the run's tier as the floor, and the control that tier selects — without
// making them, asking the reviewer or writing anything. The gate still
// decides each call when it is made.
func (e *Engine) CheckRemedies(ctx context.Context, f *flow.Flow, runID string, remedies []Remedy) ([]RemedyCheck, error) {
	b, err := e.bind(f)
	if err != nil {
		return nil, err
	}
	st, err := e.readRemedies(ctx, runID)
	if err != nil {
		return nil, err
	}
	r := newRun(e, f, b, runID, nil)
	defer r.recycle()
	out := make([]RemedyCheck, len(remedies))
	for i := range remedies {
		out[i] = r.checkRemedy(&remedies[i], st.tier)
	}
	return out, nil
}

// checkRemedy is CheckRemedies for one remedy.
func (r *run) checkRemedy(rm *Remedy, floor int) RemedyCheck {
	eff := &rm.Effect
	switch rm.Action {
	case ActKeep:
		return RemedyCheck{}
	case ActFreeze:
		if safety.Escalates(eff.Tags) {
			return RemedyCheck{Control: journal.ControlPerson, Why: fmt.Sprintf("it cannot be taken back and is tagged %s: a person puts it right", strings.Join(eff.Tags, ", "))}
		}
		return RemedyCheck{Why: "it cannot be taken back: its objects are marked invalid, and no one is asked"}
	}
	req, spec, err := r.remedyRequest(eff, eff.Compensation, string(rm.Action))
	if err != nil {
		return RemedyCheck{Control: journal.ControlPerson, Why: err.Error() + ": it would fail, and be escalated to a person"}
	}
	tier, reason := r.remedyTier(req, &spec, floor)
	control, why := r.remedyControl(tier)
	return RemedyCheck{Tier: tier, Control: control, Why: fmt.Sprintf("risk tier %d (%s): %s", tier, reason, why)}
}
