package journal

import "github.com/reinhq/rein/redact"

// Redact hides the secrets red knows in e's text: its error, decision,
// preview (and the start of one its cut left: redact.Redactor.Cut) and
// data (an agent's call and observation, a gate's basis, an effect, a
// review's claims, a remediation). Whoever records an event calls it
// before the event reaches a sink or a journal.
func (e *Event) Redact(red *redact.Redactor) {
	e.Error = red.String(e.Error)
	e.Decision = red.String(e.Decision)
	e.Preview = red.Cut(e.Preview)
	e.Data = red.String(e.Data)
}
