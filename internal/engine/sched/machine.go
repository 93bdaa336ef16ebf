package sched

import (
	"slices"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// Machine holds the scheduler's state of one run: each step's status,
// attempt and output digest, which steps wait on which, the ready queue
// (in file order, released in settlement order), the approvals the run
// waits on, and the run's status. The zero Machine is ready for Reset.
type Machine struct {
	f        *flow.Flow
	runID    string
	status   []journal.StepStatus
	attempts []int
	sha      []string
	// waiting counts each step's requires not yet settled.
	waiting []int
	ready   []int
	pending []Pending
	run     journal.RunStatus
	// stopped: the run failed (a step failed, or Stop was called), so
	// nothing more starts.
	stopped bool
}

// Pending is an approval the run waits on.
type Pending struct {
	// Step is the index of the step that waits.
	Step int
	// ID is the approval's step id: the step's, or "step/ref" for one
	// call of an agent step.
	ID   string
	Kind store.ApprovalKind
}

// New returns the machine of a run of f (with id runID) that has not
// started; call Seed to queue its first steps.
func New(f *flow.Flow, runID string) *Machine {
	m := new(Machine)
	m.Reset(f, runID)
	return m
}

// Reset makes m the machine of a run of f that has not started, reusing
// m's buffers.
func (m *Machine) Reset(f *flow.Flow, runID string) {
	n := len(f.Steps)
	m.f, m.runID, m.run, m.stopped = f, runID, "", false
	if cap(m.status) < n {
		m.status, m.attempts, m.sha, m.waiting, m.ready = make([]journal.StepStatus, n), make([]int, n), make([]string, n), make([]int, n), make([]int, 0, n)
	} else {
		m.status, m.attempts, m.sha, m.waiting, m.ready = m.status[:n], m.attempts[:n], m.sha[:n], m.waiting[:n], m.ready[:0]
		clear(m.attempts)
		clear(m.sha)
	}
	m.pending = m.pending[:0]
	for i, s := range f.Steps {
		m.status[i] = journal.StepPending
		m.waiting[i] = len(s.RequireIdx)
	}
}

// Flow is the flow m schedules.
func (m *Machine) Flow() *flow.Flow { return m.f }

// Seed makes the ready queue, in the flow's order, every pending step
// whose requires all released it: a run's first steps, or a resumed run's
// next ones.
func (m *Machine) Seed() {
	m.ready = m.ready[:0]
	for _, i := range m.f.Order {
		if m.waiting[i] == 0 && m.status[i] == journal.StepPending {
			m.ready = append(m.ready, i)
		}
	}
}

// Op is what a Command asks of the driver.
type Op int

// The commands Next gives.
const (
	// Start: admit step Command.Step (Admit), then start its first
	// attempt (Start) or settle it as Admit says. It is off the queue.
	Start Op = iota
	// Await: wait for a step in flight to report (Settle, Park).
	Await
	// Finish: nothing runs and nothing can start: settle the run with
	// Outcome.
	Finish
)

// Command is what the driver does next.
type Command struct {
	Op   Op
	Step int // the step to start (Op Start)
}

// Next says what the driver does next with inFlight steps running: start
// the first ready step (taking it off the queue), wait for an outcome, or
// finish the run.
func (m *Machine) Next(inFlight int) Command {
	if m.CanStart(inFlight) {
		i := m.ready[0]
		m.ready = m.ready[1:]
		return Command{Op: Start, Step: i}
	}
	if inFlight > 0 {
		return Command{Op: Await, Step: -1}
	}
	return Command{Op: Finish, Step: -1}
}

// CanStart reports whether another step may be dispatched while inFlight
// are running: one is ready, the run has not stopped, no failed premise
// holds it (Held), and the flow's concurrency leaves room.
func (m *Machine) CanStart(inFlight int) bool {
	return len(m.ready) > 0 && !m.stopped && inFlight < m.f.Concurrency && !m.Held()
}

// Held reports whether a failed premise pauses the run: a step (or one
// call of an agent step) waits on a store.KindPremise approval. Until a
// person decides it (Decided, Requeue) no step that has not started is
// dispatched, whether it depends on the premise's step or not; steps in
// flight finish the units they have in flight (the driver starts no
// further for_each item or repeat round of theirs, and may leave such a
// step running, unsettled, for a resume to continue). A paused run with
// nothing in flight finishes waiting (Outcome).
func (m *Machine) Held() bool {
	for _, p := range m.pending {
		if p.Kind == store.KindPremise {
			return true
		}
	}
	return false
}

// Premises lists the approvals of failed premises the run is paused on
// (Held), in the order asked.
func (m *Machine) Premises() []Pending {
	var out []Pending
	for _, p := range m.pending {
		if p.Kind == store.KindPremise {
			out = append(out, p)
		}
	}
	return out
}

// Ready is how many steps wait in the ready queue.
func (m *Machine) Ready() int { return len(m.ready) }

// Stop records that the run failed: nothing more starts.
func (m *Machine) Stop() { m.stopped = true }

// Stopped reports whether the run failed, so that nothing more starts.
func (m *Machine) Stopped() bool { return m.stopped }

// Status is step i's status.
func (m *Machine) Status(i int) journal.StepStatus { return m.status[i] }

// Attempts is step i's attempt: the one running, or the last made.
func (m *Machine) Attempts(i int) int { return m.attempts[i] }

// OutputSHA is the digest of settled step i's output.
func (m *Machine) OutputSHA(i int) string { return m.sha[i] }

// Run is the run's status ("" before it started).
func (m *Machine) Run() journal.RunStatus { return m.run }

// Pending lists the approvals the run waits on, in the order asked. The
// slice is m's: read it before the next transition.
func (m *Machine) Pending() []Pending { return m.pending }

// Start marks step i running at attempt n. A step that starts waits on
// nobody: its approvals were answered.
func (m *Machine) Start(i, n int) {
	m.status[i], m.attempts[i] = journal.StepRunning, n
	if len(m.pending) > 0 {
		m.Decided(i)
	}
}

// Unstart puts back a step whose start was never committed: it never ran.
func (m *Machine) Unstart(i int) { m.status[i] = journal.StepPending }

// Settle gives step i its final status. A step that produced an output,
// or was skipped, releases the steps that require it; a failed one
// releases nothing and stops the run.
func (m *Machine) Settle(i int, status journal.StepStatus, attempts int, sha string) {
	m.status[i], m.attempts[i], m.sha[i] = status, attempts, sha
	if len(m.pending) > 0 {
		m.Decided(i)
	}
	if releases(status) {
		m.release(i)
	} else {
		m.stopped = true
	}
}

// release marks downstream steps whose requires are all settled as ready.
func (m *Machine) release(i int) {
	for _, j := range m.f.Steps[i].Downstream {
		m.waiting[j]--
		if m.waiting[j] == 0 {
			m.ready = append(m.ready, j)
		}
	}
}

// Park makes step i wait for a person (an approval of kind, at attempt
// attempts); KindUnknown marks the step unknown.
func (m *Machine) Park(i int, kind store.ApprovalKind, attempts int) {
	m.ParkCall(i, m.f.Steps[i].ID, kind, attempts)
}

// ParkCall makes step i wait for a person's answer to approval id (one
// call of an agent step: "step/ref"). A step may wait on several; one
// whose calls wait is waiting, whatever their kind.
func (m *Machine) ParkCall(i int, id string, kind store.ApprovalKind, attempts int) {
	m.status[i], m.attempts[i] = journal.StepWaiting, attempts
	if kind == store.KindUnknown && id == m.f.Steps[i].ID {
		m.status[i] = journal.StepUnknown
	}
	m.pending = append(m.pending, Pending{Step: i, ID: id, Kind: kind})
}

// Decided drops step i's approvals from those the run waits on.
func (m *Machine) Decided(i int) {
	m.pending = slices.DeleteFunc(m.pending, func(p Pending) bool { return p.Step == i })
}

// Requeue puts step i, which waited (in flight when its process died, or
// parked and since answered), back to pending, so that Seed queues it
// once its requires released it.
func (m *Machine) Requeue(i int) {
	m.status[i] = journal.StepPending
	m.Decided(i)
}

// SettleRun gives the run its status; a run that settles closes the
// approvals it waited on (store.Store.Commit).
func (m *Machine) SettleRun(status journal.RunStatus) {
	m.run = status
	if status != journal.RunWaiting && status != journal.RunRunning {
		m.pending = m.pending[:0]
	}
	if status == journal.RunFailed || status == journal.RunCancelled {
		m.stopped = true
	}
}

// Restore sets step i to a status read from elsewhere than a journal,
// without releasing anything: Recount then works out what waits, and Seed
// what is ready.
func (m *Machine) Restore(i int, status journal.StepStatus, attempts int, sha string) {
	m.status[i], m.attempts[i], m.sha[i] = status, attempts, sha
	if status == journal.StepFailed || status == journal.StepBlocked {
		m.stopped = true
	}
}

// Recount counts, for every step, the requires that have not released it
// (as Settle does: a failed step releases nothing).
func (m *Machine) Recount() {
	for i, s := range m.f.Steps {
		n := 0
		for _, k := range s.RequireIdx {
			if !releases(m.status[k]) {
				n++
			}
		}
		m.waiting[i] = n
	}
}

// Waiting is how many of step i's requires have not released it.
func (m *Machine) Waiting(i int) int { return m.waiting[i] }

// releases reports whether a step with status st lets the steps that
// require it run: it produced an output, or was skipped.
func releases(st journal.StepStatus) bool {
	return st == journal.StepSkipped || HasOutput(st)
}

// HasOutput reports whether a step with status st has an output.
func HasOutput(st journal.StepStatus) bool {
	return st == journal.StepSucceeded || st == journal.StepDefaulted || st == journal.StepFellBack
}
