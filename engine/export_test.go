package engine

import (
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/trace"
)

// LastPerStep exposes lastPerStep to the external tests.
var LastPerStep = lastPerStep

// CachedBindings is how many flows e keeps bound.
func CachedBindings(e *Engine) int { return e.bindings.Len() }

// Replayed is one step's state after a replay.
type Replayed struct {
	Status    trace.StepStatus
	Attempts  int
	OutputSHA string
}

// Replay feeds a stored journal to a fresh scheduler machine of f and
// returns the state it reaches: the run's status, each step that left
// pending, and the approvals waited on ("step:kind").
func Replay(f *flow.Flow, events []*trace.Event) (trace.RunStatus, map[string]Replayed, []string, error) {
	var m machine
	m.reset(f)
	for _, ev := range events {
		if err := m.apply(ev); err != nil {
			return "", nil, nil, err
		}
	}
	// a resume restores the same graph from the statuses alone (recount).
	released := append([]int(nil), m.waiting...)
	m.recount()
	for i, n := range m.waiting {
		if s := m.f.Steps[i]; n != released[i] && m.status[i] == trace.StepPending {
			return "", nil, nil, fmt.Errorf("step %s waits on %d requires after the journal, %d when restored", s.ID, released[i], n)
		}
	}
	steps := map[string]Replayed{}
	for i, s := range f.Steps {
		if m.status[i] != trace.StepPending {
			steps[s.ID] = Replayed{Status: m.status[i], Attempts: m.attempts[i], OutputSHA: m.sha[i]}
		}
	}
	var pending []string
	for _, p := range m.pending {
		pending = append(pending, f.Steps[p.step].ID+":"+string(p.kind))
	}
	return m.run, steps, pending, nil
}
