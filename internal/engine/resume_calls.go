package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// stepProgress is what the call records of a resumed step say it had done
// before its process stopped (callrec.go).
type stepProgress struct {
	// items: a for_each step's items that settled, with their outputs.
	items map[int]any
	// plan: a plan step's plan in execution and its completed steps; nil
	// once the step used it, or when no plan was recorded.
	plan *plan.Progress
	// doubt describes the calls that were started and never settled: a
	// tool that is not idempotent, whose effect nobody knows.
	doubt []string
	// inDoubt are the records of the calls in doubt a tool's check may
	// settle (reconcile.go): a for_each step's item calls (and their
	// fallbacks'), a plan step's calls of its current plan.
	inDoubt []*store.Call
	// succeeded counts the calls that succeeded (kept, not made again).
	succeeded int
}

// continuable reports whether step s keeps the call records a resume
// continues from: a for_each step of tool or llm calls, a plan step (not a
// plan per item); not inside a repeat loop. Only these record every call
// they make, so only for them does "no call in doubt" mean no effect is
// unknown.
func continuable(s *flow.Step) bool {
	if s.Repeat != nil {
		return false
	}
	if s.ForEach != nil {
		return s.Type == flow.Tool || s.Type == flow.LLM
	}
	return s.Type == flow.Plan
}

// stepCalls reads the call records of a run whose steps rows show a step
// not settled, by step ID; a run with none costs no read.
func (e *Engine) stepCalls(ctx context.Context, runID string, rows []*store.Step) (map[string][]*store.Call, error) {
	need := false
	for _, row := range rows {
		switch row.Status {
		case trace.StepRunning, trace.StepWaiting, trace.StepUnknown:
			need = true
		}
	}
	if !need {
		return nil, nil
	}
	cs, err := e.cfg.Store.Calls(ctx, runID, "")
	if err != nil {
		return nil, fmt.Errorf("engine: read call records of run %s: %w", runID, err)
	}
	out := make(map[string][]*store.Call)
	for _, c := range cs {
		out[c.StepID] = append(out[c.StepID], c)
	}
	return out, nil
}

// resumeCalls applies the call records of step i, found not settled, and
// reports whether it may continue without a person: it keeps call records
// and none of its calls is in doubt. A for_each step then runs only the
// items that did not settle; a plan step continues its recorded plan.
func (r *run) resumeCalls(i int, calls []*store.Call) (bool, error) {
	s := r.f.Steps[i]
	if !continuable(s) {
		return false, nil
	}
	p := &stepProgress{}
	var err error
	if s.ForEach != nil {
		err = p.fromItems(calls)
	} else {
		err = p.fromPlan(calls)
	}
	if err != nil {
		return false, fmt.Errorf("engine: call records of step %s of run %s: %w", s.ID, r.id, err)
	}
	if r.d.progress == nil {
		r.d.progress = make(map[int]*stepProgress)
	}
	r.d.progress[i] = p
	return len(p.doubt) == 0, nil
}

// fromItems reads a for_each step's records: an item settled when one of
// its calls (the tool or model, or its fallback) succeeded.
func (p *stepProgress) fromItems(calls []*store.Call) error {
	p.items = make(map[int]any)
	for _, c := range calls {
		if c.Item < 0 || c.PlanStep != "" || c.Status != store.CallSucceeded {
			continue
		}
		var v any
		if err := json.Unmarshal(c.Output, &v); err != nil {
			return fmt.Errorf("output of call %s does not decode: %w", c.Key, err)
		}
		p.items[c.Item] = v
	}
	for _, c := range calls {
		switch {
		case c.Item < 0 || c.PlanStep != "" || c.Status == store.CallWaiting: // a waiting call was not made
		case c.Status == store.CallSucceeded:
			p.succeeded++
		case c.Status.Settled():
		default:
			if _, ok := p.items[c.Item]; !ok {
				p.doubt = append(p.doubt, fmt.Sprintf("item %d (tool %s, idempotency key %s)", c.Item, c.Name, c.Key))
				p.inDoubt = append(p.inDoubt, c)
			}
		}
	}
	return nil
}

