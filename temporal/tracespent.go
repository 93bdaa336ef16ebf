package temporal

import (
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/trace/summary"
)

// spent is what activity a's model calls spent, as its attempt reported
// it (attemptOut.Spent, or failure.Spent when it failed); nil when it
// reported nothing (no model call, a lost worker, a history recorded
// before activities reported it). An agent's unit reports its turn's
// spending too, but rein runs trace counts an agent's tokens from its
// session's turns (sessionsOf): spent answers nil for a unit.
func (a *activityRec) spent() *sched.Spent {
	switch {
	case a.In.Agent != nil:
		return nil
	case a.Out != nil:
		return a.Out.Spent
	case a.Fail != nil:
		return a.Fail.Spent
	}
	return nil
}

// addSpentTo counts sp (may be nil) in step s of a trace summary.
func addSpentTo(s *summary.Step, sp *sched.Spent) {
	if sp == nil {
		return
	}
	s.TokensIn += sp.TokensIn
	s.TokensOut += sp.TokensOut
	s.ModelCalls += sp.LLMCalls
}
