package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// A plan step's attempt outside the runner (Attempt) keeps no call
// records: a driver that may lose the attempt's worker keeps what the
// attempt did from its plan events instead (PlanLog, fed by
// AttemptRequest.OnPlan) and hands it back to the attempt it makes again
// (AttemptRequest.Plan), which continues the plan as a local resume
// continues it from its call records (resumeCalls): the same plan number,
// so the same keys, and its completed steps not made again.

// continuePlan takes req's plan hooks: its OnPlan, and the plan to
// continue for a plan step (the progress a local resume reads from its
// call records, planProgress).
func (r *run) continuePlan(req AttemptRequest) {
	r.onPlan = req.OnPlan
	if req.Plan == nil || req.Item >= 0 || r.f.Steps[req.Step].Type != flow.Plan {
		return
	}
	if r.d.progress == nil {
		r.d.progress = make(map[int]*stepProgress)
	}
	p := *req.Plan
	p.Evidence = nil // callPlan sets the run's
	r.d.progress[req.Step] = &stepProgress{plan: &p}
}

// PlanCall is a plan step's call that was made and had not returned.
type PlanCall struct {
	Plan     int    `json:"plan"`
	PlanStep string `json:"plan_step"`
	Tool     string `json:"tool"`
	Key      string `json:"key"`
}

// PlanLog keeps a plan step's progress from its attempt's plan events
// (AttemptRequest.OnPlan), as a local resume reads it from the call
// records: the latest plan and its number, the plan steps that succeeded
// (the first success of each, with its output), the calls made, and those
// made and not returned (in doubt should the attempt be lost). Safe for
// concurrent use.
type PlanLog struct {
	mu       sync.Mutex
	prog     plan.Progress
	done     map[string]bool
	inFlight map[string]PlanCall // by key
}

// Seed starts l from p, the plan an attempt continues (AttemptRequest.
// Plan): its plan, number and completed steps, reused and not reported
// again.
func (l *PlanLog) Seed(p *plan.Progress) {
	if p == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prog = plan.Progress{Plan: p.Plan, Number: p.Number, Executed: p.Executed, Completed: append([]plan.StepResult(nil), p.Completed...)}
	l.done = map[string]bool{}
	for _, c := range p.Completed {
		l.done[c.ID] = true
	}
}

// Add logs ev and reports whether the progress changed.
func (l *PlanLog) Add(ev plan.Event) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.Kind {
	case plan.PlanProposed:
		if ev.Plan == nil {
			return false
		}
		l.prog.Plan, l.prog.Number = ev.Plan, ev.Attempt
	case plan.StepStarted:
		if l.inFlight == nil {
			l.inFlight = map[string]PlanCall{}
		}
		l.prog.Executed++
		l.inFlight[ev.IdempotencyKey] = PlanCall{Plan: ev.Attempt, PlanStep: ev.PlanStep, Tool: ev.Tool, Key: ev.IdempotencyKey}
	case plan.StepSettled:
		delete(l.inFlight, ev.IdempotencyKey)
		if ev.Status == "succeeded" && !l.done[ev.PlanStep] {
			if l.done == nil {
				l.done = map[string]bool{}
			}
			l.done[ev.PlanStep] = true
			l.prog.Completed = append(l.prog.Completed, plan.StepResult{ID: ev.PlanStep, Tool: ev.Tool, Output: ev.Output})
		}
	default:
		return false
	}
	return true
}

// Progress is what l logged: the plan to continue (nil before a plan was
// proposed) and the calls in doubt.
func (l *PlanLog) Progress() (*plan.Progress, []PlanCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prog.Plan == nil {
		return nil, nil
	}
	p := l.prog
	p.Completed = append([]plan.StepResult(nil), l.prog.Completed...)
	var calls []PlanCall
	for _, c := range l.inFlight {
		calls = append(calls, c)
	}
	slices.SortFunc(calls, func(a, b PlanCall) int { return strings.Compare(a.Key, b.Key) })
	return &p, calls
}

// reconcilePlanCall is Reconcile for req.PlanCall, a call of plan step
// req.Step's plan req.Plan found in doubt: its tool's check is asked with
// the args it was made with (plan.ResolveArgs over the completed steps)
// and its key, as a local resume asks it (reconcilePlan). Happened: the
// plan step joins the completed ones with the check's output.
func (e *Engine) reconcilePlanCall(ctx context.Context, f *flow.Flow, s *Settled, req AttemptRequest) (*Reconciliation, error) {
	pc, p := req.PlanCall, req.Plan
	k := slices.IndexFunc(p.Plan.Steps, func(ps plan.Step) bool { return ps.ID == pc.PlanStep })
	if k < 0 {
		return &Reconciliation{Reason: fmt.Sprintf("plan %d has no step %s", p.Number, pc.PlanStep)}, nil
	}
	args, err := plan.ResolveArgs(&p.Plan.Steps[k], p.Completed)
	if err != nil {
		return &Reconciliation{Reason: "its args: " + err.Error()}, nil
	}
	r, err := e.runAt(ctx, f, req.RunID, s)
	if err != nil {
		return nil, err
	}
	defer r.end()
	t, ok := r.e.cfg.Tools.Lookup(pc.Tool)
	if !ok {
		return nil, fmt.Errorf("engine: tool %q is not registered with the engine", pc.Tool)
	}
	spec := t.Spec()
	if _, ok := t.(tool.Checker); !ok && !invoke.Repeatable(&spec) {
		return &Reconciliation{Reason: fmt.Sprintf("tool %s declares no check: (rein.yaml check:), so whether the call took effect is a person's to say", pc.Tool)}, nil
	}
	st := f.Steps[req.Step]
	if req.Approved {
		r.d.decisions = map[string]*store.Approval{st.ID: {Status: store.ApprovalApproved}}
	}
	at := invoke.Position{RunID: req.RunID, StepID: st.ID, Attempt: req.Attempt, Plan: pc.Plan, PlanStep: pc.PlanStep}
	out, happened, ok := r.askCheck(req.Step, t, pc.Tool, &spec, at, pc.Key, args)
	switch {
	case happened:
		return &Reconciliation{Happened: true, Output: out}, nil
	case ok:
		return &Reconciliation{Again: true}, nil
	}
	reason := r.d.notes[req.Step]
	if reason == "" {
		reason = "its tool's check could not settle it"
	}
	return &Reconciliation{Reason: reason}, nil
}

// ReconcilesPlanCall is ReconcilesCall for a plan's call in doubt: again,
// its tool is safe to repeat; check, it declares a check: that Reconcile
// (with AttemptRequest.PlanCall) asks before a person.
func (e *Engine) ReconcilesPlanCall(c PlanCall) (again, check bool) {
	t, ok := e.cfg.Tools.Lookup(c.Tool)
	if !ok {
		return false, false
	}
	spec := t.Spec()
	if invoke.Repeatable(&spec) {
		return true, false
	}
	_, check = t.(tool.Checker)
	return false, check
}
