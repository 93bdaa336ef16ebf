package engine

import (
	"errors"
	"sync/atomic"

	"github.com/reinhq/rein/internal/fanout"
)

// errHeld ends the fan-out of a step in flight when a failed premise held
// the run (run.hold): its units in flight finished and were recorded, the
// rest were not started. The step does not settle: it stays running, as a
// step in flight when its process stopped does, and a resume continues it
// from its call records once a person decided the premise (resumeCalls).
var errHeld = errors.New("held: a failed premise pauses the run; the step goes on once a person decides it")

// hold records that a premise failed in the run: from now on no step in
// flight starts a new unit (for_each item, repeat round, plan step) —
// see holdSource and heldFunc. It holds only a durable run, whose failed premise parks
// (store.KindPremise): elsewhere the premise fails the run, which cancels
// what is in flight. A held run is never un-held: the person's decision
// is carried out by a resume, in a new run.
func (r *run) hold() {
	if r.d.on && r.ctx.Err() == nil {
		r.held.Store(true)
	}
}

// holds reports whether a step in flight stops at its next unit when the
// run is held: a step that keeps the call records a resume continues
// from (continuable: a for_each of tool or llm calls, a repeat of tool
// calls, a plan step), so that its settled units are not made again and no call is in
// doubt. Any other step runs on to its end.
func (r *run) holds(i int) bool {
	return r.d.on && continuable(r.f.Steps[i])
}

// holdSource is a fan-out's source that hands out no unit once a failed
// premise held the run (held set): the units in flight finish and settle,
// the rest wait.
type holdSource[U any] struct {
	fanout.Source[U]
	held *atomic.Bool // nil: never held
}

// Next hands out the source's next unit, none once held.
func (h holdSource[U]) Next(inFlight int) (U, bool) {
	if h.held != nil && h.held.Load() {
		var u U
		return u, false
	}
	return h.Source.Next(inFlight)
}

// CanStart is the source's, false once held.
func (h holdSource[U]) CanStart(inFlight int) bool {
	return (h.held == nil || !h.held.Load()) && h.Source.CanStart(inFlight)
}

// heldFlag is the flag step i's fan-out consults (holdSource): the run's
// when the step holds (holds), nil otherwise.
func (r *run) heldFlag(i int) *atomic.Bool {
	if r.holds(i) {
		return &r.held
	}
	return nil
}

// heldFunc is heldFlag as the plan executor asks it
// (plan.ExecutorConfig.Held): nil when step i does not hold.
func (r *run) heldFunc(i int) func() bool {
	if h := r.heldFlag(i); h != nil {
		return h.Load
	}
	return nil
}
