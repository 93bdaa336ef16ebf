package engine

import (
	"fmt"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// CheckTimeout bounds one check (tool.Checker) a resume makes of a call
// in doubt, on top of an exec check's own timeout (its tool's): a check
// that has not answered by then cannot say, and a person decides.
const CheckTimeout = time.Minute

// checker returns the check of step i's tool when the step is a plain tool
// step (no for_each, no repeat) whose tool declares one (check:, or
// tool.WithCheck); nil otherwise.
func (r *run) checker(i int) tool.Checker {
	s := r.f.Steps[i]
	if s.Type != flow.Tool || s.ForEach != nil || s.Repeat != nil || r.b.tools[i] == nil {
		return nil
	}
	ck, _ := r.b.tools[i].(tool.Checker)
	return ck
}

// reconcile asks the check of step i's tool, found in flight after a crash
// and not idempotent, whether its call took effect, and reports whether
// that settled the question without a person:
//
//   - it happened: the step settles with the output the check returned
//     (checked against the tool's output schema, then as a settled output:
//     the step's schema and gate), its call record marked
//     journal.ReconciledHappened;
//   - it did not: the call is made again, with the same attempt and
//     idempotency key, when a person had approved it; otherwise a person
//     decides, told what the check found (ReconciledNotHappened);
//   - the check cannot say (an error, a timeout, an output that breaks the
//     schema): a person decides, told why.
//
// requeued reports that the step goes back to the ready queue (the caller
// seeds the machine once).
func (r *run) reconcile(i int) (settled, requeued bool) {
	ck := r.checker(i)
	if ck == nil {
		return false, false
	}
	s := r.f.Steps[i]
	j := r.prepare(i)
	if j.renderErr != nil {
		return false, false
	}
	spec := &r.b.specs[i]
	attempt := max(r.steps[i].attempts, 1)
	at := invoke.Position{RunID: r.id, StepID: s.ID, Attempt: attempt}
	key := at.Key()
	clock := r.e.cfg.Clock
	start := clock.Now()
	ctx, cancel := clock.WithDeadline(r.ctx, start.Add(CheckTimeout))
	defer cancel()
	ctx = tool.WithCallInfo(ctx, &tool.CallInfo{RunID: r.id, StepID: s.ID, Attempt: attempt, IdempotencyKey: key})
	res, err := ck.CheckCall(ctx, tool.CheckRequest{Args: j.in.args, IdempotencyKey: key, OutputSchema: spec.OutputSchema})
	if err == nil && res.Happened && spec.OutputSchema != nil {
		err = checkOutput(spec, res.Output)
	}
	rec := &invoke.Record{At: at, Key: key, Tool: s.Tool, Args: j.in.args, Provenance: r.b.provenance(i, false),
		Start: start, Duration: clock.Now().Sub(start)}
	switch {
	case err != nil:
		r.noteStep(i, fmt.Sprintf("its tool's check could not say whether the call took effect: %v", err))
		return false, false
	case res.Happened:
		rec.Outcome, rec.Output = invoke.OK, res.Output
		c := r.callOf(rec, store.CallSucceeded, spec, true)
		c.Reconciled = journal.ReconciledHappened
		r.recordCallEvent(c, false)
		r.settleWith(i, res.Output)
		return true, false
	}
	rec.Outcome = invoke.Failed
	c := r.callOf(rec, store.CallFailed, spec, false)
	c.Reconciled, c.Error = journal.ReconciledNotHappened, "its tool's check found that the call did not take effect"
	r.recordCallEvent(c, false)
	if a := r.d.decisions[s.ID]; a != nil && a.Status == store.ApprovalApproved || spec.Idempotent || spec.Effect == tool.EffectRead || spec.Effect == tool.EffectNone || spec.Effect == "" {
		// approved, or safe to repeat: made again, same attempt and key.
		r.m.Requeue(i)
		r.d.firstAttempt[i] = attempt
		return true, true
	}
	r.noteStep(i, "its tool's check found that the call did not take effect (idempotency key "+key+"): approve to make it, reject to fail the step")
	return false, false
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

// checksAny reports whether a step of steps has a check to ask.
func (r *run) checksAny(steps []int) bool {
	for _, i := range steps {
		if r.checker(i) != nil {
			return true
		}
	}
	return false
}
