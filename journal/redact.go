package journal

import "github.com/reinhq/rein/redact"

// Redact hides the secrets red knows in e's text: its error, decision,
// preview (and the start of one its cut left: redact.Redactor.Cut) and
// data (a gate's basis, an effect, a review's claims), its call record,
// its remediation record, its agent turn and its cause chain. Whoever records an event calls it
// before the event reaches a sink or a journal.
func (e *Event) Redact(red *redact.Redactor) {
	e.Error = red.String(e.Error)
	e.Decision = red.String(e.Decision)
	e.Preview = red.Cut(e.Preview)
	e.Data = red.String(e.Data)
	if c := e.Call; c != nil {
		c.redact(red)
	}
	if m := e.Remediation; m != nil {
		e.Remediation = m.redacted(red)
	}
	if t := e.AgentTurn; t != nil {
		t.redact(red)
	}
	e.Chain = redactChain(red, e.Chain)
}

// redactChain is l with the secrets red knows hidden in each link's
// message (a cut one as Redactor.Cut does) and detail; l itself when none
// changed.
func redactChain(red *redact.Redactor, l []Cause) []Cause {
	var out []Cause
	for i, c := range l {
		m, d := red.Cut(c.Message), red.String(c.Detail)
		if m == c.Message && d == c.Detail {
			continue
		}
		if out == nil {
			out = append([]Cause(nil), l...)
		}
		out[i].Message, out[i].Detail = m, d
	}
	if out == nil {
		return l
	}
	return out
}

// redacted is m with the secrets red knows hidden in its text: the
// compensation's args and error, the resources, the person's comment,
// the reason and the error. m itself is left as it is (its recorder may
// keep it).
func (m *Remediation) redacted(red *redact.Redactor) *Remediation {
	r := *m
	r.Comment, r.Error, r.Reason = red.String(r.Comment), red.String(r.Error), red.String(r.Reason)
	r.Touched, r.Invalid = redactAll(red, r.Touched), redactAll(red, r.Invalid)
	if c := r.Call; c != nil {
		cc := *c
		cc.Args, cc.Error = red.Bytes(cc.Args), red.String(cc.Error)
		r.Call = &cc
	}
	return &r
}

// redactAll is l with each entry redacted, l itself when none changed.
func redactAll(red *redact.Redactor, l []string) []string {
	var out []string
	for i, s := range l {
		if h := red.String(s); h != s {
			if out == nil {
				out = append([]string(nil), l...)
			}
			out[i] = h
		}
	}
	if out == nil {
		return l
	}
	return out
}

// redact hides the secrets red knows in c's text: its output, error, the
// gate's reasons and bases, the compensation's args, and what an agent's
// call keeps (args, observation, reason and its records). A changed
// payload is a copy; the record itself is changed in place (its recorder
// made it for this event).
func (c *Call) redact(red *redact.Redactor) {
	c.Output, c.Error = red.Bytes(c.Output), red.String(c.Error)
	for i := range c.Gate {
		g := &c.Gate[i]
		g.Why, g.Basis = red.String(g.Why), red.Bytes(g.Basis)
	}
	if x := c.Effect; x != nil && x.Compensation != nil {
		comp := *x.Compensation
		comp.Args, comp.Error = red.Bytes(comp.Args), red.String(comp.Error)
		x.Compensation = &comp
	}
	if a := c.Agent; a != nil {
		a.Args, a.Observation, a.Reason = red.String(a.Args), red.String(a.Observation), red.String(a.Reason)
		a.Plan, a.PlanRun, a.Declaration, a.Claims, a.Verified = red.Bytes(a.Plan), red.Bytes(a.PlanRun), red.Bytes(a.Declaration), red.Bytes(a.Claims), red.Bytes(a.Verified)
	}
}
