package runs

import (
	"encoding/json"
	"strconv"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/trace"
)

// declaredAssumption is an assumption a model declared with a call it
// chose, as the run's journal holds it: an agent call's (its call record,
// or an older journal's agent_call event, with the call's key) or a plan step's (the declaration the gate
// saw, in its gate_decision record: step, plan step and plan number).
// A library caller's assumption (ImpactOptions.Assumptions) has no call.
type declaredAssumption struct {
	safety.Assumption
	StepID   string
	Key      string // an agent call's idempotency key
	PlanStep string // a plan step's id, with Plan its plan's number
	Plan     int
}

// byCall reports whether a call declared it (rather than a library
// caller naming it).
func (d *declaredAssumption) byCall() bool { return d.Key != "" || d.PlanStep != "" }

// declares reports whether c is the call that declared d.
func (d *declaredAssumption) declares(c *EffectCall) bool {
	if d.Key != "" {
		return c.Key == d.Key
	}
	return d.PlanStep != "" && c.StepID == d.StepID && c.PlanStep == d.PlanStep && c.Plan == d.Plan
}

// journaledAssumptions returns the assumptions declared in events, in
// journal order: each agent call's declaration (its latest record), and
// each plan step's declaration the gate decided on. Records that do not
// decode are skipped: they declare nothing readable.
func journaledAssumptions(events []*trace.Event) []declaredAssumption {
	var out []declaredAssumption
	seen := map[string]bool{}
	add := func(d declaredAssumption) {
		id := d.ID + "\x00" + d.StepID + "\x00" + d.Key + "\x00" + d.PlanStep + "\x00" + strconv.Itoa(d.Plan)
		if d.ID == "" || seen[id] {
			return
		}
		seen[id] = true
		out = append(out, d)
	}
	for _, ev := range events {
		switch {
		case ev.Kind == trace.AgentCall && ev.Data != "" || ev.Kind == trace.CallRecorded:
			c, _, ok, err := engine.AgentCallOf(ev)
			if !ok || err != nil || c.Declaration == nil || c.Key == "" {
				continue
			}
			for _, a := range c.Declaration.Assumptions {
				add(declaredAssumption{Assumption: a, StepID: ev.StepID, Key: c.Key})
			}
		}
	}
	// a plan step's declaration, in what its gate saw (a gate_decision
	// event's data, or a call record's gate).
	for _, g := range journal.GateDecisions(events) {
		if g.PlanStep == "" || g.Turn != 0 || len(g.Decision.Basis) == 0 {
			continue
		}
		var b safety.Basis
		if json.Unmarshal(g.Decision.Basis, &b) != nil || b.Declaration == nil {
			continue
		}
		for _, a := range b.Declaration.Assumptions {
			add(declaredAssumption{Assumption: a, StepID: g.StepID, PlanStep: g.PlanStep, Plan: g.Attempt})
		}
	}
	return out
}
