package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// TestHeldStopsBetweenUnits: once Held reports true (set by the first
// call, as a failed premise elsewhere would be), the call running
// finishes, the turn's next call does not start (committed chosen with
// HeldReason) and no further turn is asked: ErrHeld. A Run of the
// committed session, no longer held, runs that call once — not in doubt,
// though its tool is not safe to repeat — and goes on.
func TestHeldStopsBetweenUnits(t *testing.T) {
	t.Parallel()
	var c counted
	var held atomic.Bool
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "charge", `{"order":"1"}`), tc("b", "charge", `{"order":"2"}`)),
		textReply("charged both"),
	}}
	charge := c.tool("charge", tool.EffectWrite, false, func(args any) (any, error) {
		held.Store(true)
		return args, nil
	})
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, RunID: "r", StepID: "s", Attempt: 1, Journal: j, Concurrency: 1,
		Tools: []agent.Tool{{Tool: charge}}})
	_, err := l.WithHeld(held.Load).Run(context.Background(), &agent.Session{Task: "charge 1 and 2"})
	if !errors.Is(err, agent.ErrHeld) {
		t.Fatalf("held run: %v, want ErrHeld", err)
	}
	if c.n.Load() != 1 || m.calls() != 1 {
		t.Fatalf("held: %d charges, %d model calls; want 1 and 1", c.n.Load(), m.calls())
	}
	if got := j.turns[0].Calls[1]; got.Status != agent.StatusChosen || got.Reason != agent.HeldReason {
		t.Fatalf("the call held back: %s %q, want chosen, %q", got.Status, got.Reason, agent.HeldReason)
	}
	// resumed from the journal, in a process that is not held.
	held.Store(false)
	res, err := l.WithHeld(func() bool { return false }).Run(context.Background(), j.session("charge 1 and 2"))
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	if c.n.Load() != 2 || c.keys[1] != "r/s/1/turn1/call2" || m.calls() != 2 {
		t.Fatalf("resumed: %d charges (keys %v), %d model calls; want call2 once, then the answer", c.n.Load(), c.keys, m.calls())
	}
}
