package engine

import (
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/store"
)

// parkSubmission parks step i for an agent's submission. prior is the
// step's decision, if any: an approval is no output, so the step waits
// again.
func (r *run) parkSubmission(i int, prior *store.Approval) {
	s := r.f.Steps[i]
	if prior != nil {
		delete(r.d.decisions, s.ID)
	}
	r.park(i, store.KindSubmission, nil)
}

// submissionMessage is what the approval of a submit or source step says.
func submissionMessage(s *flow.Step) string {
	switch {
	case s.Type == flow.Source:
		return fmt.Sprintf("step %s waits for its source: the agent asks adapter %s to produce its output (submit_from_source)", s.ID, s.Adapter)
	case s.Skill != "":
		return fmt.Sprintf("step %s waits for the agent's submission (skill %s)", s.ID, s.Skill)
	}
	return fmt.Sprintf("step %s waits for the agent's submission", s.ID)
}

// settledGate checks step s's gate on an output that was settled (by an
// agent's submission or a person): downstream steps start only on an
// output the gate holds on.
func (r *run) settledGate(s *flow.Step, out any) error {
	if s.Gate == nil || s.ForEach != nil {
		return nil
	}
	scope := r.scope()
	scope["output"], scope[s.ID] = out, out
	ok, err := s.Gate.EvalContext(r.ctx, scope)
	if err != nil {
		return fault.BusinessErr(fmt.Errorf("gate %q could not be evaluated on the settled output: %w", s.Gate.Source(), err))
	}
	if !ok {
		return fault.BusinessErr(fmt.Errorf("gate %q does not hold on the settled output", s.Gate.Source()))
	}
	return nil
}

// refuseSubmission journals a settled output of submit or source step i
// that breaks its contract or gate (submission_rejected), and parks the
// step again: a submission that does not fit never fails the run.
func (r *run) refuseSubmission(i int, out any, err error) {
	s := r.f.Steps[i]
	ev := trace.Event{Kind: trace.SubmissionRejected, StepID: s.ID, StepType: string(s.Type), ErrorClass: string(fault.ClassOf(err)), Error: err.Error()}
	if b, cerr := value.AppendCanonical(nil, out); cerr == nil {
		ev.OutputSHA, ev.Preview = value.Digest(b), value.Preview(b, trace.PreviewBytes)
	}
	r.record(ev)
	r.park(i, store.KindSubmission, nil)
}
