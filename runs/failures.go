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

// PremiseFailure is a failed premise that paused the run at a step: the
// approval it asked (kind premise), from its approval_requested event.
type PremiseFailure struct {
	// StepID is the step that waits (an agent step's, for one of its
	// calls).
	StepID  string `json:"step_id"`
	Attempt int    `json:"attempt"`
	// Error names the premise, its claim and check, and the remediation
	// on offer.
	Error string `json:"error"`
}

// premiseFailures lists the failed premises of step step in events, in
// journal order.
func premiseFailures(events []*trace.Event, step string) []PremiseFailure {
	var out []PremiseFailure
	for _, e := range events {
		if e.Kind != trace.ApprovalRequested || e.Decision != "premise" || step != "" && e.StepID != step {
			continue
		}
		out = append(out, PremiseFailure{StepID: e.StepID, Attempt: e.Attempt, Error: e.Error})
	}
	return out
}
