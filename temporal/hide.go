package temporal

import (
	"encoding/json"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/reinhq/rein/project"
)

// hide is what an activity hands back to its workflow, and so writes into
// the run's history, with the flow's secrets hidden by the flow's one
// Redactor (the engine's, which hides them from a local run's journal):
// always the failure's message and detail (as a local journal records
// errors redacted), and the result too unless the worker's data converter
// seals every payload (Activities.Sealed: rein.yaml encryption:). Without
// a key a later step so reads [REDACTED] where a live local run would
// have read the value, as a local run resumed without a key does.
func (a *Activities) hide(e *entry, out *attemptOut, err error) (*attemptOut, error) {
	red := e.p.Redactor()
	if err != nil {
		return out, hideError(red.String, err)
	}
	if a.Sealed || out == nil {
		return out, nil
	}
	raw, merr := json.Marshal(out)
	if merr != nil {
		return nil, toApplicationError(merr)
	}
	hidden := red.Bytes(raw)
	if len(hidden) == len(raw) && string(hidden) == string(raw) {
		return out, nil
	}
	var back attemptOut
	if uerr := json.Unmarshal(hidden, &back); uerr != nil {
		return nil, hideError(red.String, toApplicationError(uerr))
	}
	return &back, nil
}

// hideError is an activity's error with its message and detail hidden by
// hide. The error an ApplicationError wraps (its cause) would travel in
// clear in the history: it is dropped, the workflow reads only the type,
// the message and the detail (failureOf).
func hideError(hideText func(string) string, err error) error {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return temporal.NewNonRetryableApplicationError(hideText(err.Error()), "", nil)
	}
	msg := hideText(ae.Message())
	var d failure
	if ae.HasDetails() && ae.Details(&d) == nil && d.Class != "" {
		d.Message = hideText(d.Message)
		if raw, jerr := json.Marshal(d.Effects); jerr == nil && len(d.Effects) > 0 {
			var effs = d.Effects[:0:0]
			if json.Unmarshal([]byte(hideText(string(raw))), &effs) == nil {
				d.Effects = effs
			}
		}
		if ae.NonRetryable() {
			return temporal.NewNonRetryableApplicationError(msg, ae.Type(), nil, d)
		}
		return temporal.NewApplicationError(msg, ae.Type(), d)
	}
	if ae.NonRetryable() {
		return temporal.NewNonRetryableApplicationError(msg, ae.Type(), nil)
	}
	return temporal.NewApplicationError(msg, ae.Type())
}

// hideInput is a run's input as its history holds it: with p's secrets
// hidden (its steps read [REDACTED] in their place, as a local run
// resumed without a key does), unless p's rein.yaml names an encryption
// key, with which its client seals every payload.
func hideInput(p *project.Project, raw []byte) []byte {
	if p.Codec() != nil {
		return raw
	}
	return p.Redactor().Bytes(raw)
}

// hideWork is what hides an attempt's heartbeat details (lostWork: effect
// records, a plan's progress with its steps' outputs), which the server
// keeps and writes into the history when the attempt's worker is lost:
// the flow's secrets hidden as in hide, unless the worker seals every
// payload.
func (a *Activities) hideWork(e *entry) func(lostWork) lostWork {
	if a.Sealed {
		return func(w lostWork) lostWork { return w }
	}
	red := e.p.Redactor()
	return func(w lostWork) lostWork {
		raw, err := json.Marshal(w)
		if err != nil {
			return lostWork{} // nothing rather than what could not be hidden
		}
		hidden := red.Bytes(raw)
		if string(hidden) == string(raw) {
			return w
		}
		var back lostWork
		if json.Unmarshal(hidden, &back) != nil {
			return lostWork{}
		}
		return back
	}
}
