package temporal

import (
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/engine"
)

// A saga's frozen calls, registered. When a failed run's saga freezes a
// call it cannot take back (compensate), the objects the call wrote or
// sent are registered as invalid in the worker's run store (rein worker
// --store), as a local run's saga registers them: one activity
// ("freeze:STEP", id "<call key>/freeze") that the worker makes with the
// engine's code (engine.RegisterFrozen). A later run's call of a tool that
// touches one of them waits for a person, whatever its policy
// (invoke.Invalid). Registering is idempotent (a row per resource, run
// and call), so an activity whose worker was lost is made again.

// opFreeze registers a frozen call's objects (attemptIn.Effect).
const opFreeze = "freeze"

// changeFreeze: a saga's frozen call registers its objects as invalid
// resources (before, nothing was registered).
const changeFreeze = "rein-freeze-register"

// registerFrozen registers the objects of rm's frozen call, when it has
// any. A registration that fails is logged, and the saga goes on: the
// call stays frozen, its objects stay valid for later runs.
func (r *wrun) registerFrozen(ctx workflow.Context, rm *engine.Remedy) {
	eff := &rm.Effect
	if len(eff.Writes)+len(eff.Sends) == 0 || version(ctx, changeFreeze) != 1 {
		return
	}
	i, err := r.stepIndex(eff.StepID)
	if err != nil {
		workflow.GetLogger(ctx).Warn("a frozen call's objects are not registered as invalid", "call", eff.Key, "error", err.Error())
		return
	}
	v := r.settledView()
	for again := 0; ; again++ {
		_, af := r.exec(ctx, call{i: i, op: opFreeze, item: -1, effect: eff, rerun: again}, v)
		switch {
		case af == nil:
			return
		case (af.lost || af.notRun) && again < lostReruns:
			continue // idempotent: made again
		}
		workflow.GetLogger(ctx).Warn("a frozen call's objects are not registered as invalid", "call", eff.Key, "error", af.Message)
		return
	}
}
