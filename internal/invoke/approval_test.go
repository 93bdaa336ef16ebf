package invoke_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

type verdictGate safety.Verdict

func (g verdictGate) Check(context.Context, *safety.Invocation) (safety.Decision, error) {
	return safety.Decision{Verdict: safety.Verdict(g), Reason: "because"}, nil
}

func TestApprovalStage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                        string
		gate                        safety.Gate
		require, pausable, approved bool
		want                        invoke.Outcome
	}{
		{"declared, no gate", nil, true, true, false, invoke.AwaitingApproval},
		{"declared and approved", nil, true, true, true, invoke.OK},
		{"declared, gate allows", verdictGate(safety.Allow), true, true, false, invoke.AwaitingApproval},
		{"gate asks a caller that pauses", verdictGate(safety.RequireApproval), false, true, false, invoke.AwaitingApproval},
		{"gate asks, approved", verdictGate(safety.RequireApproval), false, true, true, invoke.OK},
		{"gate asks a caller that cannot pause", verdictGate(safety.RequireApproval), false, false, false, invoke.Blocked},
		{"gate blocks an approved call", verdictGate(safety.Block), true, true, true, invoke.Blocked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			called := 0
			tl := tool.Func(tool.Spec{Name: "refund"}, func(context.Context, any) (any, error) { called++; return "ok", nil })
			p := &invoke.Pipeline{Gate: c.gate}
			_, outcome, err := p.Call(context.Background(), &invoke.Request{Tool: tl, Args: map[string]any{},
				RequireApproval: c.require, Pausable: c.pausable, Approved: c.approved})
			if outcome != c.want {
				t.Fatalf("outcome %s (%v), want %s", outcome, err, c.want)
			}
			var ae *invoke.ApprovalError
			if (outcome == invoke.AwaitingApproval) != errors.As(err, &ae) {
				t.Errorf("error %v: an *ApprovalError exactly when awaiting approval", err)
			}
			if outcome != invoke.OK && (called != 0 || fault.ClassOf(err) != fault.Policy) {
				t.Errorf("called %d times, class %s", called, fault.ClassOf(err))
			}
		})
	}
}
