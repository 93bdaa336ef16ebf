package engine

import (
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// agree checks that the machine, fed the run's journal, reached the state
// the step projection holds: every step's status, and a settled or parked
// step's attempt and output digest. A step in flight may be at a later
// attempt than its journal says: a retry's row is committed before the
// retry (beginAttempt), and its journal entry is the failure before it.
// A disagreement is a conflict-classed error naming the step.
func (r *run) agree(rows []*store.Step) error {
	seen := make([]bool, len(r.f.Steps))
	for _, row := range rows {
		s := r.f.StepByID(row.StepID)
		if s == nil {
			return fmt.Errorf("engine: run %s journals step %s, which its flow does not have", r.id, row.StepID)
		}
		i := s.Index
		seen[i] = true
		st, n, sha := r.m.Status(i), r.m.Attempts(i), r.m.OutputSHA(i)
		switch {
		case st != row.Status,
			row.Status == trace.StepRunning && row.Attempt < n,
			row.Status != trace.StepRunning && (row.Attempt != n || row.OutputSHA != sha):
			return r.disagree(s.ID, fmt.Sprintf("%s at attempt %d%s", st, n, shaNote(sha)),
				fmt.Sprintf("%s at attempt %d%s", row.Status, row.Attempt, shaNote(row.OutputSHA)))
		}
	}
	for i, s := range r.f.Steps {
		if !seen[i] && r.m.Status(i) != trace.StepPending {
			return r.disagree(s.ID, fmt.Sprintf("%s at attempt %d", r.m.Status(i), r.m.Attempts(i)), "nothing (no row)")
		}
	}
	return nil
}

func (r *run) disagree(step, journal, row string) error {
	return fault.New(fault.Conflict, fmt.Errorf("engine: run %s cannot be resumed: its journal and its step rows disagree on step %s: replaying the journal gives %s, the step's row holds %s; the store was changed by something other than this engine: inspect the run (rein show %s) and cancel it", r.id, step, journal, row, r.id))
}

func shaNote(sha string) string {
	if sha == "" {
		return ""
	}
	return fmt.Sprintf(" with output sha256 %.12s", sha)
}
