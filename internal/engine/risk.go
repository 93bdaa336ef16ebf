package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/safety/review"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// tiers is what a flow's runs need for risk tiers, worked out once per
// flow (bindRisk): the controls gate, the signals of the intake
// assessment and of the steps that are assessed when they start, the
// reviewer's model and the post-check tool.
type tiers struct {
	controls *safety.Controls
	// intake: the flow's tool steps and fallback tools, with how many of
	// their side-effect args a model wrote.
	intake safety.Signals
	// steps: by step index, the signals assessed when the step starts
	// (an agent step's tools; a for_each tool step, whose fan-out is known
	// then); nil for the others.
	steps []*safety.Signals
	// reviewer answers the reviewer (review: model); nil without one.
	reviewer     model.Model
	reviewerName string
	postCheck    tool.Tool
	// intakeTier and intakeEvent are the intake assessment, the same for
	// every run of the flow, worked out and encoded once.
	intakeTier  int
	intakeEvent trace.Event
}

// bindRisk wraps gate (the engine's joined with the flow's rules) in the
// tier controls when the flow's runs have risk tiers: risk: or review:
// (the flow's, else the engine's), or a flow policy: whose rules read the
// tier (defaults: true, min_tier). A gate alone does not turn tiers on:
// its rules apply as written, inside controls that send a require_review
// to a person. Whenever the flow has a gate, the one returned wraps it. It returns the gate the flow's
// calls go through and the tiers, nil without them.
func (e *Engine) bindRisk(f *flow.Flow, gate safety.Gate, bb *binder) (safety.Gate, *tiers) {
	risk, rev := e.cfg.Risk, e.cfg.Review
	if f.Risk != nil {
		risk = &f.Risk.Risk
	}
	if f.Review != nil {
		rev = &f.Review.Review
	}
	if risk == nil && f.Policy.WantsTiers() {
		risk = &safety.RiskConfig{}
	}
	if risk == nil && rev == nil {
		if gate == nil || gate == safety.AllowAll {
			return gate, nil
		}
		// no tiers: the rules apply as written, and a require_review is
		// a person's to decide (no reviewer is configured).
		return &safety.Controls{Gate: gate}, nil
	}
	if risk == nil {
		risk = &safety.RiskConfig{}
	}
	t := &tiers{controls: &safety.Controls{Gate: gate, Risk: risk, Review: rev}, steps: make([]*safety.Signals, len(f.Steps))}
	t.intake.Config, t.intake.Ahead = risk, true
	if rev != nil {
		m, err := e.cfg.Models.Lookup(rev.Model)
		if err != nil {
			bb.problems = append(bb.problems, fmt.Sprintf("review: the reviewer's model: %v", err))
		}
		t.reviewer, t.reviewerName = m, rev.Model
	}
	if risk.PostCheck != "" {
		pc, ok := e.cfg.Tools.Lookup(risk.PostCheck)
		if !ok {
			bb.problems = append(bb.problems, fmt.Sprintf("risk: post_check tool %q is not registered with the engine (known: %s)", risk.PostCheck, strings.Join(e.cfg.Tools.Names(), ", ")))
		}
		t.postCheck = pc
	}
	return t.controls, t
}

