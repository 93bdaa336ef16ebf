package engine

import (
	"maps"
	"slices"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// CheckTimeout bounds one check (tool.Checker) a resume makes of a call
// in doubt, on top of an exec check's own timeout (its tool's): a check
// that has not answered by then cannot say, and a person decides.
const CheckTimeout = time.Minute

// checker returns a check of step i's calls when its tool (a tool step's,
// plain, for_each or repeat) or its fallback tool declares one (check:,
// or tool.WithCheck); nil otherwise.
func (r *run) checker(i int) tool.Checker {
	s := r.f.Steps[i]
	if s.Type == flow.Tool && r.b.tools[i] != nil {
		if ck, ok := r.b.tools[i].(tool.Checker); ok {
			return ck
		}
	}
	if s.Fallback != nil && i < len(r.b.fbTool) && r.b.fbTool[i] != nil {
		if ck, ok := r.b.fbTool[i].(tool.Checker); ok {
			return ck
		}
	}
	return nil
}

// reconcile decides step i's calls in doubt by the one rule for them
// (invoke.Resolve, through askCheck; a for_each item's, a plan step's, a
// repeat round's or a fallback's call of a tool that is idempotent or
// reads at most is made again with the same key, check or not; a plain
// step without a check is left to its row's idempotency, resume.go):
// step i was found in flight after a
// crash (a plain tool step that is not idempotent, a for_each step whose
// records show item calls — or their fallbacks' — started and never
// settled, a plan step whose plan's calls are so, a repeat step's round,
// the fallback of a step outside for_each), and it reports whether
// that settled the question without a person:
//
//   - a call happened: it is recorded as succeeded with the output the
//     check returned (checked against the tool's output schema), marked
//     journal.ReconciledHappened; a plain step settles with that output
//     (then checked as a settled output: the step's schema and gate), an
//     item counts as settled;
//   - it did not: recorded so (journal.ReconciledNotHappened); it is made
//     again, with the same attempt and idempotency key, when a person had
//     approved the step or its tool is safe to repeat; otherwise a person
//     decides, told what the check found;
//   - the check cannot say (an error, a timeout, an output that breaks the
//     schema), or the tool has none: a person decides, told why.
//
// requeued reports that the step goes back to the ready queue (the caller
// seeds the machine once).
func (r *run) reconcile(i int) (settled, requeued bool) {
	s := r.f.Steps[i]
	p := r.d.progress[i]
	switch {
	case p != nil && p.fb != nil && !p.fb.done:
		return r.reconcileFallback(i)
	case s.Type == flow.Plan:
		return r.reconcilePlan(i)
	case s.Repeat != nil && s.ForEach == nil && s.Type == flow.Tool:
		return r.reconcileRound(i)
	case r.checker(i) == nil && s.ForEach == nil:
		// a plain step without a check: its row's idempotency decided.
		return false, false
	}
	if s.ForEach != nil && (p == nil || len(p.inDoubt) == 0 || len(p.inDoubt) != len(p.doubt)) {
		return false, false
	}
	j := r.prepare(i)
	if j.renderErr != nil {
		return false, false
	}
	attempt := max(r.steps[i].attempts, 1)
	if s.ForEach == nil {
		at := invoke.Position{RunID: r.id, StepID: s.ID, Attempt: attempt}
		out, happened, ok := r.askCheck(i, r.b.tools[i], s.Tool, &r.b.specs[i], at, at.Key(), j.in.args)
		switch {
		case !ok:
			return false, false
		case happened:
			r.settleWith(i, out)
			return true, false
		}
	} else {
		for _, c := range p.inDoubt {
			if c.Item >= len(j.each.inputs) || !c.Fallback && s.Type != flow.Tool {
				return false, false
			}
			t, name, spec, args := r.b.tools[i], s.Tool, &r.b.specs[i], j.each.inputs[c.Item].args
			if c.Fallback {
				var ok bool
				if t, args, ok = r.fallbackCall(j, c.Item); !ok {
					return false, false
				}
				sp := t.Spec()
				name, spec = s.Fallback.Tool, &sp
			}
			at := invoke.Position{RunID: r.id, StepID: s.ID, ForEach: true, Item: c.Item, Round: c.Round, Fallback: c.Fallback, Attempt: c.Attempt}
			out, happened, ok := r.askCheck(i, t, name, spec, at, c.Key, args)
			if !ok {
				return false, false
			}
			if happened {
				p.items[c.Item] = out
			}
		}
	}
	// not happened (or, for items, each either happened or not): the
	// step runs what is left, with the same attempt and keys.
	r.m.Requeue(i)
	r.d.firstAttempt[i] = attempt
	return true, true
}

// fallbackCall is the fallback tool of for_each item k of job j and the
// args it was called with (its fallback.args rendered for the item, or the
// item's own); ok is false when step j has no fallback tool or its args
// do not render.
func (r *run) fallbackCall(j *job, k int) (t tool.Tool, args any, ok bool) {
	s := j.step
	t = r.b.fbTool[j.index]
	if t == nil || s.Fallback == nil {
		return nil, nil, false
	}
	args = j.each.inputs[k].args
	if s.Fallback.Args != nil {
		scope := maps.Clone(j.scope)
		if scope == nil {
			scope = map[string]any{}
		}
		scope["item"], scope["index"] = j.each.values[k], float64(k)
		a, err := s.Fallback.Args.RenderBounded(scope, &template.Bounds{Ctx: r.ctx, MaxBytes: s.MaxInputBytes})
		if err != nil {
			return nil, nil, false
		}
		args = a
	}
	return t, args, true
}

// askCheck decides, by the one rule for a call in doubt (invoke.Resolve),
// the call of step i at position at (key, args) of tool t (name, spec):
// its check's answer is recorded as the call's record (Reconciled set),
// and ok is false when a person must decide (the check cannot say, or the
// call did not happen and may not be made again without a person: a
// person approved step i, or its tool is safe to repeat), with the reason
// noted for the question.
func (r *run) askCheck(i int, t tool.Tool, name string, spec *tool.Spec, at invoke.Position, key string, args any) (out any, happened, ok bool) {
	s := r.f.Steps[i]
	clock := r.e.cfg.Clock
	start := clock.Now()
	ctx, cancel := clock.WithDeadline(r.ctx, start.Add(CheckTimeout))
	defer cancel()
	ctx = tool.WithCallInfo(ctx, &tool.CallInfo{RunID: r.id, StepID: s.ID, Attempt: at.Attempt, IdempotencyKey: key})
	approved := r.d.decisions[s.ID] != nil && r.d.decisions[s.ID].Status == store.ApprovalApproved
	var valid func(any) error
	if spec.OutputSchema != nil {
		valid = func(out any) error { return checkOutput(spec, out) }
	}
	res := invoke.Resolve(ctx, t, spec, tool.CheckRequest{Args: args, IdempotencyKey: key, OutputSchema: spec.OutputSchema}, approved, valid)
	if res.Reconciled != "" {
		rec := &invoke.Record{At: at, Key: key, Tool: name, Args: args, Start: start, Duration: clock.Now().Sub(start)}
		if at.PlanStep == "" && !at.Fallback {
			rec.Provenance = r.b.provenance(i, false)
		}
		var c *store.Call
		if res.Verdict == invoke.Happened {
			rec.Outcome, rec.Output = invoke.OK, res.Output
			c = r.callOf(rec, store.CallSucceeded, spec, true)
		} else {
			rec.Outcome = invoke.Failed
			c = r.callOf(rec, store.CallFailed, spec, false)
			c.Error = "its tool's check found that the call did not take effect"
		}
		c.Reconciled = res.Reconciled
		r.recordCallEvent(c, false)
	}
	switch res.Verdict {
	case invoke.Happened:
		return res.Output, true, true
	case invoke.Again:
		return nil, false, true
	}
	if res.Reason != "" {
		if res.Reconciled != "" {
			res.Reason += ": approve to make it, reject to fail the step"
		}
		r.noteStep(i, res.Reason)
	}
	return nil, false, false
}

// checkOutput checks the output a check returned against the tool's
// output schema.
func checkOutput(spec *tool.Spec, out any) error {
	sch, err := schema.Compile(spec.Name+" output", spec.OutputSchema)
	if err != nil {
		return err
	}
	return sch.Validate(out)
}

// noteStep adds note to what the person deciding step i is told.
func (r *run) noteStep(i int, note string) {
	if r.d.notes == nil {
		r.d.notes = map[int]string{}
	}
	if old := r.d.notes[i]; old != "" {
		note = old + ". " + note
	}
	r.d.notes[i] = note
}

// reconcilePlan is reconcile for plan step i: each call of its current
// plan in doubt is asked of its tool's check, with the args it was made
// with (plan.ResolveArgs over the plan steps completed); a plan step that
// happened joins them, with the check's output, and the plan continues
// (plan.RunFrom) from there, making the calls that did not happen again
// with the same keys when that is allowed.
func (r *run) reconcilePlan(i int) (settled, requeued bool) {
	s := r.f.Steps[i]
	p := r.d.progress[i]
	if p == nil || p.plan == nil || len(p.inDoubt) == 0 || len(p.inDoubt) != len(p.doubt) {
		return false, false
	}
	for _, c := range p.inDoubt {
		t, ok := r.e.cfg.Tools.Lookup(c.Name)
		if !ok {
			return false, false
		}
		k := slices.IndexFunc(p.plan.Plan.Steps, func(ps plan.Step) bool { return ps.ID == c.PlanStep })
		if k < 0 {
			return false, false
		}
		args, err := plan.ResolveArgs(&p.plan.Plan.Steps[k], p.plan.Completed)
		if err != nil {
			return false, false
		}
		spec := t.Spec()
		at := invoke.Position{RunID: r.id, StepID: s.ID, Attempt: c.Attempt, Plan: c.Plan, PlanStep: c.PlanStep}
		out, happened, ok := r.askCheck(i, t, c.Name, &spec, at, c.Key, args)
		if !ok {
			return false, false
		}
		if happened {
			p.plan.Completed = append(p.plan.Completed, plan.StepResult{ID: c.PlanStep, Tool: c.Name, Output: out})
		}
	}
	r.m.Requeue(i)
	r.d.firstAttempt[i] = max(r.steps[i].attempts, 1)
	return true, true
}

// reconcileFallback is reconcile for step i (outside for_each) whose
// fallback call is in doubt: its fallback tool's check is asked, with the
// args the fallback was made with (fallback.args rendered, or the step's);
// it happened → the step falls back with the check's output; it did not,
// and may be made again → the step goes straight to its fallback, made
// again with the same key. Its own call had failed for good: it is not
// made again either way.
func (r *run) reconcileFallback(i int) (settled, requeued bool) {
	s := r.f.Steps[i]
	p := r.d.progress[i]
	if len(p.inDoubt) != 1 || len(p.doubt) != 1 || s.Fallback == nil || i >= len(r.b.fbTool) || r.b.fbTool[i] == nil {
		return false, false
	}
	c, t := p.fb.call, r.b.fbTool[i]
	j := r.prepare(i)
	if j.renderErr != nil {
		return false, false
	}
	args := j.in.args
	if s.Fallback.Args != nil {
		a, err := s.Fallback.Args.RenderBounded(j.scope, &template.Bounds{Ctx: r.ctx, MaxBytes: s.MaxInputBytes})
		if err != nil {
			return false, false
		}
		args = a
	}
	spec := t.Spec()
	at := invoke.Position{RunID: r.id, StepID: s.ID, Fallback: true, Attempt: c.Attempt}
	out, happened, ok := r.askCheck(i, t, s.Fallback.Tool, &spec, at, c.Key, args)
	if !ok {
		return false, false
	}
	if happened {
		p.fb.out, p.fb.done = out, true
	} else {
		p.fb.again = true
	}
	r.m.Requeue(i)
	r.d.firstAttempt[i] = max(r.steps[i].attempts, 1)
	return true, true
}

// reconcileRound is reconcile for repeat step i whose round after the
// last settled one is in doubt: its tool's check is asked with the args
// that round was made with (rendered as the loop rendered them: previous,
// iteration, the last round's output); it happened → the round counts as
// settled with the check's output, and the loop goes on from the next;
// it did not, and may be made again → the loop goes on from that round,
// made again with the same attempt and key.
func (r *run) reconcileRound(i int) (settled, requeued bool) {
	s := r.f.Steps[i]
	p := r.d.progress[i]
	if p == nil || len(p.inDoubt) != 1 || len(p.doubt) != 1 || r.b.tools[i] == nil {
		return false, false
	}
	c := p.inDoubt[0]
	j := r.prepare(i)
	if j.renderErr != nil {
		return false, false
	}
	var last any
	if n := len(p.rounds); n > 0 {
		last = p.rounds[n-1]
	}
	in, err := r.roundInput(r.ctx, j, c.Round-1, last, len(p.rounds) > 0)
	if err != nil {
		return false, false
	}
	at := invoke.Position{RunID: r.id, StepID: s.ID, Round: c.Round, Attempt: c.Attempt}
	out, happened, ok := r.askCheck(i, r.b.tools[i], s.Tool, &r.b.specs[i], at, c.Key, in.args)
	if !ok {
		return false, false
	}
	if happened {
		p.rounds = append(p.rounds, out)
	}
	r.m.Requeue(i)
	r.d.firstAttempt[i] = max(c.Attempt, 1)
	return true, true
}

// checksAny reports whether a step of steps has a check to ask.
func (r *run) checksAny(steps []int) bool {
	for _, i := range steps {
		if r.checker(i) != nil || r.f.Steps[i].Type == flow.Plan {
			return true
		}
	}
	return false
}
