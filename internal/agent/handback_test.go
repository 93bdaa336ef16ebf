package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// triageTeam is triage (the root, answered by top) with a handoff to
// refunds (answered by sub), whose own handoff goes back to triage.
func triageTeam(top, sub model.Model, j agent.Journal, b agent.Budgets) agent.Config {
	triage := &agent.Definition{Name: "triage", Path: "/agents/triage", Back: true}
	refunds := &agent.Definition{Name: "refunds", Path: "/agents/refunds", Config: agent.Config{Model: sub, Instructions: "You do refunds.",
		Tools: []agent.Tool{{Tool: tool.Func(tool.Spec{Name: "transfer_to_triage"}, nil), Agent: triage, Handoff: "all"}}}}
	return agent.Config{Model: top, Instructions: "You triage.", Journal: j, Budgets: b,
		Tools: []agent.Tool{{Tool: tool.Func(tool.Spec{Name: "transfer_to_refunds"}, nil), Agent: refunds, Handoff: "all"}}}
}

// A handoff back (triage → refunds → triage) returns the conversation to
// triage: refunds' sub-run ends handed back, triage's transfer call
// observes who handed back and what they said, and triage's model answers.
// Both transfers count as handoffs.
func TestHandoffBackReturnsTheConversation(t *testing.T) {
	t.Parallel()
	sub := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("r1", "transfer_to_triage", `{"reason":"not a refund: a delivery question"}`)),
	}}
	top := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("t1", "transfer_to_refunds", `{"reason":"money"}`)),
		textReply("Your parcel ships tomorrow."),
	}}
	j := &journal{}
	l := newLoop(t, triageTeam(top, sub, j, agent.Budgets{}))
	s := &agent.Session{Task: "where is my parcel?"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered || res.Answer != "Your parcel ships tomorrow." {
		t.Fatalf("run: %v, %+v", err, res)
	}
	call := s.Turns[0].Calls[0]
	sr := call.Sub
	if call.Status != agent.StatusOK || sr == nil || sr.Status != agent.SubHandedBack || sr.Back == nil || sr.Back.To != "triage" || sr.Back.By != "refunds" {
		t.Fatalf("the transfer call %+v, its sub-run %+v", call, sr)
	}
	if back := sr.Turns[0].Calls[0].Back; back == nil || back.Reason != "not a refund: a delivery question" {
		t.Errorf("refunds' hand-back call %+v", sr.Turns[0].Calls[0])
	}
	if !strings.Contains(call.Observation, `"handed_back_by":"refunds"`) || !strings.Contains(call.Observation, "a delivery question") {
		t.Errorf("triage observed %s", call.Observation)
	}
	if res.Usage.Handoffs != 2 {
		t.Errorf("usage %+v: two transfers", res.Usage)
	}
	// triage's second request holds the transfer and its observation.
	msgs := top.requests[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.Tool || !strings.Contains(last.Content, "handed_back_by") {
		t.Errorf("triage's second request ends with %+v", last)
	}
	if got := j.session("x").Turns; len(got) != 2 || got[0].Calls[0].Sub.Status != agent.SubHandedBack {
		t.Errorf("journaled turns %+v", got)
	}
}

// Handing the conversation back and forth is bounded by max_handoffs
// over the whole chain: the transfer past it stops the run with a budget
// error naming budgets.max_handoffs.
func TestHandoffsAreBudgeted(t *testing.T) {
	t.Parallel()
	toRefunds := callsReply(tc("t", "transfer_to_refunds", `{}`))
	toTriage := callsReply(tc("r", "transfer_to_triage", `{}`))
	sub := &turns{replies: []func(*model.Request) *model.Response{toTriage, toTriage, toTriage}}
	top := &turns{replies: []func(*model.Request) *model.Response{toRefunds, toRefunds, toRefunds}}
	l := newLoop(t, triageTeam(top, sub, nil, agent.Budgets{MaxHandoffs: 3}))
	s := &agent.Session{Task: "ping pong"}
	res, err := l.Run(context.Background(), s)
	if fault.BudgetOf(err) != "max_handoffs" || !strings.Contains(err.Error(), "budgets.max_handoffs: 3") {
		t.Fatalf("run: %v, %+v", err, res)
	}
	// triage → refunds → triage (2), triage → refunds (3); refunds' next
	// hand-back is refused inside its sub-run, whose error triage sees;
	// triage's next transfer is refused and stops the run.
	if n := len(s.Turns); n != 2 || s.Turns[1].Calls[0].Sub.ErrorType != "budget:max_handoffs" {
		t.Fatalf("turns %+v", s.Turns)
	}
	if res.Usage.Handoffs != 3 {
		t.Errorf("usage %+v", res.Usage)
	}
}

// Agent-as-tool recursion stays refused: a handoff back is only for
// handoffs, never for agents called as tools.
func TestHandBackIsNotForAgentTools(t *testing.T) {
	t.Parallel()
	// b, called as a tool by a, hands the conversation "back" to a (the
	// root, which a loader marks Back)
	sub := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("b1", "transfer_to_a", `{}`))}}
	a := &agent.Definition{Name: "a", Path: "/a", Back: true}
	b := &agent.Definition{Name: "b", Path: "/b", Config: agent.Config{Model: sub,
		Tools: []agent.Tool{{Tool: tool.Func(tool.Spec{Name: "transfer_to_a"}, nil), Agent: a, Handoff: "all"}}}}
	top := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a1", "b", `{"task":"x"}`)),
		textReply("done"),
	}}
	l := newLoop(t, agent.Config{Model: top, Tools: []agent.Tool{{Tool: tool.Func(tool.Spec{Name: "b"}, nil), Agent: b}}})
	s := &agent.Session{Task: "x"}
	if _, err := l.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	sr := s.Turns[0].Calls[0].Sub
	if sr.Status != agent.SubFailed || sr.ErrorType != "handoff" || !strings.Contains(sr.Error, "called as a tool") {
		t.Fatalf("the sub-run %+v", sr)
	}
}
