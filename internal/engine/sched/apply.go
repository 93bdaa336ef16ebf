package sched

import (
	"fmt"
	"strings"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// Apply feeds one journal event to the machine: the transition the driver
// made when it recorded that event. Events that change no decision (model
// calls, gate decisions, plan events…) are ignored. An event naming a step
// the flow does not have is an error naming both.
func (m *Machine) Apply(ev *journal.Event) error {
	i := -1
	if ev.StepID != "" {
		id := ev.StepID
		if ev.Kind == journal.ApprovalRequested {
			// one call of an agent step waits: "step/ref".
			if k := strings.IndexByte(id, '/'); k > 0 {
				id = id[:k]
			}
		}
		s := m.f.StepByID(id)
		if s == nil {
			switch ev.Kind {
			case journal.StepStarted, journal.StepSettled, journal.AttemptFailed, journal.ApprovalRequested, journal.ApprovalDecided, journal.StepReopened:
				return fmt.Errorf("event %d (%s) names step %s, which flow %s does not have", ev.Seq, ev.Kind, ev.StepID, m.f.Name)
			}
		} else {
			i = s.Index
		}
	}
	switch ev.Kind {
	case journal.RunStarted, journal.RunResumed:
		m.SettleRun(journal.RunRunning)
	case journal.RunSettled:
		m.SettleRun(journal.RunStatus(ev.Status))
	case journal.RunParked:
		m.SettleRun(journal.RunWaiting)
	case journal.StepStarted:
		m.Start(i, ev.Attempt)
	case journal.AttemptFailed:
		// an item's or a round's attempt; the step's is the highest.
		if i >= 0 && m.status[i] == journal.StepRunning {
			m.attempts[i] = max(m.attempts[i], ev.Attempt)
		}
	case journal.StepSettled:
		m.Settle(i, journal.StepStatus(ev.Status), ev.Attempt, ev.OutputSHA)
	case journal.ApprovalRequested:
		m.ParkCall(i, ev.StepID, store.ApprovalKind(ev.Decision), ev.Attempt)
	case journal.ApprovalDecided:
		m.Decided(i)
	case journal.RunRetried:
		m.Retried()
	case journal.StepReopened:
		if i >= 0 {
			m.Reopen(i, ev.Attempt)
		}
	}
	return nil
}

// Replay feeds a stored journal to m, in order (Apply), and queues what
// is ready to start next (Recount, Seed), as a resume needs it.
func (m *Machine) Replay(events []*journal.Event) error {
	for _, ev := range events {
		if err := m.Apply(ev); err != nil {
			return err
		}
	}
	m.Recount()
	m.Seed()
	return nil
}
