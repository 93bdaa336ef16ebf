package tool

import (
	"context"
	"errors"
	"fmt"
)

// Premise is an assumption every result of a tool is checked against (a
// tool declaration's premise: {id, claim, check}): wherever the tool is
// called — a flow step, a plan step, an agent's call, a tool served over
// MCP — a call whose output contradicts it pauses the run before any
// further effect.
type Premise struct {
	// ID names the premise in messages.
	ID string
	// Claim says in words what is assumed ("" when not given).
	Claim string
	// Check is the source of the expression Holds evaluates.
	Check string
	// Holds evaluates Check on a call's output and args: true when the
	// premise holds, an error when the check cannot be evaluated (which
	// counts as not holding: it fails closed).
	Holds func(ctx context.Context, output, args any) (bool, error)
}

// PremiseError is the error of a call whose output contradicts its tool's
// premise. The call was made and its effect happened: its output is the
// call's (Output), and the caller pauses the run rather than going on.
type PremiseError struct {
	Tool    string
	Premise *Premise
	// Output is what the call returned.
	Output any
	// Err, when set, is why the check could not be evaluated.
	Err error
}

func (e *PremiseError) Error() string {
	claim := ""
	if e.Premise.Claim != "" {
		claim = fmt.Sprintf(" (%q)", e.Premise.Claim)
	}
	if e.Err != nil {
		return fmt.Sprintf("premise %s%s of tool %s: check %q could not be evaluated on the call's output, so it counts as not holding: %v", e.Premise.ID, claim, e.Tool, e.Premise.Check, e.Err)
	}
	return fmt.Sprintf("premise %s%s does not hold on the output of a call of tool %s (check %q)", e.Premise.ID, claim, e.Tool, e.Premise.Check)
}

func (e *PremiseError) Unwrap() error { return e.Err }

// CheckPremise evaluates p on a call's output and args: nil when it
// holds (or p is nil), a *PremiseError naming tool otherwise.
func CheckPremise(ctx context.Context, p *Premise, tool string, output, args any) error {
	if p == nil || p.Holds == nil {
		return nil
	}
	ok, err := p.Holds(ctx, output, args)
	if err == nil && ok {
		return nil
	}
	return &PremiseError{Tool: tool, Premise: p, Output: output, Err: err}
}

// AsPremise returns the *PremiseError in err's chain, or nil.
func AsPremise(err error) *PremiseError {
	var pe *PremiseError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
