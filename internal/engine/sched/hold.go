package sched

// UnitGate is whether a step in flight starts its next unit (a for_each
// item, a repeat round, a plan step, an agent step's next turn or call)
// while the run may be paused by a failed premise (Machine.Units).
type UnitGate uint8

// The unit gates.
const (
	// UnitsGo: the next unit starts.
	UnitsGo UnitGate = iota
	// UnitsWait: a failed premise pauses the run and a person has not
	// decided it yet: no further unit starts; the units in flight
	// finish. The step waits, unsettled, and goes on once each premise
	// is decided.
	UnitsWait
	// UnitsStop: a person rejected a failed premise, which fails the run:
	// no further unit starts, and the step ends as the failed run ends
	// the steps it has in flight (failed, class cancelled).
	UnitsStop
)

// Units decides whether a step in flight starts its next unit: UnitsWait
// while the run is paused (Held) on a premise decided says has no
// decision yet, UnitsStop once one of them was rejected (rejected), else
// UnitsGo; a rejected premise stops the units even while another waits.
// decided and rejected take the index of a premise's step; a
// driver that carries decisions out only between steps (the Temporal
// workflow) answers them from the decisions it took, before the machine
// learns of them (Requeue). A local run, whose held run is continued by a
// resume in a new process, stops its steps at UnitsWait instead of
// waiting (package engine, premisehold.go).
func (m *Machine) Units(decided, rejected func(step int) bool) UnitGate {
	gate := UnitsGo
	for _, p := range m.Premises() {
		switch {
		case !decided(p.Step):
			gate = UnitsWait
		case rejected(p.Step):
			return UnitsStop // the run fails, whatever the others' decisions
		}
	}
	return gate
}
