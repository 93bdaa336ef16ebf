package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/tool"
)

// CheckTimeout bounds one check (tool.Checker) of a call in doubt, on top
// of an exec check's own timeout: one that has not answered by then cannot
// say.
const CheckTimeout = time.Minute

// Reconciled is the Reason of a call in doubt that its tool's check found
// had taken effect: it settled with the check's output, without a person.
const Reconciled = "reconciled: its tool's check found that the call took effect"

// reconcile decides c, a call found in doubt after a crash (c is
// StatusUnknown and nobody decided it yet), by the one rule every path
// uses (invoke.Resolve): when c's tool can say whether a call took effect
// (tool.Checker: rein.yaml check:, tool.WithCheck), it asks, with c's
// arguments, its idempotency key (turn, c.Index) and the tool's output
// schema, and records what it found in c.Reconciled:
//
//   - it happened, with an output that fits the tool's output schema: c
//     becomes StatusOK, observing that output, Reason Reconciled;
//   - it did not happen, and a person approved this dispatch (c consumed
//     an approval): c is to run again, with the same key and approvals;
//     again is true, and the caller dispatches it;
//   - it did not happen otherwise, or the check cannot say (an error, a
//     timeout, an output that breaks the schema): c stays unknown for a
//     person, its Reason extended with what the check found.
//
// The caller commits c either way. A tool without a check leaves c as it
// is.
func (l *Loop) reconcile(ctx context.Context, turn int, c *Call) (again bool) {
	b := l.tools[c.Tool]
	if b == nil || c.Status != StatusUnknown {
		return false
	}
	if _, ok := b.Tool.Tool.(tool.Checker); !ok {
		return false
	}
	var args any
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		return false
	}
	if m, ok := args.(map[string]any); ok && b.declares {
		delete(m, DeclarationArg) // the tool was called without it
	}
	key := l.key(turn, c.Index)
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	ctx = tool.WithCallInfo(ctx, &tool.CallInfo{RunID: l.cfg.RunID, StepID: l.cfg.StepID, Attempt: l.cfg.Attempt, IdempotencyKey: key})
	var valid func(any) error
	if b.output != nil {
		valid = b.output.Validate
	}
	res := invoke.Resolve(ctx, b.Tool.Tool, &b.spec, tool.CheckRequest{Args: args, IdempotencyKey: key, OutputSchema: b.spec.OutputSchema},
		len(c.Consumed) > 0, valid)
	c.Reconciled = res.Reconciled
	switch res.Verdict {
	case invoke.Happened:
		c.Status, c.Reason = StatusOK, Reconciled
		c.Observation, c.Blob = l.observe(ctx, res.Output)
		return false
	case invoke.Again:
		return true
	}
	if res.Reason != "" {
		if res.Reconciled != "" {
			res.Reason += ": approve to make it, reject to tell the agent"
		}
		c.Reason = appendReason(c.Reason, res.Reason)
	}
	return false
}

func appendReason(reason, more string) string {
	if reason == "" {
		return more
	}
	return reason + "; " + more
}
