package runs

import (
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/trace"
)

// Failure is one failed attempt of a step, from its attempt_failed event:
// the error, its class and its cause chain (the errors it wraps, a tool's
// stderr tail, a provider's error body; bounded and redacted when it was
// recorded).
type Failure struct {
	StepID  string          `json:"step_id"`
	Attempt int             `json:"attempt"`
	Class   string          `json:"class"`
	Error   string          `json:"error"`
	Chain   []journal.Cause `json:"chain,omitempty"`
}

// failures lists the failed attempts in events, in journal order: of
// step step, or of every step when step is "".
func failures(events []*trace.Event, step string) []Failure {
	var out []Failure
	for _, e := range events {
		if e.Kind != trace.AttemptFailed || step != "" && e.StepID != step {
			continue
		}
		out = append(out, Failure{StepID: e.StepID, Attempt: e.Attempt, Class: e.ErrorClass, Error: e.Error, Chain: e.Chain})
	}
	return out
}
