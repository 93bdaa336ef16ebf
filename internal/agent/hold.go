package agent

import "errors"

// ErrHeld is Run's error when Config.Held reported the run held (a
// failed premise elsewhere in the run pauses it until a person decides)
// before a further turn or call started: no model call was asked, the
// calls in flight finished and were committed, and the calls of the turn
// not started were committed chosen with Reason HeldReason. The Session
// holds every turn committed so far; a Run of it continues where it
// stopped: a call held so starts as one never started (not in doubt).
var ErrHeld = errors.New("agent: held: a failed premise pauses the run; no further turn or call starts until a person decides it")

// HeldReason is the Reason of a chosen call a hold kept from starting
// (ErrHeld). Such a call never ran: a later Run dispatches it (commits
// it chosen without the reason) and runs it, whatever its tool.
const HeldReason = "held: a failed premise paused the run before this call started"

// WithHeld returns a Loop like l whose Config.Held is held (nil: never
// held). Cheap: nothing is compiled again.
func (l *Loop) WithHeld(held func() bool) *Loop {
	c := *l
	c.cfg.Held = held
	return &c
}

// held reports whether the loop starts no further turn or call now.
func (l *Loop) held() bool {
	return l.cfg.Held != nil && l.cfg.Held()
}
