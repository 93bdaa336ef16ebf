package temporal

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/reinhq/rein/internal/engine/sched"
)

// A run's budgets across activities. The workflow holds the run's budget
// (wrun.budget): max_iterations it charges itself, as it starts each
// execution (unitOf); the model calls (max_llm_calls) and tokens
// (max_tokens) are spent in activities — an llm step, a route, a plan's
// decisions, a reviewer, an agent's turn, a fallback. Each activity is
// handed the budget as the workflow holds it when it schedules it
// (attemptIn.Spent), charges its own calls on top of it with the engine's
// code (engine.Settled.Spent: a call past a limit is refused as in a local
// run, a fault.Budget error naming the budget), and reports what its calls
// spent (attemptOut.Spent, or failure.Spent when it failed), which the
// workflow adds as each result arrives (charge) and carries through
// continue-as-new (Carry.Spent). Activities in flight at once each see the
// budget as it was when they were scheduled, so together they may pass a
// limit by what they spend concurrently; the next one scheduled is refused.
// An activity whose worker was lost reports nothing: its calls are not
// charged.

// budgetIn gives an activity's input the run's tenant and what the run
// spent so far.
func (r *wrun) budgetIn(in *attemptIn) {
	in.Tenant = r.in.Tenant
	if sp := r.budget.Spent(); sp.LLMCalls > 0 || sp.TokensIn > 0 || sp.TokensOut > 0 {
		in.Spent = &sched.Spent{LLMCalls: sp.LLMCalls, TokensIn: sp.TokensIn, TokensOut: sp.TokensOut}
	}
}

// charge adds what an activity's model calls spent to the run's budget.
func (r *wrun) charge(sp *sched.Spent) {
	if sp != nil {
		r.budget.Restore(sched.Spent{LLMCalls: sp.LLMCalls, TokensIn: sp.TokensIn, TokensOut: sp.TokensOut})
	}
}

// addSpent is a plus b (an activity's attempts outside the runner, each
// reporting through engine.Settled.OnSpent).
func addSpent(a, b sched.Spent) sched.Spent {
	return sched.Spent{LLMCalls: a.LLMCalls + b.LLMCalls, TokensIn: a.TokensIn + b.TokensIn, TokensOut: a.TokensOut + b.TokensOut}
}

// chargeOut, deferred by the activity, reports what its model calls spent
// (spent, which engine.Settled.OnSpent fills as the attempt ends) in its answer,
// or in its failure's details when it failed.
func chargeOut(spent *sched.Spent, out **attemptOut, err *error) {
	if *spent == (sched.Spent{}) {
		return
	}
	sp := spent
	if *err == nil {
		if *out != nil {
			(*out).Spent = sp
		}
		return
	}
	var ae *temporal.ApplicationError
	var d failure
	if !errors.As(*err, &ae) || !ae.HasDetails() || ae.Details(&d) != nil || d.Class == "" {
		return
	}
	d.Spent = sp
	*err = temporal.NewNonRetryableApplicationError(d.Message, d.Class, ae.Unwrap(), d)
}
