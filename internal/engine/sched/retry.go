package sched

import "github.com/reinhq/rein/journal"

// Retried re-opens a failed run (journal.RunRetried): it is pending again
// and no longer stopped, so the steps Reopen put back start again.
func (m *Machine) Retried() {
	m.run, m.stopped = journal.RunPending, false
}

// Reopen puts settled step i back to pending (journal.StepReopened), at
// the attempt it had (its next start is attempt+1) and without its output.
func (m *Machine) Reopen(i, attempts int) {
	m.status[i], m.attempts[i], m.sha[i] = journal.StepPending, attempts, ""
	m.Decided(i)
}
