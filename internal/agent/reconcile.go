package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reinhq/rein/tool"
)

// CheckTimeout bounds one check (tool.Checker) of a call in doubt, on top
// of an exec check's own timeout: one that has not answered by then cannot
// say.
const CheckTimeout = time.Minute

// Reconciled is the Reason of a call in doubt that its tool's check found
// had taken effect: it settled with the check's output, without a person.
const Reconciled = "reconciled: its tool's check found that the call took effect"

// reconcile is the hook for a call found in doubt after a crash (c is
// StatusUnknown and nobody decided it yet): when c's tool can say whether
// a call took effect (tool.Checker: rein.yaml check:, tool.WithCheck), it
// asks, with c's arguments, its idempotency key (turn, c.Index) and the
// tool's output schema, and reports whether that settled c without a
// person:
//
//   - it happened, with an output that fits the tool's output schema: c
//     becomes StatusOK, observing that output, Reason Reconciled; true;
//   - it did not happen, or the check cannot say (an error, a timeout, an
//     output that breaks the schema): c stays unknown for a person, its
//     Reason extended with what the check found; false.
//
// The caller commits c either way. A tool without a check leaves c as it
// is (false).
func (l *Loop) reconcile(ctx context.Context, turn int, c *Call) bool {
	b := l.tools[c.Tool]
	if b == nil || c.Status != StatusUnknown {
		return false
	}
	ck, ok := b.Tool.Tool.(tool.Checker)
	if !ok {
		return false
	}
	var args any
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		return false
	}
	key := l.key(turn, c.Index)
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	ctx = tool.WithCallInfo(ctx, &tool.CallInfo{RunID: l.cfg.RunID, StepID: l.cfg.StepID, Attempt: l.cfg.Attempt, IdempotencyKey: key})
	res, err := ck.CheckCall(ctx, tool.CheckRequest{Args: args, IdempotencyKey: key, OutputSchema: b.spec.OutputSchema})
	if err == nil && res.Happened && b.output != nil {
		if verr := b.output.Validate(res.Output); verr != nil {
			err = fmt.Errorf("it says the call took effect, but its output %w", verr)
		}
	}
	switch {
	case err != nil:
		c.Reason = appendReason(c.Reason, fmt.Sprintf("its tool's check could not say whether the call took effect: %v", err))
		return false
	case !res.Happened:
		c.Reason = appendReason(c.Reason, "its tool's check found that the call "+key+" did not take effect: approve to make it, reject to tell the agent")
		return false
	}
	c.Status, c.Reason = StatusOK, Reconciled
	c.Observation, c.Blob = l.observe(ctx, res.Output)
	return true
}

func appendReason(reason, more string) string {
	if reason == "" {
		return more
	}
	return reason + "; " + more
}