// assessFlow gathers the signals of the flow's steps (after the
// provenance of their args is known).
func (t *tiers) assessFlow(e *Engine, f *flow.Flow, b *bound) {
	spec := func(name string) (tool.Spec, bool) {
		if tl, ok := e.cfg.Tools.Lookup(name); ok {
			return tl.Spec(), true
		}
		return tool.Spec{}, false
	}
	for i, s := range f.Steps {
		switch {
		case s.Type == flow.Tool && s.ForEach != nil:
			sp, _ := spec(s.Tool)
			st := &safety.Signals{Tools: []tool.Spec{sp}, Config: t.intake.Config, Ahead: true}
			st.CountArgs(&sp, b.prov[i])
			t.steps[i] = st
			t.intake.Tools = append(t.intake.Tools, sp)
			t.intake.CountArgs(&sp, b.prov[i])
		case s.Type == flow.Tool:
			sp, _ := spec(s.Tool)
			t.intake.Tools = append(t.intake.Tools, sp)
			t.intake.CountArgs(&sp, b.prov[i])
		case s.Type == flow.Agent && s.Agent != nil:
			st := &safety.Signals{Config: t.intake.Config, Ahead: true}
			for _, at := range s.Agent.Tools {
				if sp, ok := spec(at.Name); ok {
					st.Tools = append(st.Tools, sp)
				}
			}
			t.steps[i] = st
		}
		if fb := s.Fallback; fb != nil && fb.Tool != "" {
			sp, _ := spec(fb.Tool)
			t.intake.Tools = append(t.intake.Tools, sp)
			t.intake.CountArgs(&sp, b.fbProv[i])
		}
	}
	tier, reasons := safety.Assess(t.intake)
	rec := journal.TierChange{Tier: tier, Stage: "intake", Reasons: reasons}
	t.intakeTier = tier
	t.intakeEvent = trace.Event{Kind: trace.RiskTier, Decision: fmt.Sprintf("tier %d", tier), Data: rec.Encode()}
}

// startRisk assesses the run at intake — the flow's tool steps, their
// args' provenance, the configured floor and costs — and puts the run's
// safety.RunRisk in its context, where the controls find it. A resumed run
// starts from the tier its journal reached when that is higher: a tier is
// never lowered.
func (r *run) startRisk() {
	t := r.b.tiers
	if t == nil {
		return
	}
	cfg := safety.RunRiskConfig{Evidence: r.ev, OnRaise: r.recordTier, OnReview: r.recordReview}
	if t.reviewer != nil {
		cfg.Reviewer = &review.Model{Model: reviewMeter{r: r, m: t.reviewer, name: t.reviewerName}, Name: t.reviewerName}
	}
	if t.postCheck != nil {
		cfg.PostCheck = r.postCheck
	}
	r.risk = safety.RestoreRunRisk(max(r.restoredTier, t.intakeTier), cfg)
	if r.restoredTier < t.intakeTier {
		r.record(t.intakeEvent)
	}
	r.ctx = safety.WithRunRisk(r.ctx, r.risk)
	r.assessInputFanOut()
}

// assessInputFanOut is the input's part of the intake assessment: a
// for_each tool step whose items the input alone gives (for_each:
// input.ids) fans out that far, known before anything runs. An items
// expression that needs upstream outputs is assessed when its step starts.
func (r *run) assessInputFanOut() {
	t := r.b.tiers
	for i, s := range r.f.Steps {
		if s.ForEach == nil || t.steps[i] == nil || s.Type != flow.Tool {
			continue
		}
		ectx, cancel := r.evalCtx(s)
		v, err := s.ForEach.Items.EvalValueContext(ectx, r.env)
		cancel()
		items, ok := v.([]any)
		if err != nil || !ok {
			continue
		}
		sig := *t.steps[i]
		sig.FanOut = len(items)
		if safety.TierOf(&sig) <= r.risk.Tier() {
			continue
		}
		tier, reasons := safety.Assess(sig)
		r.risk.Raise(safety.TierChange{To: tier, Stage: "intake", StepID: s.ID, Reasons: reasons})
	}
}

// assessStep raises the tier to what step i turns out to be once it is
// about to run: an agent step's tools, a for_each step's fan-out.
func (r *run) assessStep(i int, j *job) {
	if r.risk == nil || r.b.tiers.steps[i] == nil {
		return
	}
	s := *r.b.tiers.steps[i]
	if r.f.Steps[i].ForEach != nil {
		s.FanOut = len(j.items())
	}
	if safety.TierOf(&s) <= r.risk.Tier() {
		return
	}
	tier, reasons := safety.Assess(s)
	r.risk.Raise(safety.TierChange{To: tier, Stage: "step", StepID: r.f.Steps[i].ID, Reasons: reasons})
}

