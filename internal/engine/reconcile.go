package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// CheckTimeout bounds one check (tool.Checker) a resume makes of a call
// in doubt, on top of an exec check's own timeout (its tool's): a check
// that has not answered by then cannot say, and a person decides.
const CheckTimeout = time.Minute

// checker returns the check of step i's tool when the step is a tool step
// outside a repeat loop (a plain one, or a for_each one) whose tool
// declares one (check:, or tool.WithCheck); nil otherwise.
func (r *run) checker(i int) tool.Checker {
	s := r.f.Steps[i]
	if s.Type != flow.Tool || s.Repeat != nil || r.b.tools[i] == nil {
		return nil
	}
	ck, _ := r.b.tools[i].(tool.Checker)
	return ck
}

// reconcile asks the check of step i's tool about its calls in doubt
// (step i was found in flight after a crash: a plain tool step that is
// not idempotent, or a for_each step whose records show item calls
// started and never settled), and reports whether that settled the
// question without a person:
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
//     schema): a person decides, told why.
//
// requeued reports that the step goes back to the ready queue (the caller
// seeds the machine once).
func (r *run) reconcile(i int) (settled, requeued bool) {
	if r.f.Steps[i].Type == flow.Plan {
		return r.reconcilePlan(i)
	}
	ck := r.checker(i)
	if ck == nil {
		return false, false
	}
	s := r.f.Steps[i]
	p := r.d.progress[i]
	if s.ForEach != nil && (p == nil || len(p.inDoubt) == 0 || len(p.inDoubt) != len(p.doubt)) {
		return false, false // a fallback's call in doubt: its tool is another
	}
	j := r.prepare(i)
	if j.renderErr != nil {
		return false, false
	}
	attempt := max(r.steps[i].attempts, 1)
	if s.ForEach == nil {
		at := invoke.Position{RunID: r.id, StepID: s.ID, Attempt: attempt}
		out, happened, ok := r.askCheck(i, ck, s.Tool, &r.b.specs[i], at, at.Key(), j.in.args)
		switch {
		case !ok:
			return false, false
		case happened:
			r.settleWith(i, out)
			return true, false
		}
	} else {
		for _, c := range p.inDoubt {
			if c.Item >= len(j.each.inputs) {
				return false, false
			}
			at := invoke.Position{RunID: r.id, StepID: s.ID, ForEach: true, Item: c.Item, Round: c.Round, Attempt: c.Attempt}
			out, happened, ok := r.askCheck(i, ck, s.Tool, &r.b.specs[i], at, c.Key, j.each.inputs[c.Item].args)
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

// askCheck asks ck, the check of tool name (spec), whether the call of
// step i at position at (key, args)
// took effect, records its answer as the call's record and reports it: ok
// is false when a person must decide (the check cannot say, or the call
// did not happen and may not be made again without a person), with the
// reason noted for the question.
func (r *run) askCheck(i int, ck tool.Checker, name string, spec *tool.Spec, at invoke.Position, key string, args any) (out any, happened, ok bool) {
	s := r.f.Steps[i]
	clock := r.e.cfg.Clock
	start := clock.Now()
	ctx, cancel := clock.WithDeadline(r.ctx, start.Add(CheckTimeout))
	defer cancel()
	ctx = tool.WithCallInfo(ctx, &tool.CallInfo{RunID: r.id, StepID: s.ID, Attempt: at.Attempt, IdempotencyKey: key})
	res, err := ck.CheckCall(ctx, tool.CheckRequest{Args: args, IdempotencyKey: key, OutputSchema: spec.OutputSchema})
	if err == nil && res.Happened && spec.OutputSchema != nil {
		err = checkOutput(spec, res.Output)
	}
	if err != nil {
		r.noteStep(i, fmt.Sprintf("its tool's check could not say whether the call %s took effect: %v", key, err))
		return nil, false, false
	}
	rec := &invoke.Record{At: at, Key: key, Tool: name, Args: args, Start: start, Duration: clock.Now().Sub(start)}
	if at.PlanStep == "" {
		rec.Provenance = r.b.provenance(i, false)
	}
	if res.Happened {
		rec.Outcome, rec.Output = invoke.OK, res.Output
		c := r.callOf(rec, store.CallSucceeded, spec, true)
		c.Reconciled = journal.ReconciledHappened
		r.recordCallEvent(c, false)
		return res.Output, true, true
	}
	rec.Outcome = invoke.Failed
	c := r.callOf(rec, store.CallFailed, spec, false)
	c.Reconciled, c.Error = journal.ReconciledNotHappened, "its tool's check found that the call did not take effect"
	r.recordCallEvent(c, false)
	if a := r.d.decisions[s.ID]; a != nil && a.Status == store.ApprovalApproved || safeToRepeat(spec) {
		return nil, false, true
	}
	r.noteStep(i, "its tool's check found that the call "+key+" did not take effect: approve to make it, reject to fail the step")
	return nil, false, false
}

// safeToRepeat reports whether a call of a tool with spec may be made
// again without a person: it is idempotent or only reads.
func safeToRepeat(spec *tool.Spec) bool {
	return spec.Idempotent || spec.Effect == tool.EffectRead || spec.Effect == tool.EffectNone || spec.Effect == ""
}

// checkOutput checks the output a check returned against the tool's
// output schema.
func checkOutput(spec *tool.Spec, out any) error {
	sch, err := schema.Compile(spec.Name+" output", spec.OutputSchema)
	if err != nil {
		return err
	}
	if err := sch.Validate(out); err != nil {
		return fmt.Errorf("it says the call took effect, but its output %w", err)
	}
	return nil
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
		ck, ok := t.(tool.Checker)
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
		out, happened, ok := r.askCheck(i, ck, c.Name, &spec, at, c.Key, args)
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

// checksAny reports whether a step of steps has a check to ask.
func (r *run) checksAny(steps []int) bool {
	for _, i := range steps {
		if r.checker(i) != nil || r.f.Steps[i].Type == flow.Plan {
			return true
		}
	}
	return false
}
