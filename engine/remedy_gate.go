package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/reinhq/rein/invoke"
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
	var cfg *safety.RiskConfig
	if t != nil {
		cfg = t.controls.Risk
	}
	sig := safety.Signals{Tools: []tool.Spec{*spec}, Config: cfg}
	sig.CountArgs(spec, req.Provenance)
	tier, reasons := safety.Assess(sig)
	if floor > tier {
		tier = floor
		reasons = append(reasons, fmt.Sprintf("floor: the run is at risk tier %d (tier %d)", floor, floor))
	}
	rec.Tier, rec.Reason = tier, strings.Join(reasons, "; ")
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
	atTier := fmt.Sprintf("is at risk tier %d (%s)", tier, rec.Reason)
	switch {
	case approved:
		rec.Control = journal.ControlPerson
		return ctx, ""
	case tier <= safety.TierLight:
		rec.Control = journal.ControlAutomatic
		return ctx, ""
	case t == nil:
		// tiers are opt-in: a flow without them gets no tier controls on its
		// calls, and none on the calls that take them back.
		rec.Control = journal.ControlAutomatic
		rec.Reason += "; risk tiers are off for this flow (risk:, review: or a policy that reads the tier turn them on), so only the gate decides"
		return ctx, ""
	case tier == safety.TierReviewed && t != nil && t.reviewer != nil:
		inv := safety.Invocation{RunID: r.id, StepID: req.At.StepID, Attempt: req.At.Attempt, Tool: *spec, Args: req.Args, Provenance: req.Provenance, Tier: tier}
		d := t.controls.ReviewCall(ctx, &inv, fmt.Sprintf("at risk tier %d a reviewer checks every %s", tier, req.At.Remedy))
		if d.Verdict == safety.Allow {
			rec.Control, rec.Reason = journal.ControlReviewer, rec.Reason+"; "+d.Why()
			return ctx, ""
		}
		rec.Control, rec.Reason = journal.ControlPerson, rec.Reason+"; "+d.Why()
		return ctx, atTier + " and the reviewer did not let it through: " + d.Why()
	case tier == safety.TierReviewed:
		rec.Control = journal.ControlPerson
		return ctx, atTier + ", where a reviewer checks it, and none is configured (review:), so a person approves it first"
	default:
		rec.Control = journal.ControlPerson
		return ctx, atTier + ", where a person approves it before it is made"
	}
}