// recordTier journals a raise of the run's tier. Its reasons name tools,
// tags, counts and declared assumptions.
func (r *run) recordTier(c safety.TierChange) {
	rec := journal.TierChange{Tier: c.To, From: c.From, Stage: c.Stage, Reasons: c.Reasons}
	r.record(trace.Event{Kind: trace.RiskTier, StepID: c.StepID, Tool: c.Tool, Decision: fmt.Sprintf("tier %d", c.To), Data: rec.Encode()})
}

// recordReview journals a review: its verdicts (or error) and decision.
func (r *run) recordReview(inv *safety.Invocation, o *safety.ReviewOutcome) {
	rec := journal.Review{Verdict: string(o.Decision.Verdict), Reason: o.Decision.Reason, Claims: make([]journal.ClaimVerdict, len(o.Verdicts))}
	for i, v := range o.Verdicts {
		rec.Claims[i] = journal.ClaimVerdict{Claim: v.Claim, Supported: v.Supported, Evidence: v.Evidence}
	}
	ev := trace.Event{Kind: trace.ReviewDone, StepID: inv.StepID, Attempt: inv.Attempt, Tool: inv.Tool.Name, Decision: string(o.Decision.Verdict)}
	if o.Err != nil {
		rec.Error = o.Err.Error()
		ev.ErrorClass, ev.Error = string(fault.ClassOf(o.Err)), rec.Error
	}
	ev.Data = rec.Encode()
	r.record(ev)
}

// postCheck calls the risk: post_check tool after a side-effect call of a
// tier-4 run, with {tool, args, output}. Its error, or an output object
// with ok: false, is the check's failure. Its key extends the checked
// call's with /check.
func (r *run) postCheck(ctx context.Context, inv *safety.Invocation, out any) error {
	t := r.b.tiers.postCheck
	name := t.Spec().Name
	key := tool.CallInfoFrom(ctx).IdempotencyKey
	req := invoke.Request{Tool: t, Args: map[string]any{"tool": inv.Tool.Name, "args": inv.Args, "output": out},
		At: invoke.Position{RunID: r.id, StepID: inv.StepID, Attempt: inv.Attempt, Parent: key + "/check"}, Gate: r.b.gate}
	res, _, err := r.e.pipe.Call(ctx, &req)
	if err != nil {
		return fmt.Errorf("post-check %s: %w", name, err)
	}
	if m, ok := res.(map[string]any); ok && m["ok"] == false {
		why, _ := m["reason"].(string)
		if why == "" {
			why = "it answered ok: false"
		}
		return fmt.Errorf("post-check %s: %s", name, why)
	}
	return nil
}

// reviewMeter is the reviewer's model as the run sees it: the metered
// model of the step whose call is reviewed (a plan step's call names its
// flow step first, step/plan-step), so every review counts against
// max_llm_calls and max_tokens and is journaled as a model_call with
// decision review, as the router's and the planner's calls are.
type reviewMeter struct {
	r    *run
	m    model.Model
	name string
}

func (mm reviewMeter) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	id, _, _ := strings.Cut(req.StepID, "/")
	s := mm.r.f.StepByID(id)
	if s == nil {
		return nil, fault.Errorf(fault.Business, "reviewer: step %q is not a step of flow %s", req.StepID, mm.r.f.Name)
	}
	ctx = withScope(ctx, &callScope{r: mm.r, step: s, index: s.Index, attempt: req.Attempt})
	return metered{name: mm.name, m: mm.m}.Generate(ctx, req)
}

// reportTier hands fn the run's risk tier (AttemptRequest.OnTier), when
// both are set.
func (r *run) reportTier(fn func(int)) {
	if fn != nil && r.risk != nil {
		fn(r.risk.Tier())
	}
}
