package engine

import (
	"fmt"
	"slices"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// machine holds the scheduler's decisions about one run as a deterministic
// state machine: each step's status, attempt and output digest, which steps
// wait on which, the ready queue (in file order, released in settlement
// order), the approvals the run waits on, and the run's status. It does no
// I/O, reads no clock, starts no goroutine and ranges over no map.
//
// Three drivers feed it the same transitions: the live scheduler (run), as
// it starts, settles and parks steps; a resume, from the store's step rows;
// and apply, from a stored journal (the replay tests over
// testdata/replay, and later a workflow engine's history). What a journal
// means is thus decided once.
type machine struct {
	f        *flow.Flow
	status   []trace.StepStatus
	attempts []int
	sha      []string
	// waiting counts each step's requires not yet settled.
	waiting []int
	ready   []int
	// pending are the approvals the run waits on, in the order asked.
	pending []pendingApproval
	run     trace.RunStatus
	// stopped: the run failed (a step failed, or stop was called), so
	// nothing more starts.
	stopped bool
}

// pendingApproval is a step parked for a person.
type pendingApproval struct {
	step int
	kind store.ApprovalKind
}

// reset makes m the machine of a run of f that has not started, reusing
// m's buffers.
func (m *machine) reset(f *flow.Flow) {
	n := len(f.Steps)
	m.f, m.run, m.stopped = f, "", false
	if cap(m.status) < n {
		m.status, m.attempts, m.sha, m.waiting, m.ready = make([]trace.StepStatus, n), make([]int, n), make([]string, n), make([]int, n), make([]int, 0, n)
	} else {
		m.status, m.attempts, m.sha, m.waiting, m.ready = m.status[:n], m.attempts[:n], m.sha[:n], m.waiting[:n], m.ready[:0]
		clear(m.attempts)
		clear(m.sha)
	}
	m.pending = m.pending[:0]
	for i, s := range f.Steps {
		m.status[i] = trace.StepPending
		m.waiting[i] = len(s.RequireIdx)
	}
}

// seed makes the ready queue, in the flow's order, every pending step
// whose requires all released it: a run's first steps, or a resumed run's
// next ones.
func (m *machine) seed() {
	m.ready = m.ready[:0]
	for _, i := range m.f.Order {
		if m.waiting[i] == 0 && m.status[i] == trace.StepPending {
			m.ready = append(m.ready, i)
		}
	}
}

// command is what the machine asks of whoever drives it.
type command int

const (
	startStep    command = iota // dispatch the step decide returned
	awaitOutcome                // wait for a step in flight to report (settle, park)
	finishRun                   // nothing runs and nothing can start: settle the run (runOutcome)
)

// decide says what the driver does next, with inFlight steps running:
// start the first ready step (taking it off the queue), wait for an
// outcome, or finish the run.
func (m *machine) decide(inFlight int) (command, int) {
	if m.canStart(inFlight) {
		i, _ := m.next()
		return startStep, i
	}
	if inFlight > 0 {
		return awaitOutcome, -1
	}
	return finishRun, -1
}

// canStart reports whether another step may be dispatched while inFlight
// are running: one is ready, the run has not stopped, and the flow's
// concurrency leaves room.
func (m *machine) canStart(inFlight int) bool {
	return len(m.ready) > 0 && !m.stopped && inFlight < m.f.Concurrency
}

// stop records that the run failed: nothing more starts.
func (m *machine) stop() { m.stopped = true }

// next takes the first ready step, if any.
func (m *machine) next() (int, bool) {
	if len(m.ready) == 0 {
		return 0, false
	}
	i := m.ready[0]
	m.ready = m.ready[1:]
	return i, true
}

// skippedUpstream names the step whose skip skips step i (a step of
// s.SkipFrom that was skipped: explicit requires and steps whose output i
// reads, never the implicit order of a plain list), or "".
func (m *machine) skippedUpstream(i int) string {
	for _, j := range m.f.Steps[i].SkipFrom {
		if m.status[j] == trace.StepSkipped {
			return m.f.Steps[j].ID
		}
	}
	return ""
}

// start marks step i running at attempt n.
func (m *machine) start(i, n int) {
	m.status[i], m.attempts[i] = trace.StepRunning, n
}

// unstart puts back a step whose start was never committed: it never ran.
func (m *machine) unstart(i int) { m.status[i] = trace.StepPending }

// settle gives step i its final status. A step that produced an output,
// or was skipped, releases the steps that require it; a failed one
// releases nothing and stops the run.
func (m *machine) settle(i int, status trace.StepStatus, attempts int, sha string) {
	m.status[i], m.attempts[i], m.sha[i] = status, attempts, sha
	m.decided(i)
	if releases(status) {
		m.release(i)
	} else {
		m.stopped = true
	}
}

// release marks downstream steps whose requires are all settled as ready.
func (m *machine) release(i int) {
	for _, j := range m.f.Steps[i].Downstream {
		m.waiting[j]--
		if m.waiting[j] == 0 {
			m.ready = append(m.ready, j)
		}
	}
}

// park makes step i wait for a person.
func (m *machine) park(i int, kind store.ApprovalKind, attempts int) {
	m.status[i], m.attempts[i] = trace.StepWaiting, attempts
	if kind == store.KindUnknown {
		m.status[i] = trace.StepUnknown
	}
	m.pending = append(m.pending, pendingApproval{step: i, kind: kind})
}

// decided drops step i's approval from those the run waits on.
func (m *machine) decided(i int) {
	m.pending = slices.DeleteFunc(m.pending, func(p pendingApproval) bool { return p.step == i })
}

// settleRun gives the run its status; a run that settles closes the
// approvals it waited on (store.Store.Commit).
func (m *machine) settleRun(status trace.RunStatus) {
	m.run = status
	if status != trace.RunWaiting && status != trace.RunRunning {
		m.pending = m.pending[:0]
	}
	if status == trace.RunFailed || status == trace.RunCancelled {
		m.stopped = true
	}
}

// apply feeds one journal event to the machine: the transition the live
// scheduler made when it recorded that event. Events that change no
// decision (model calls, gate decisions, plan events…) are ignored.
func (m *machine) apply(ev *trace.Event) error {
	i := -1
	if ev.StepID != "" {
		s := m.f.StepByID(ev.StepID)
		if s == nil {
			switch ev.Kind {
			case trace.StepStarted, trace.StepSettled, trace.AttemptFailed, trace.ApprovalRequested, trace.ApprovalDecided:
				return fmt.Errorf("event %d (%s) names step %s, which flow %s does not have", ev.Seq, ev.Kind, ev.StepID, m.f.Name)
			}
		} else {
			i = s.Index
		}
	}
	switch ev.Kind {
	case trace.RunStarted, trace.RunResumed:
		m.settleRun(trace.RunRunning)
	case trace.RunSettled:
		m.settleRun(trace.RunStatus(ev.Status))
	case trace.RunParked:
		m.settleRun(trace.RunWaiting)
	case trace.StepStarted:
		m.start(i, ev.Attempt)
	case trace.AttemptFailed:
		// an item's or a round's attempt; the step's is the highest.
		if i >= 0 && m.status[i] == trace.StepRunning {
			m.attempts[i] = max(m.attempts[i], ev.Attempt)
		}
	case trace.StepSettled:
		m.settle(i, trace.StepStatus(ev.Status), ev.Attempt, ev.OutputSHA)
	case trace.ApprovalRequested:
		m.park(i, store.ApprovalKind(ev.Decision), ev.Attempt)
	case trace.ApprovalDecided:
		m.decided(i)
	}
	return nil
}

// restore sets step i as a resumed run's rows say, without releasing
// anything: recount then works out what waits, and seed what is ready.
func (m *machine) restore(i int, status trace.StepStatus, attempts int, sha string) {
	m.status[i], m.attempts[i], m.sha[i] = status, attempts, sha
	if status == trace.StepFailed || status == trace.StepBlocked {
		m.stopped = true
	}
}

// recount counts, for every step, the requires that have not released it
// (as settle does: a failed step releases nothing).
func (m *machine) recount() {
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

// releases reports whether a step with status st lets the steps that
// require it run: it produced an output, or was skipped.
func releases(st trace.StepStatus) bool {
	return st == trace.StepSkipped || hasOutput(st)
}
