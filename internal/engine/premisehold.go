package engine

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/trace"
)

// errHeld ends the fan-out of a step in flight when a failed premise held
// the run (run.hold): its units in flight finished and were recorded, the
// rest were not started. The step does not settle: it stays running, as a
// step in flight when its process stopped does, and a resume continues it
// from its call records once a person decided the premise (resumeCalls).
var errHeld = errors.New("held: a failed premise pauses the run; the step goes on once a person decides it")

// hold records that a premise failed in the run: from now on no step in
// flight starts a new unit (for_each item, repeat round, plan step, an
// agent's next turn or call) — see heldFunc (a fan-out's fanout.Held,
// agent.Loop.WithHeld). It holds only a durable run, whose failed premise parks
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
// calls, a plan step), or an agent step, whose transcript a resume
// continues from its committed turns and calls (a call the hold kept
// from starting is committed so: agent.HeldReason), so that its settled
// units are not made again and no call is in doubt. Any other step — a
// for_each or repeat of agents among them — runs on to its end.
func (r *run) holds(i int) bool {
	s := r.f.Steps[i]
	return r.d.on && (continuable(s) || s.Type == flow.Agent && s.ForEach == nil && s.Repeat == nil)
}

// heldFlag is the flag step i's fan-out consults (fanout.Held): the run's
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

// endResumed ends, as a failed run ends the steps it has in flight
// (failed, class cancelled: "cancelled: the run stopped because step X
// failed"), the steps this resumed run found running — held by a failed
// premise a person then rejected, or in flight when a process stopped —
// that it failed before starting again: their rows would stay running in
// a finished run.
func (r *run) endResumed() {
	why := "cancelled: the run stopped because it failed"
	if r.failure.Step != "" {
		why = fmt.Sprintf("cancelled: the run stopped because step %s failed", r.failure.Step)
	}
	for _, i := range r.d.resumedRunning {
		if st := r.m.Status(i); st != trace.StepPending && st != trace.StepReady {
			continue // started again, settled or parked here
		}
		st := &r.steps[i]
		st.settled = r.e.cfg.Clock.Now()
		st.err = &RunError{Class: fault.Cancelled, Origin: trace.OriginEngine, Step: r.f.Steps[i].ID, Message: why}
		r.m.Settle(i, trace.StepFailed, st.attempts, "")
		r.emitSettled(i, nil, nil, st.err)
	}
}
