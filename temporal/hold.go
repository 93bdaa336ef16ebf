package temporal

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// A failed premise pauses the whole run (sched.Machine.Held): the machine
// dispatches no step, and a step in flight starts no further unit — a
// for_each item, a repeat round, an agent's next turn or call — while the
// premise waits for a person (sched.Machine.Units); the units in flight
// finish. The step's coroutine waits in place (awaitUnits): approved (or
// settled), its units go on where they stopped; rejected, it starts none
// and ends failed as cancelled (heldStop), and the run fails with the
// premise's rejection once the decision is carried out. A run recorded before
// changePremiseHold runs its steps on to their end.

// unitGate is whether a step in flight starts its next unit now, with the
// decisions the run took and has not carried out yet (answers). It asks
// the version only when a premise holds, so that a run with none records
// no marker.
func (r *wrun) unitGate(ctx workflow.Context) sched.UnitGate {
	g := r.m.Units(r.premiseDecided, r.premiseRejected)
	if g == sched.UnitsGo || version(ctx, changePremiseHold) == workflow.DefaultVersion {
		return sched.UnitsGo
	}
	return g
}

// awaitUnits waits while a premise holds the units (UnitsWait) and
// returns what follows: UnitsGo or UnitsStop. A cancelled workflow stops
// them too, with the cancellation.
func (r *wrun) awaitUnits(ctx workflow.Context) (sched.UnitGate, *failure) {
	var g sched.UnitGate
	r.awaiting++
	err := workflow.Await(ctx, func() bool {
		g = r.m.Units(r.premiseDecided, r.premiseRejected)
		return g != sched.UnitsWait
	})
	r.awaiting--
	if err != nil {
		return sched.UnitsStop, &failure{Class: string(fault.Cancelled), Message: err.Error()}
	}
	return g, nil
}

// holdGate is unitGate, waiting while it is UnitsWait and more would start
// (more): a step with nothing left to start, or units in flight to settle
// first, does not wait here.
func (r *wrun) holdGate(ctx workflow.Context, more bool) (sched.UnitGate, *failure) {
	g := r.unitGate(ctx)
	if g != sched.UnitsWait || !more {
		return g, nil
	}
	return r.awaitUnits(ctx)
}

func (r *wrun) premiseDecided(i int) bool { return r.answers[i] != nil }

func (r *wrun) premiseRejected(i int) bool {
	a := r.answers[i]
	return a != nil && a.a.Status == store.ApprovalRejected
}

// heldStop is the outcome of step i stopped by a rejected premise before
// its remaining units: failed, as a local run ends the steps it has in
// flight when it fails ("cancelled: the run stopped because step X
// failed"), without failing the run itself: the rejection does, with the
// premise's error, once it is carried out (endHeld).
func (r *wrun) heldStop(i, attempts int) outcome {
	var ids []string
	for _, p := range r.m.Premises() {
		if r.premiseRejected(p.Step) {
			ids = append(ids, p.ID)
		}
	}
	msg := fmt.Sprintf("cancelled: the run stopped because step %s failed", strings.Join(ids, ", "))
	return outcome{i: i, status: journal.StepFailed, attempts: attempts, lastErr: msg}
}

// nextUnit is f's next unit (fan.Fan.Next) when gate lets one start.
func nextUnit(gate sched.UnitGate, f *fan.Fan, inFlight int) (fan.Unit, bool) {
	if gate != sched.UnitsGo {
		return fan.Unit{}, false
	}
	return f.Next(inFlight)
}

// endHeld settles the steps a rejected premise stopped (stoppedHeld) as
// failed once the run failed: not before, since a failed step stops the
// machine, which would then never carry the rejection out.
func (r *wrun) endHeld() {
	if r.failure == nil || len(r.stoppedHeld) == 0 {
		return
	}
	for _, o := range r.stoppedHeld {
		r.errs[r.f.Steps[o.i].ID] = o.lastErr
		r.m.Settle(o.i, journal.StepFailed, o.attempts, "")
	}
	r.stoppedHeld = nil
}

// shownStatus is the run's status as the status query shows it: waiting,
// not running, while every step in flight waits on a premise (awaitUnits)
// — as a local run is waiting once nothing is in flight — so that a
// follower (Follow, rein run --temporal) sees the run wait for a person.
// The status search attribute is not changed for it.
func (r *wrun) shownStatus() journal.RunStatus {
	if r.status != journal.RunRunning || r.awaiting == 0 {
		return r.status
	}
	running := 0
	for i := range r.f.Steps {
		if r.m.Status(i) == journal.StepRunning {
			running++
		}
	}
	if r.awaiting < running {
		return r.status
	}
	return journal.RunWaiting
}
