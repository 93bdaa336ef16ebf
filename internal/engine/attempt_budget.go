package engine

import (
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/invoke"
)

// outsideRun is what an attempt outside the runner (runAt) knows of the
// run it belongs to, beyond its scope: whether the engine has a store to
// reserve model calls in (spend.go) and to check invalidated resources
// against, and the budget the driver handed it, to report what the
// attempt's own model calls added (Settled.Spent, Settled.OnSpent).
type outsideRun struct {
	store   bool
	from    sched.Spent
	onSpent func(sched.Spent)
	// onTainted is Settled.OnTainted (attempt_carry.go).
	onTainted func([]invoke.Taint)
}

// stored reports whether o is an attempt outside the runner on an engine
// with a store; false for a run of the runner (o nil).
func (o *outsideRun) stored() bool { return o != nil && o.store }

// reportSpent hands an attempt outside the runner's OnSpent what its
// model calls spent beyond what the driver handed it (at its end).
func (r *run) reportSpent() {
	o := r.outside
	if o == nil || o.onSpent == nil {
		return
	}
	now := r.budget.Spent()
	o.onSpent(sched.Spent{LLMCalls: now.LLMCalls - o.from.LLMCalls, TokensIn: now.TokensIn - o.from.TokensIn, TokensOut: now.TokensOut - o.from.TokensOut})
	o.onSpent = nil
}
