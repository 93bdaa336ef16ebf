package plan

import (
	"cmp"
	"slices"

	"github.com/reinhq/rein/safety"
)

// State is what the executor has done in one run, across the plans of its
// replans: the output of every completed step, how many steps were
// executed, and how many plans were run. The zero value is a fresh run. A
// State belongs to one run at a time and is not safe for concurrent use.
type State struct {
	// RunID and StepID identify the run and the step that runs the plan,
	// for idempotency keys, the gate and events. Empty means taken from the
	// tool.CallInfo in the context, if any.
	RunID  string
	StepID string
	// MaxExecuted, when > 0 and below the executor's MaxExecuted, is this
	// run's executed-step budget.
	MaxExecuted int
	// Decisions are people's decisions on steps that waited, by plan step
	// id (ExecutorConfig.Pausable).
	Decisions map[string]Decision
	// Evidence is what the run recorded that a planner-written value may
	// be found in (the user's input, tool outputs before the plan); the
	// executor adds each completed step's output. Nil: none, and every
	// literal of a plan is inferred.
	Evidence *safety.Evidence

	outputs  map[string]any
	results  []StepResult
	order    []int // plan index of each result, for ordering a round
	executed int
	attempt  int
}

// Output returns the output of a completed step.
func (s *State) Output(id string) (any, bool) {
	v, ok := s.outputs[id]
	return v, ok
}

// Completed returns the completed steps: by plan, then in plan order.
func (s *State) Completed() []StepResult { return slices.Clone(s.results) }

// Outputs returns the outputs of the completed steps by step id (a copy of
// the map; the values are shared).
func (s *State) Outputs() map[string]any {
	out := make(map[string]any, len(s.outputs))
	for k, v := range s.outputs {
		out[k] = v
	}
	return out
}

// Executed is the number of tool calls made (failed ones included).
func (s *State) Executed() int { return s.executed }

// Plans is the number of plans executed so far.
func (s *State) Plans() int { return s.attempt }

func (s *State) complete(i int, id, toolName string, out any) {
	if s.outputs == nil {
		s.outputs = make(map[string]any)
	}
	s.outputs[id] = out
	s.results = append(s.results, StepResult{ID: id, Tool: toolName, Output: out})
	s.order = append(s.order, i)
}

// settleRound puts the results completed since from in plan order, so that
// what later plans see does not depend on which parallel step finished first.
func (s *State) settleRound(from int) {
	type pair struct {
		r StepResult
		i int
	}
	ps := make([]pair, 0, len(s.results)-from)
	for k := from; k < len(s.results); k++ {
		ps = append(ps, pair{s.results[k], s.order[k]})
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return cmp.Compare(a.i, b.i) })
	for k, p := range ps {
		s.results[from+k], s.order[from+k] = p.r, p.i
	}
}

// restore makes s the state of a run that had come as far as p: p's
// completed steps, its executed calls, and the plans before p.Plan.
func (s *State) restore(p *Progress) {
	for k, r := range p.Completed {
		s.complete(k, r.ID, r.Tool, r.Output)
	}
	s.executed = max(p.Executed, len(p.Completed))
	s.attempt = max(p.Number-1, 0)
	s.Decisions = p.Decisions
}
