package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// TakenBack names the steps of a run every effect of which a remediation
// (its saga's, or a failed premise's) took back: each of their calls with
// an effect other than a read was undone or compensated (status done), or
// a person settled its escalation (took it back by hand). A retry makes
// such a step again (sched.ReopensTaken), at its next attempt, with new
// keys. effects are the run's executed calls (the latest record per key),
// last the latest remediation record per call key.
//
// A step some of whose calls were taken back and others not (frozen, a
// compensation rejected) cannot be retried: making it again would repeat
// what still stands, and keeping it would keep what was undone. The error
// (a business error) names the step and the calls that stand.
func TakenBack(runID string, effects []*journal.Effect, last map[string]*journal.Remediation) (map[string]bool, error) {
	type tally struct {
		taken int
		stand []string
	}
	by := map[string]*tally{}
	for _, eff := range effects {
		if eff.Remedy != "" || Classify(eff) == ActKeep {
			continue
		}
		t := by[eff.StepID]
		if t == nil {
			t = &tally{}
			by[eff.StepID] = t
		}
		if m := last[eff.Key]; m != nil && tookBack(m) {
			t.taken++
		} else {
			t.stand = append(t.stand, eff.Key)
		}
	}
	out := map[string]bool{}
	steps := make([]string, 0, len(by))
	for id := range by {
		steps = append(steps, id)
	}
	sort.Strings(steps)
	for _, id := range steps {
		t := by[id]
		switch {
		case t.taken == 0:
		case len(t.stand) == 0:
			out[id] = true
		default:
			return nil, fault.New(fault.Business, fmt.Errorf("run %s: step %s had %d of its calls taken back, but %s still stand (frozen, or a compensation was rejected): a retry would make them again or keep what was undone; start a new run", runID, id, t.taken, strings.Join(t.stand, ", ")))
		}
	}
	return out, nil
}

// tookBack reports whether remediation record m took its call back.
func tookBack(m *journal.Remediation) bool {
	if m.Action != string(ActUndo) && m.Action != string(ActCompensate) {
		return false
	}
	return m.Status == journal.RemedyDone || m.Status == journal.RemedyResolved && m.Decision == string(store.ApprovalSettled)
}
