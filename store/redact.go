package store

import "github.com/reinhq/rein/redact"

// Redact hides the secrets red knows in what t stores besides its events
// (whoever records an event hides it with journal.Event.Redact, since
// sinks see it too): step outputs, inputs and errors, approvals' args, messages, outputs and comments,
// and the run's error and close reason. A payload it changes is replaced
// by a copy, never written into, so t may alias memory its caller still
// reads.
func (t *Transition) Redact(red *redact.Redactor) {
	for _, st := range t.Steps {
		st.Output, st.Input, st.Error = red.Bytes(st.Output), red.Bytes(st.Input), red.Bytes(st.Error)
	}
	for _, a := range t.Approvals {
		a.Args, a.Message, a.Output, a.Comment = red.Bytes(a.Args), red.String(a.Message), red.Bytes(a.Output), red.String(a.Comment)
	}
	if u := t.Run; u != nil {
		u.Error, u.Reason = red.Bytes(u.Error), red.String(u.Reason)
	}
	if c := t.Create; c != nil {
		c.Input = red.Bytes(c.Input)
	}
}
