package agent

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
)

// One durable unit at a time: a driver that records each unit of the loop
// before the next begins (the Temporal workflow, package
// github.com/reinhq/rein/temporal) holds the Session itself and asks Next
// what comes next, then has a worker carry out each unit with Step: the
// model's next turn (one model call, committed with its calls chosen, none
// run), or one call of the last turn. The decisions stay the loop's: which
// calls run, budgets, stop conditions, approvals, the rule for a call found
// in doubt (settle, reconcile), so there is no second copy of them.

// StatusStepped is the Result of a Step that carried out its unit and has
// more to do: the driver asks Next again.
const StatusStepped Status = "stepped"

// Unit is one unit of Step.
type Unit struct {
	// Call, from 1, settles call Call of the last turn, and nothing else:
	// runs it (with its approval when a person approved it), applies a
	// person's reject or settle, or reports it waiting. 0 asks the model
	// for the next turn (the first one checks the task's guardrails), or,
	// when the last turn is final, says whether its answer is accepted.
	Call int
	// Lost says an earlier try of this very unit lost its worker: a call
	// it may have dispatched is in doubt, and the rule for calls found in
	// doubt after a crash applies (run again only when its tool is safe to
	// repeat, else its tool's check: decides, else a person). A call a
	// person had approved counts as dispatched with that approval.
	Lost bool
}

// Next is what a Session needs next (NextUnits).
type Next struct {
	// Calls are the calls of the last turn that need a unit each (Unit.Call):
	// chosen, waiting or unknown. They may run concurrently.
	Calls []int
	// Turn is true when no call is open: the next unit is Unit{} (the
	// model's next turn, or the final answer's acceptance).
	Turn bool
}

// NextUnits says what s needs next. It reads s only, so a workflow can
// call it in its own (deterministic) code.
func NextUnits(s *Session) Next {
	if n := len(s.Turns); n > 0 && !s.Turns[n-1].Final {
		var open []int
		for _, c := range s.Turns[n-1].Calls {
			if c.Status.open() {
				open = append(open, c.Index)
			}
		}
		if len(open) > 0 {
			return Next{Calls: open}
		}
	}
	return Next{Turn: true}
}

// open reports whether a call with status st has not settled.
func (st CallStatus) open() bool {
	return st == StatusChosen || st == StatusWaiting || st == StatusUnknown
}

// Step carries out one unit of s (see Unit) with the same code as Run, and
// returns: StatusStepped when the unit is done and more follows,
// StatusPaused with the Pending of a call (or a guardrail) that waits for a
// person, StatusAnswered with the answer. A turn unit asked while the last
// turn has open calls is an error (the driver's): those calls settle
// first, each in its own unit.
func (l *Loop) Step(ctx context.Context, s *Session, u Unit) (*Result, error) {
	if n := len(s.Turns); n > 0 {
		last := &s.Turns[n-1]
		if u.Call == 0 && !last.Final {
			for _, c := range last.Calls {
				if c.Status.open() {
					return &Result{Usage: UsageOf(s)}, fault.Errorf(fault.Business, "agent: turn %d: call %d has not settled; settle each open call (Unit.Call) before the next turn", last.N, c.Index)
				}
			}
		}
		if u.Call > 0 && (last.Final || u.Call > len(last.Calls)) {
			return &Result{Usage: UsageOf(s)}, fault.Errorf(fault.Business, "agent: turn %d has no call %d to settle", last.N, u.Call)
		}
	} else if u.Call > 0 {
		return &Result{}, fault.Errorf(fault.Business, "agent: no turn was taken: there is no call %d to settle", u.Call)
	}
	c := *l
	c.unit = &u
	return c.Run(ctx, s)
}

// lostDispatch makes c, a call a person decided (approve) whose unit lost
// its worker, what the dispatch of that decision committed before it ran:
// chosen, with the approval used (a plan's or a sub-agent's call: chosen,
// its approvals unknown to the driver, so a person decides again unless
// its tool is safe to repeat). It reports whether it did.
func (l *Loop) lostDispatch(t *Turn, c *Call, d Decision, decided bool) bool {
	if l.unit == nil || !l.unit.Lost || !decided || d.Verdict != Approve || (c.Status != StatusWaiting && c.Status != StatusUnknown) {
		return false
	}
	c.Status = StatusChosen
	if c.Plan == nil && c.Sub == nil {
		c.Consumed = append(c.Consumed, Consumed{ID: d.ID, Ref: Ref(t.N, c.Index)})
	}
	c.Reason = fmt.Sprintf("its worker was lost while %s, approved by a person, may have been running", c.Tool)
	return true
}
