package agent_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// TestStepUnits drives a session one unit at a time, as a workflow does: a
// turn unit asks the model once and runs no call; each call unit runs its
// call only; a turn unit while calls are open is refused; the answer
// comes from the last turn unit.
func TestStepUnits(t *testing.T) {
	t.Parallel()
	var c counted
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "status", `{"order":"1"}`), tc("b", "charge", `{"order":"2"}`)),
		textReply("done"),
	}}
	l := newLoop(t, agent.Config{Model: m, RunID: "r", StepID: "s", Attempt: 1, Tools: []agent.Tool{
		{Tool: c.tool("status", tool.EffectRead, true, nil)}, {Tool: c.tool("charge", tool.EffectWrite, false, nil)}}})
	ctx := context.Background()
	s := &agent.Session{Task: "t"}
	if n := agent.NextUnits(s); !n.Turn {
		t.Fatalf("next of an empty session: %+v", n)
	}
	res, err := l.Step(ctx, s, agent.Unit{})
	if err != nil || res.Status != agent.StatusStepped || len(s.Turns) != 1 || c.n.Load() != 0 || m.calls() != 1 {
		t.Fatalf("turn unit: %+v %v, %d turns, %d tool calls", res, err, len(s.Turns), c.n.Load())
	}
	n := agent.NextUnits(s)
	if n.Turn || len(n.Calls) != 2 || n.Calls[0] != 1 || n.Calls[1] != 2 {
		t.Fatalf("next after turn 1: %+v", n)
	}
	if _, err := l.Step(ctx, s, agent.Unit{}); err == nil {
		t.Fatal("a turn unit ran while turn 1's calls are open")
	}
	if res, err = l.Step(ctx, s, agent.Unit{Call: 2}); err != nil || res.Status != agent.StatusStepped {
		t.Fatal(res, err)
	}
	if c.n.Load() != 1 || c.keys[0] != "r/s/1/turn1/call2" || s.Turns[0].Calls[0].Status != agent.StatusChosen || s.Turns[0].Calls[1].Status != agent.StatusOK {
		t.Fatalf("call unit 2: keys %v, calls %+v", c.keys, s.Turns[0].Calls)
	}
	if n := agent.NextUnits(s); len(n.Calls) != 1 || n.Calls[0] != 1 {
		t.Fatalf("next after call 2: %+v", n)
	}
	if _, err := l.Step(ctx, s, agent.Unit{Call: 1}); err != nil {
		t.Fatal(err)
	}
	if res, err = l.Step(ctx, s, agent.Unit{}); err != nil || res.Status != agent.StatusAnswered || res.Answer != "done" || m.calls() != 2 || c.n.Load() != 2 {
		t.Fatalf("last turn unit: %+v %v, %d model calls, %d tool calls", res, err, m.calls(), c.n.Load())
	}
}

// TestStepLost: a call unit whose worker was lost (Unit.Lost) runs again
// only a call safe to repeat; a write waits for a person as unknown, and
// one a person had approved counts as dispatched with that approval.
func TestStepLost(t *testing.T) {
	t.Parallel()
	var c counted
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "status", `{"order":"1"}`), tc("b", "charge", `{"order":"2"}`)),
	}}
	l := newLoop(t, agent.Config{Model: m, RunID: "r", StepID: "s", Attempt: 1, Tools: []agent.Tool{
		{Tool: c.tool("status", tool.EffectRead, true, nil)}, {Tool: c.tool("charge", tool.EffectWrite, false, nil), Approval: true}}})
	ctx := context.Background()
	s := &agent.Session{Task: "t"}
	if _, err := l.Step(ctx, s, agent.Unit{}); err != nil {
		t.Fatal(err)
	}
	if res, err := l.Step(ctx, s, agent.Unit{Call: 1, Lost: true}); err != nil || res.Status != agent.StatusStepped || c.n.Load() != 1 {
		t.Fatalf("lost read: %+v %v, %d calls", res, err, c.n.Load())
	}
	res, err := l.Step(ctx, s, agent.Unit{Call: 2})
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Kind != "approval" {
		t.Fatalf("charge: %+v %v", res, err)
	}
	s.Decisions = map[string]agent.Decision{"turn1/call2": {Verdict: agent.Approve, ID: "a1"}}
	// the approved call's worker was lost: it may have run, with a1.
	res, err = l.Step(ctx, s, agent.Unit{Call: 2, Lost: true})
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Kind != "unknown" || c.n.Load() != 1 {
		t.Fatalf("lost approved charge: %+v %v, %d calls", res, err, c.n.Load())
	}
	if got := s.Turns[0].Calls[1].Consumed; len(got) != 1 || got[0].ID != "a1" {
		t.Fatalf("consumed %+v", got)
	}
	// the same approval does not count again; a new one runs it, once.
	s.Decisions["turn1/call2"] = agent.Decision{Verdict: agent.Approve, ID: "a2"}
	if res, err = l.Step(ctx, s, agent.Unit{Call: 2}); err != nil || res.Status != agent.StatusStepped || c.n.Load() != 2 || c.keys[1] != "r/s/1/turn1/call2" {
		t.Fatalf("approved again: %+v %v, keys %v", res, err, c.keys)
	}
}
