package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
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
	// fallbacks'), a plan step's calls of its current plan, a repeat
	// step's round.
	inDoubt []*store.Call
	// succeeded counts the calls that succeeded (kept, not made again).
	succeeded int
	// rounds: the outputs of a repeat step's rounds that settled, from
	// round 1 on, in order (the loop goes on from the next); consumed by
	// the step's first execution after the resume.
	rounds []any
	// fb is what the records say of the step's fallback call (a step
	// outside for_each: a plain step's, a repeat step's, a plan step's):
	// the step's first execution after the resume takes it (fallbackState).
	fb *fallbackState
}

// fallbackState is what a resumed step outside for_each does about its
// fallback call, recorded before its process stopped: its main call failed
// for good (the fallback was made), so that call is not made again.
type fallbackState struct {
	// call is the fallback's latest record.
	call *store.Call
	// out: the fallback succeeded (or its check found it happened): the
	// step falls back with this output.
	out any
	// done is set with out.
	done bool
	// again: the fallback is made again, with the same key (it did not
	// happen, and may be made again).
	again bool
}

// continuable reports whether step s keeps the call records a resume
// continues from: a for_each step of tool or llm calls, a plan step (not a
// plan per item), a repeat step of tool calls (its rounds: a call record
// each, keyed by round). Only these record every call they make, so only
// for them does "no call in doubt" mean no effect is unknown.
func continuable(s *flow.Step) bool {
	if s.Repeat != nil {
		return s.Type == flow.Tool && s.ForEach == nil
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
// reports whether it may continue without a person (cont): it keeps call
// records and none of its calls is in doubt; and whether a call of it is
// in doubt (doubt: then it does not run again unasked, even when its own
// tool is idempotent — its fallback's may not be). A for_each step then
// runs only the items that did not settle; a plan step continues its
// recorded plan; a repeat step goes on from the round after the last
// that settled. A step outside for_each whose fallback was made goes
// straight to that fallback (fallbackState).
func (r *run) resumeCalls(i int, calls []*store.Call) (cont, doubt bool, err error) {
	s := r.f.Steps[i]
	p := &stepProgress{}
	keep := false
	from := r.fallbackAttempt(i) // records from before a retry re-opened step i settle nothing
	if s.ForEach == nil {
		keep = p.fromFallback(calls, from)
	}
	if continuable(s) {
		switch {
		case s.ForEach != nil:
			err = p.fromItems(calls, from)
		case s.Repeat != nil:
			var ok bool
			ok, err = p.fromRounds(calls, from)
			keep = keep || ok
		default:
			err = p.fromPlan(calls, from)
		}
		keep = keep || s.Repeat == nil
	}
	if err != nil {
		return false, false, fmt.Errorf("engine: call records of step %s of run %s: %w", s.ID, r.id, err)
	}
	if !keep {
		return false, false, nil
	}
	if r.d.progress == nil {
		r.d.progress = make(map[int]*stepProgress)
	}
	r.d.progress[i] = p
	if p.fb != nil && len(p.doubt) == 0 {
		return true, false, nil // its fallback settled: the step takes it
	}
	return continuable(s) && len(p.doubt) == 0, len(p.doubt) > 0, nil
}

// sinceReopened reports whether record c is of its step's execution since
// rein runs retry last re-opened it: made at attempt from on (from is
// fallbackAttempt's, the attempt that execution began at; from <= 1: the
// step was never re-opened, every record counts). Each attempt is part
// of its call's key, so a retried step's calls are new calls, and what
// was recorded before the retry (items, rounds, fallbacks) is stale.
func sinceReopened(c *store.Call, from int) bool {
	return from <= 1 || c.Attempt >= from
}

// lastByKey folds records to each key's latest, in the order of the keys'
// first records.
func lastByKey(calls []*store.Call, keep func(*store.Call) bool) []*store.Call {
	var out []*store.Call
	at := map[string]int{}
	for _, c := range calls {
		if !keep(c) {
			continue
		}
		if k, ok := at[c.Key]; ok {
			out[k] = c
			continue
		}
		at[c.Key] = len(out)
		out = append(out, c)
	}
	return out
}

// fromFallback reads the records of the fallback call of a step outside
// for_each (a plain step, a repeat step, a plan step) and reports whether
// the step's resume depends on it: it succeeded (the step falls back with
// its output, the call is not made again), or it was started and never
// settled (in doubt). A fallback that failed settled nothing: the step
// runs again as its own idempotency allows. Only the records of the
// step's execution since rein runs retry last re-opened it count (attempt
// from on, fallbackAttempt): a fallback made before the retry settles
// nothing of the retried step.
func (p *stepProgress) fromFallback(calls []*store.Call, from int) bool {
	fbs := lastByKey(calls, func(c *store.Call) bool {
		return c.Fallback && c.Item < 0 && c.PlanStep == "" && c.Kind == store.CallTool && c.Status != store.CallWaiting &&
			sinceReopened(c, from)
	})
	if len(fbs) == 0 {
		return false
	}
	c := fbs[len(fbs)-1]
	p.fb = &fallbackState{call: c}
	switch {
	case c.Status == store.CallSucceeded:
		var v any
		if err := json.Unmarshal(c.Output, &v); err != nil || len(c.Output) == 0 {
			p.fb = nil // a record without its output (an older rein's): as if none
			return false
		}
		p.fb.out, p.fb.done = v, true
		p.succeeded++
	case !c.Status.Settled():
		p.doubt = append(p.doubt, fmt.Sprintf("the fallback (tool %s, idempotency key %s)", c.Name, c.Key))
		p.inDoubt = append(p.inDoubt, c)
	default:
		p.fb = nil
		return false
	}
	return true
}

// fromRounds reads a repeat step's records of its rounds' calls, each
// key's latest: the rounds that succeeded, from round 1 on, give their
// outputs (the loop goes on after the last of them), and the round after
// them is in doubt when its call was started and never settled. Records
// of an earlier execution of the step (before a retry re-opened it) are
// left out: those made before rein runs retry last re-opened it (attempt
// from on count, sinceReopened), and those of an execution the step ran
// again whole after a resume: an execution begins with a record of round
// 1 after records of later rounds, or after round 1 succeeded. ok is false when the records
// cannot say where the loop was (none at all, or an older rein's, which
// kept no outputs): the step is then run again or parked whole.
func (p *stepProgress) fromRounds(calls []*store.Call, from int) (ok bool, err error) {
	var exec []*store.Call
	prev := 0
	done1 := false
	for _, c := range calls {
		if c.Round <= 0 || c.Item >= 0 || c.PlanStep != "" || c.Fallback || c.Kind != store.CallTool || c.Status == store.CallWaiting || !sinceReopened(c, from) {
			continue
		}
		if c.Round == 1 && (prev > 1 || done1 && c.Status == store.CallStarted) {
			exec, done1 = nil, false // a new execution of the step
		}
		if c.Round == 1 && c.Status == store.CallSucceeded {
			done1 = true
		}
		prev = c.Round
		exec = append(exec, c)
	}
	recs := lastByKey(exec, func(*store.Call) bool { return true })
	if len(recs) == 0 {
		return false, nil
	}
	outs := map[int]any{}
	var started []*store.Call
	for _, c := range recs {
		switch {
		case c.Status == store.CallSucceeded:
			if len(c.Output) == 0 {
				return false, nil // an older rein's record: no output kept
			}
			var v any
			if err := json.Unmarshal(c.Output, &v); err != nil {
				return false, fmt.Errorf("output of call %s does not decode: %w", c.Key, err)
			}
			outs[c.Round] = v
		case !c.Status.Settled():
			started = append(started, c)
		}
	}
	for n := 1; ; n++ {
		v, ok := outs[n]
		if !ok {
			break
		}
		p.rounds = append(p.rounds, v)
		p.succeeded++
	}
	latest := latestAttempts(started, func(c *store.Call) string { return strconv.Itoa(c.Round) })
	for _, c := range started {
		if c.Round == len(p.rounds)+1 && c.Attempt == latest[strconv.Itoa(c.Round)] {
			p.doubt = append(p.doubt, fmt.Sprintf("round %d (tool %s, idempotency key %s)", c.Round, c.Name, c.Key))
			p.inDoubt = append(p.inDoubt, c)
		}
	}
	return true, nil
}

// fromItems reads a for_each step's records: an item settled when one of
// its calls (the tool or model, or its fallback) succeeded. Only the
// records of the step's execution since rein runs retry last re-opened it
// count (attempt from on, sinceReopened): an item settled before the
// retry is made again.
func (p *stepProgress) fromItems(calls []*store.Call, from int) error {
	p.items = make(map[int]any)
	for _, c := range calls {
		if c.Item < 0 || c.PlanStep != "" || c.Status != store.CallSucceeded || !sinceReopened(c, from) {
			continue
		}
		var v any
		if err := json.Unmarshal(c.Output, &v); err != nil {
			return fmt.Errorf("output of call %s does not decode: %w", c.Key, err)
		}
		p.items[c.Item] = v
	}
	// an item's call of this execution; a waiting call was not made
	counts := func(c *store.Call) bool {
		return c.Item >= 0 && c.PlanStep == "" && c.Status != store.CallWaiting && sinceReopened(c, from)
	}
	itemUnit := func(c *store.Call) string {
		if !counts(c) {
			return ""
		}
		return strconv.Itoa(c.Item) + "/" + strconv.FormatBool(c.Fallback)
	}
	latest := latestAttempts(calls, itemUnit)
	for _, c := range calls {
		switch {
		case !counts(c):
		case c.Status == store.CallSucceeded:
			p.succeeded++
		case c.Status.Settled():
		case c.Attempt < latest[itemUnit(c)]:
			// a person approved making it again: the later record is the question
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
// waiting record (the gate's require_approval) is a call not made. Only
// the records of the step's execution since rein runs retry last
// re-opened it count (attempt from on, sinceReopened): neither a plan
// proposed before the retry nor a plan step settled before it is taken
// for the retried step, which asks its planner anew when it had not
// answered since.
func (p *stepProgress) fromPlan(calls []*store.Call, from int) error {
	var last *store.Call
	for _, c := range calls {
		if !sinceReopened(c, from) {
			continue
		}
		if c.Kind == store.CallModel && c.PlanStep == "" && c.Plan > 0 && c.Status == store.CallSucceeded &&
			(last == nil || c.Attempt > last.Attempt || c.Attempt == last.Attempt && c.Plan >= last.Plan) {
			last = c
		}
	}
	var steps []*store.Call
	done := map[string]bool{}
	for _, c := range calls {
		if c.Status == store.CallWaiting || !sinceReopened(c, from) {
			continue // a waiting call was not made: its plan step waits for a person
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
	planUnit := func(c *store.Call) string { return strconv.Itoa(c.Plan) + "/" + c.PlanStep }
	latest := latestAttempts(steps, planUnit)
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
		case !c.Status.Settled() && !done[c.PlanStep] && c.Attempt == latest[planUnit(c)]:
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

// latestAttempts is, by unit (unit(c): an item, a round, a plan step;
// "" for a record that does not count), the highest attempt among calls.
// A call in doubt that a person approved is made again at the step's next
// attempt, under a new key; its earlier record stays started. Only the
// latest attempt's record of a unit can be in doubt: asking about the
// earlier one again (a person already answered that it did not happen)
// names a call that is no longer the question, and a person who checks
// that key finds nothing and approves making the unit a third time.
func latestAttempts(calls []*store.Call, unit func(*store.Call) string) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		if u := unit(c); u != "" && c.Attempt > out[u] {
			out[u] = c.Attempt
		}
	}
	return out
}

// fallbackAttempt is the attempt step i's fallback calls are made and
// keyed at (run/step/fallback/n): 1, as always, for a step no retry
// re-opened; n+1 for one rein runs retry re-opened at attempt n — the
// attempt its new execution begins at — so the retried step's fallback
// is a new call with a new key, and a resume does not take the records of
// the fallback made before the retry for it (fromFallback). It is also the
// attempt the retried execution's own calls (its items', its rounds')
// begin at: a resume counts only records from it on (sinceReopened).
func (r *run) fallbackAttempt(i int) int {
	return r.d.reopened[i] + 1
}

// reopenedSteps reads from a run's journal the attempt at which rein runs
// retry last re-opened each step (journal.StepReopened), by step index.
func reopenedSteps(f *flow.Flow, events []*trace.Event) map[int]int {
	var out map[int]int
	for _, ev := range events {
		if ev.Kind != journal.StepReopened {
			continue
		}
		if s := f.StepByID(ev.StepID); s != nil {
			if out == nil {
				out = map[int]int{}
			}
			out[s.Index] = ev.Attempt
		}
	}
	return out
}

// roundsDone hands the outputs of step i's rounds that settled before the
// run was resumed to its first execution after the resume (nil: none).
func (r *run) roundsDone(i int) []any {
	p := r.d.progress[i]
	if p == nil {
		return nil
	}
	done := p.rounds
	p.rounds = nil
	return done
}

// fallbackTaken hands what step i's records say of its fallback to its
// first execution after the resume: nil when it goes on as usual.
func (r *run) fallbackTaken(i int) *fallbackState {
	p := r.d.progress[i]
	if p == nil || p.fb == nil || !p.fb.done && !p.fb.again {
		return nil
	}
	fb := p.fb
	p.fb = nil
	return fb
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
