package engine

import (
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/store"
)

// waitsForAgent reports whether step s takes its output from an agent: a
// submit step (the agent's JSON) or a source step (an adapter the agent
// triggers). Such a step parks the run (waiting) with an approval of kind
// submission until a settle decision brings its output; a rejection fails
// the step.
func waitsForAgent(s *flow.Step) bool {
	return s.Type == flow.Submit || s.Type == flow.Source
}

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
