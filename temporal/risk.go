package temporal

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/reinhq/rein/internal/invoke"
)

// A run's risk tier and taint on Temporal. A local run holds one tier and
// one taint (invoke.Invalid) for its whole life: once a call raised the
// tier to 3 or 4, or touched an invalidated resource, every later call of
// the run meets the controls of that. Here each activity builds its run
// afresh (engine.Settled), so the workflow keeps the run's (saga.tier,
// saga.tainted), hands both to every activity it schedules (attemptIn.Tier,
// attemptIn.Tainted: the floor and taint its calls start from) and folds
// in what each reports back, whether it succeeded or failed
// (attemptOut.Tier/Tainted, failure.Tier/Tainted). The step-stage raises
// (an agent step's tools, a for_each step's fan-out) are the engine's, in
// the activity that runs the step (engine.Attempt, AgentUnit, AskGate).
// What an activity is handed and reports is not a command: no GetVersion.

// noteRisk folds what an activity reported into the run's tier and
// taint. Deterministic.
func (r *wrun) noteRisk(tier int, tainted []invoke.Taint) {
	r.saga.tier = max(r.saga.tier, tier)
	r.saga.tainted = invoke.MergeTaints(r.saga.tainted, tainted)
}

// riskOut puts the taint an activity's run reported (tainted) in its
// answer (held, which out is when it succeeded) or, when it failed, in the
// failure's detail, with the tier held noted (an activity's error that is
// not an attempt's carries no tier of its own: toApplicationError).
func riskOut(held *attemptOut, tainted *[]invoke.Taint, out **attemptOut, err *error) {
	if *err == nil {
		if *out != nil {
			(*out).Tainted = *tainted
		}
		return
	}
	if held.Tier == 0 && len(*tainted) == 0 {
		return
	}
	var ae *temporal.ApplicationError
	var d failure
	if !errors.As(*err, &ae) || !ae.HasDetails() || ae.Details(&d) != nil || d.Class == "" {
		return
	}
	d.Tier, d.Tainted = max(d.Tier, held.Tier), *tainted
	*err = temporal.NewNonRetryableApplicationError(d.Message, d.Class, ae.Unwrap(), d)
}
