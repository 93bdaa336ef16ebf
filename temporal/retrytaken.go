package temporal

import (
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
)

// changeRetryTaken: a retry (the update retry, while the failed run is
// open) makes again the steps whose calls the saga took back, as a local
// retry does (engine.TakenBack). Before, it kept their outputs. A retry
// as a new execution (RetryRun) needs no marker: the keys taken back
// travel in its input (Carry.TakenBack), and a run carried by a rein
// before it has none.
const changeRetryTaken = "rein-retry-taken"

// takenBack names the steps every effect of which the run's saga took
// back (engine.TakenBack over the saga's records), or refuses a step only
// part of whose calls were taken back.
func (r *wrun) takenBack() (map[string]bool, error) {
	if len(r.saga.taken) == 0 {
		return nil, nil
	}
	last := make(map[string]*journal.Remediation, len(r.saga.done))
	for k := range r.saga.done {
		m := &journal.Remediation{Key: k, Action: string(engine.ActFreeze), Status: journal.RemedyFrozen}
		if r.saga.taken[k] {
			m.Action, m.Status = string(engine.ActCompensate), journal.RemedyDone
		}
		last[k] = m
	}
	return engine.TakenBack(r.runID, r.saga.effects, last)
}

// takesBack reports whether the retry of this run makes the steps its
// saga took back again: always when the saga took nothing back (there
// is no choice to record), else as changeRetryTaken says.
func (r *wrun) takesBack(ctx workflow.Context) bool {
	return len(r.saga.taken) == 0 || version(ctx, changeRetryTaken) == 1
}
