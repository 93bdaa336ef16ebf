package agent

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
)

// Guardrail is one check of the loop's input (the task, before the first
// model call) or output (the final answer, before it is accepted).
type Guardrail struct {
	Name string
	// Input: it checks the task; else the final answer.
	Input bool
	// Trips says why text (and v, its value: the answer's under an output
	// schema, else nil) trips the guardrail, "" when it passes; an error
	// (a check that cannot be decided) trips it too.
	Trips func(ctx context.Context, text string, v any) (string, error)
}

// GuardrailError is the loop's error when a guardrail trips: a
// fault.Guardrail error naming the guardrail, its side (input or output),
// the turn (0 for the input) and why. The answer that tripped an output
// guardrail is not accepted: the turn is not committed.
type GuardrailError struct {
	Name, Side string
	Turn       int
	Reason     string
}

func (e *GuardrailError) Error() string {
	if e.Side == "input" {
		return fmt.Sprintf("agent: input guardrail %s tripped on the task: %s", e.Name, e.Reason)
	}
	return fmt.Sprintf("agent: output guardrail %s tripped on the answer of turn %d: %s", e.Name, e.Turn, e.Reason)
}

// guard runs the guardrails of one side (input or not) over text and v,
// in order, and returns the first trip as a fault.Guardrail error.
func (l *Loop) guard(ctx context.Context, input bool, turn int, text string, v any) error {
	for i := range l.cfg.Guardrails {
		g := &l.cfg.Guardrails[i]
		if g.Input != input || g.Trips == nil {
			continue
		}
		reason, err := g.Trips(ctx, text, v)
		if err != nil {
			reason = fmt.Sprintf("its check could not be decided (%v), so it fails closed", err)
		}
		if reason != "" {
			side := "output"
			if input {
				side = "input"
			}
			return fault.New(fault.Guardrail, &GuardrailError{Name: g.Name, Side: side, Turn: turn, Reason: reason})
		}
	}
	return nil
}
