package engine

import (
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/plan"
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
