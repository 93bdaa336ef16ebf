package invoke

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/tool"
)

// A call in doubt is one that was dispatched (journaled as started, or as
// a step or an agent call that may have run) and has no outcome: its
// process stopped while the tool ran. Every path that finds one — a flow
// step, a for_each item, a plan step, a fallback, an agent call, a
// compensation — decides it with Resolve, so the promise is one rule:
//
//	the tool is idempotent or reads at most    again, with the same key
//	its check (tool.Checker) says it happened  settled with the check's output
//	its check says it did not                  again, with the same key, when a
//	                                           person approved this dispatch;
//	                                           otherwise a person decides
//	no check, or the check cannot say          a person decides

// Verdict is what becomes of a call in doubt.
type Verdict int

const (
	// Person: nobody knows whether it took effect, or it did not and may
	// not be made without a person: it is unknown, a person decides.
	Person Verdict = iota
	// Happened: its tool's check found it took effect; it settles with
	// Resolution.Output.
	Happened
	// Again: it is made again with the same idempotency key.
	Again
)

// Resolution is Resolve's answer about one call in doubt.
type Resolution struct {
	Verdict Verdict
	// Output is what the check returned when the call happened.
	Output any
	// Reconciled is what the check found (journal.ReconciledHappened,
	// journal.ReconciledNotHappened), "" when no check answered: the call
	// record carries it, and rein runs show shows it.
	Reconciled string
	// Reason says why a person decides (the check's error, or that it
	// found the call did not take effect); "" without a check.
	Reason string
}

// Repeatable reports whether a call of spec's tool may be made again when
// it may have run already, nobody asked: the tool is idempotent or does
// not write.
func Repeatable(spec *tool.Spec) bool {
	switch spec.Effect {
	case "", tool.EffectNone, tool.EffectRead:
		return true
	}
	return spec.Idempotent
}

// Resolve decides a call in doubt of tool t (spec) by the rule above. req
// is what its check is asked (the original args, the call's idempotency
// key, spec's output schema); ctx carries the check's deadline and the
// call's tool.CallInfo. approved says a person approved this dispatch (an
// approval it consumed). valid checks the output a check returned against
// the tool's output schema (nil: any output).
func Resolve(ctx context.Context, t tool.Tool, spec *tool.Spec, req tool.CheckRequest, approved bool, valid func(any) error) Resolution {
	if Repeatable(spec) {
		return Resolution{Verdict: Again}
	}
	ck, ok := t.(tool.Checker)
	if !ok {
		return Resolution{Verdict: Person}
	}
	res, err := ck.CheckCall(ctx, req)
	if err == nil && res.Happened && valid != nil {
		if verr := valid(res.Output); verr != nil {
			err = fmt.Errorf("it says the call took effect, but its output %w", verr)
		}
	}
	switch {
	case err != nil:
		return Resolution{Verdict: Person, Reason: fmt.Sprintf("its tool's check could not say whether the call %s took effect: %v", req.IdempotencyKey, err)}
	case res.Happened:
		return Resolution{Verdict: Happened, Output: res.Output, Reconciled: journal.ReconciledHappened}
	case approved:
		return Resolution{Verdict: Again, Reconciled: journal.ReconciledNotHappened}
	}
	return Resolution{Verdict: Person, Reconciled: journal.ReconciledNotHappened,
		Reason: "its tool's check found that the call " + req.IdempotencyKey + " did not take effect"}
}