// fromPlan reads a plan step's records: the last plan proposed (the
// planner's record) and the plan steps that succeeded, over its plans. A
// waiting record (the gate's require_approval) is a call not made.
func (p *stepProgress) fromPlan(calls []*store.Call) error {
	var last *store.Call
	for _, c := range calls {
		if c.Kind == store.CallModel && c.PlanStep == "" && c.Plan > 0 && c.Status == store.CallSucceeded &&
			(last == nil || c.Attempt > last.Attempt || c.Attempt == last.Attempt && c.Plan >= last.Plan) {
			last = c
		}
	}
	var steps []*store.Call
	done := map[string]bool{}
	for _, c := range calls {
		if c.Status == store.CallWaiting {
			continue // the call was not made: its plan step waits for a person
		}
		if c.Fallback && !c.Status.Settled() {
			p.doubt = append(p.doubt, fmt.Sprintf("the fallback (tool %s, idempotency key %s)", c.Name, c.Key))
		}
		if c.Kind != store.CallTool || c.PlanStep == "" {
			continue
		}
		steps = append(steps, c)
		if c.Status == store.CallSucceeded {
			done[c.PlanStep] = true
		}
	}
	if last == nil {
		return nil // the planner had not answered: no call was made
	}
	pl := new(plan.Plan)
	if err := json.Unmarshal(last.Output, pl); err != nil {
		return fmt.Errorf("plan %d (record %s) does not decode: %w", last.Plan, last.Key, err)
	}
	prog := &plan.Progress{Plan: pl, Number: last.Plan, Executed: len(steps)}
	slices.SortStableFunc(steps, func(a, b *store.Call) int { return a.Plan - b.Plan })
	seen := map[string]bool{}
	for _, c := range steps {
		switch {
		case c.Status == store.CallSucceeded && !seen[c.PlanStep]:
			seen[c.PlanStep] = true
			var v any
			if err := json.Unmarshal(c.Output, &v); err != nil {
				return fmt.Errorf("output of call %s does not decode: %w", c.Key, err)
			}
			prog.Completed = append(prog.Completed, plan.StepResult{ID: c.PlanStep, Tool: c.Name, Output: v})
		case !c.Status.Settled() && !done[c.PlanStep]:
			p.doubt = append(p.doubt, fmt.Sprintf("plan step %s of plan %d (tool %s, idempotency key %s)", c.PlanStep, c.Plan, c.Name, c.Key))
			if c.Plan == prog.Number {
				p.inDoubt = append(p.inDoubt, c)
			}
		}
		if c.Status == store.CallSucceeded {
			p.succeeded++
		}
	}
	p.plan = prog
	return nil
}

// itemsDone returns the outputs of step i's items that settled before the
// run was resumed (nil: none).
func (r *run) itemsDone(i int) map[int]any {
	if p := r.d.progress[i]; p != nil {
		return p.items
	}
	return nil
}

// planProgress hands step i's recorded plan to its first execution after
// a resume (item < 0: a plan per item starts afresh); nil otherwise.
func (r *run) planProgress(i, item int) *plan.Progress {
	p := r.d.progress[i]
	if p == nil || item >= 0 {
		return nil
	}
	pp := p.plan
	p.plan = nil
	return pp
}

// unknownMessage is the question asked about step i, found in flight after
// a crash and not idempotent: about the calls in doubt when its records
// name them, about the whole step otherwise.
func (r *run) unknownMessage(i int) string {
	s := r.f.Steps[i]
	if p := r.d.progress[i]; p != nil && len(p.doubt) > 0 {
		return fmt.Sprintf("step %s was running when the process stopped, and this call of a tool that is not idempotent was started but never settled: %s. Did its effect happen? approve to make it again (the %d %s that succeeded %s kept, not made again), reject to fail the step, or settle the step with the output it should have produced",
			s.ID, strings.Join(p.doubt, "; "), p.succeeded, plural(p.succeeded, "call", "calls"), plural(p.succeeded, "is", "are"))
	}
	return fmt.Sprintf("step %s was running when the process stopped and is not idempotent: did its effect happen? approve to run it again, reject to fail it, or settle it with the output it produced", s.ID)
}
