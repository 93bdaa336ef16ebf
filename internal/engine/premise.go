package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
)

// PremiseError is the failure of a step whose output contradicts its
// premise (flow.Premise): a business error that is never retried and
// parks the step for a person whatever its on_error (the run stops first),
// its message naming the premise and the remediation on offer.
type PremiseError struct {
	RunID, StepID string
	Premise       *flow.Premise
}

func (e *PremiseError) Error() string {
	claim := ""
	if e.Premise.Claim != "" {
		claim = fmt.Sprintf(" (%q)", e.Premise.Claim)
	}
	return fmt.Sprintf("premise %s%s does not hold on the output of step %s (check %q): the run stops here, before anything that depends on it; "+
		"see what the premise touched with rein runs impact %s --premise %s, take it back with rein runs remediate %s --premise %s",
		e.Premise.ID, claim, e.StepID, e.Premise.Check.Source(), e.RunID, e.StepID, e.RunID, e.StepID)
}

// checkPremise evaluates the step's premise on an output, under ctx (the
// attempt's, or evalCtx's): a *PremiseError (business) when it does not
// hold.
func (r *run) checkPremise(ctx context.Context, j *job, out any) error {
	s := j.step
	scope := j.scope
	scope["output"], scope[s.ID] = out, out
	ok, err := s.Premise.Check.EvalContext(ctx, scope)
	if err != nil {
		return renderFailure(ctx, s, fmt.Sprintf("premise %s check %q could not be evaluated", s.Premise.ID, s.Premise.Check.Source()), err)
	}
	if !ok {
		return fault.BusinessErr(&PremiseError{RunID: r.id, StepID: s.ID, Premise: s.Premise})
	}
	return nil
}

// premiseFailed reports whether err is a premise that does not hold.
func premiseFailed(err error) bool {
	var pe *PremiseError
	return errors.As(err, &pe)
}
