package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// billingAgent is a sub-agent over one tool, answered by m.
func billingAgent(m model.Model, tools ...agent.Tool) agent.Tool {
	def := &agent.Definition{Name: "billing", Path: "/agents/billing", Description: "Answers billing questions.",
		Config: agent.Config{Model: m, ModelName: "billing-model", Instructions: "You handle billing.", Tools: tools}}
	return agent.Tool{Tool: tool.Func(tool.Spec{Name: "billing"}, nil), Agent: def}
}

// An agent called as a tool runs its own loop as a sub-run of the call:
// its turns are kept on the call, its calls' keys extend the calling
// call's, its usage counts into the caller's, and its answer is the
// observation.
func TestSubAgentAnswers(t *testing.T) {
	t.Parallel()
	c := &counted{}
	charges := c.tool("list_charges", tool.EffectRead, true, nil)
	sub := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("b1", "list_charges", `{"order":"1042"}`)),
		textReply("ch_2 is a duplicate of ch_1"),
	}}
	top := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("t1", "billing", `{"task":"Which charge of order 1042 is a duplicate?"}`)),
		textReply("ch_2 was charged twice"),
	}}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: top, Tools: []agent.Tool{billingAgent(sub, agent.Tool{Tool: charges})}, Journal: j,
		RunID: "run", StepID: "agent", Attempt: 1})
	s := &agent.Session{Task: "I was charged twice"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered || res.Answer != "ch_2 was charged twice" {
		t.Fatalf("run: %v, %+v", err, res)
	}
	call := s.Turns[0].Calls[0]
	if call.Status != agent.StatusOK || call.Observation != `"ch_2 is a duplicate of ch_1"` {
		t.Fatalf("the call of billing: %+v", call)
	}
	sr := call.Sub
	if sr == nil || sr.Status != agent.SubAnswered || len(sr.Turns) != 2 || sr.Task != "Which charge of order 1042 is a duplicate?" {
		t.Fatalf("the sub-run: %+v", sr)
	}
	if got := sr.Turns[0].Calls[0]; got.Status != agent.StatusOK || got.Key != "run/agent/1/turn1/call1/billing/turn1/call1" {
		t.Errorf("the sub-run's call: %+v", got)
	}
	if c.keys[0] != "run/agent/1/turn1/call1/billing/turn1/call1" {
		t.Errorf("the tool ran with key %q", c.keys[0])
	}
	if res.Usage.Turns != 4 || res.Usage.ToolCalls != 2 || res.Usage.TokensIn != 40 {
		t.Errorf("usage %+v: the sub-run's 2 turns and 1 call count into the caller's", res.Usage)
	}
	// the sub-agent saw its own instructions and task only.
	if msgs := sub.requests[0].Messages; len(msgs) != 2 || msgs[0].Content != "You handle billing." || msgs[1].Content != sr.Task {
		t.Errorf("the sub-agent's first request: %+v", msgs)
	}
	// committed: the journal's record of the call holds the whole sub-run.
	if got := j.session("x").Turns[0].Calls[0].Sub; got == nil || len(got.Turns) != 2 || got.Status != agent.SubAnswered {
		t.Errorf("the journal's sub-run: %+v", got)
	}
}

// A call of the sub-run that needs a person parks the caller: the caller's
// Pending names it turn<t>/call<c>/turn<t'>/call<c'>; with the decision
// the sub-run continues and runs exactly that call, once. A crash after its
// dispatch leaves it unknown for a person, inside the sub-run as anywhere.
func TestSubAgentApprovalParksTheCaller(t *testing.T) {
	t.Parallel()
	c := &counted{}
	refund := c.tool("issue_refund", tool.EffectExternal, false, nil)
	subReplies := []func(*model.Request) *model.Response{
		callsReply(tc("b1", "issue_refund", `{"order":"1042"}`)),
		textReply("refunded"),
	}
	topReplies := []func(*model.Request) *model.Response{
		callsReply(tc("t1", "billing", `{"task":"refund order 1042"}`)),
		textReply("done"),
	}
	build := func(j agent.Journal, sub, top *turns) *agent.Loop {
		return newLoop(t, agent.Config{Model: top, Tools: []agent.Tool{billingAgent(sub, agent.Tool{Tool: refund, Approval: true})},
			Journal: j, RunID: "run", StepID: "agent", Attempt: 1})
	}
	j := &journal{}
	s := &agent.Session{Task: "refund"}
	res, err := build(j, &turns{replies: subReplies}, &turns{replies: topReplies}).Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 {
		t.Fatalf("run: %v, %+v", err, res)
	}
	p := res.Pending[0]
	if p.Ref != "turn1/call1/turn1/call1" || p.Tool != "issue_refund" || p.Kind != "approval" || p.ArgsSHA == "" || !strings.Contains(p.Reason, "agent billing") {
		t.Fatalf("pending %+v", p)
	}
	if c.n.Load() != 0 {
		t.Fatal("the refund ran before its approval")
	}
	// another process resumes from the journal with the approval, but its
	// journal fails the commit of the refund's outcome: it died after the
	// refund was dispatched.
	s2 := j.session("refund")
	s2.Decisions = map[string]agent.Decision{p.Ref: {Verdict: agent.Approve, ID: "ap1", Args: p.Args}}
	dying := &failingJournal{journal: j, failAt: func(turn int, c *agent.Call) bool {
		return c.Sub != nil && len(c.Sub.Turns) == 1 && c.Sub.Turns[0].Calls[0].Status == agent.StatusOK
	}}
	_, err = build(dying, &turns{replies: subReplies[1:]}, &turns{replies: topReplies[1:]}).Run(context.Background(), s2)
	if err == nil || !errors.Is(err, errDied) {
		t.Fatalf("the dying run: %v", err)
	}
	if c.n.Load() != 1 {
		t.Fatalf("the refund ran %d times, want 1", c.n.Load())
	}
	// the next resume finds the refund dispatched and not settled: unknown.
	s3 := j.session("refund")
	s3.Decisions = s2.Decisions
	res, err = build(j, &turns{replies: subReplies[1:]}, &turns{replies: topReplies[1:]}).Run(context.Background(), s3)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Kind != "unknown" || res.Pending[0].Ref != p.Ref {
		t.Fatalf("after the crash: %v, %+v", err, res)
	}
	if c.n.Load() != 1 {
		t.Fatal("the approval was used twice")
	}
	// a person settles it: the sub-run answers and so does the caller.
	s4 := j.session("refund")
	s4.Decisions = map[string]agent.Decision{p.Ref: {Verdict: agent.Settle, ID: "ap2", Output: map[string]any{"refunded": true}}}
	res, err = build(j, &turns{replies: subReplies[1:]}, &turns{replies: topReplies[1:]}).Run(context.Background(), s4)
	if err != nil || res.Status != agent.StatusAnswered || res.Answer != "done" {
		t.Fatalf("settled: %v, %+v", err, res)
	}
	if sr := s4.Turns[0].Calls[0].Sub; sr.Status != agent.SubAnswered || sr.Turns[0].Calls[0].Observation != `{"refunded":true}` {
		t.Errorf("the sub-run: %+v", sr)
	}
	if c.n.Load() != 1 {
		t.Fatal("the refund ran again")
	}
}

var errDied = errors.New("the process died")

// failingJournal fails the commit failAt names (a process that dies then).
type failingJournal struct {
	*journal
	failAt func(turn int, c *agent.Call) bool
}

func (f *failingJournal) CommitCall(ctx context.Context, turn int, c *agent.Call) error {
	if f.failAt(turn, c) {
		return errDied
	}
	return f.journal.CommitCall(ctx, turn, c)
}

// The sub-run's budgets are cut to what the caller has left: a sub-agent
// that would take more turns than remain fails, its error is the
// observation, and the caller goes on.
func TestSubAgentBudgetIsTheCallers(t *testing.T) {
	t.Parallel()
	c := &counted{}
	find := c.tool("find", tool.EffectRead, true, nil)
	loopy := func(*model.Request) *model.Response {
		return &model.Response{ToolCalls: []model.ToolCall{tc("x", "find", `{"order":"1"}`)}, Usage: model.Usage{In: 1, Out: 1}}
	}
	sub := &turns{replies: []func(*model.Request) *model.Response{loopy, loopy, loopy, loopy, loopy}}
	top := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("t1", "billing", `{"task":"loop"}`)),
		textReply("gave up"),
	}}
	l := newLoop(t, agent.Config{Model: top, Tools: []agent.Tool{billingAgent(sub, agent.Tool{Tool: find})},
		Budgets: agent.Budgets{MaxTurns: 4}})
	s := &agent.Session{Task: "x"}
	res, err := l.Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "turn budget exhausted") {
		t.Fatalf("run: %v, %+v: the sub-run's turns count against the caller's max_turns", err, res)
	}
	sr := s.Turns[0].Calls[0].Sub
	if sr.Status != agent.SubFailed || sr.ErrorType != "budget:max_turns" || len(sr.Turns) != 3 {
		t.Fatalf("the sub-run: %+v (3 turns were left of the caller's 4)", sr)
	}
	if obs := s.Turns[0].Calls[0].Observation; !strings.Contains(obs, `"error_type":"budget:max_turns"`) {
		t.Errorf("observation %s", obs)
	}
}

// An agent cannot call itself, directly or through others: New refuses
// the cycle, naming it.
func TestSubAgentRecursionRefused(t *testing.T) {
	t.Parallel()
	m := &turns{}
	a := &agent.Definition{Name: "a", Path: "/a", Config: agent.Config{Model: m}}
	b := &agent.Definition{Name: "b", Path: "/b", Config: agent.Config{Model: m}}
	a.Config.Tools = []agent.Tool{{Tool: tool.Func(tool.Spec{Name: "b"}, nil), Agent: b}}
	b.Config.Tools = []agent.Tool{{Tool: tool.Func(tool.Spec{Name: "a"}, nil), Agent: a}}
	_, err := agent.New(agent.Config{Model: m, Tools: []agent.Tool{{Tool: tool.Func(tool.Spec{Name: "a"}, nil), Agent: a}}})
	if err == nil || !strings.Contains(err.Error(), "calls itself") || !strings.Contains(err.Error(), "/a -> /b -> /a") {
		t.Fatalf("New: %v", err)
	}
}

// A handoff transfers the conversation: the model calls transfer_to_<name>,
// the receiving agent sees the conversation (as its filter passes it) and
// answers, and its answer is the loop's final turn, no model call of the
// caller's. The transcript keeps who answered.
func TestHandoffTransfersTheConversation(t *testing.T) {
	t.Parallel()
	for _, filter := range []string{"all", "no_tools", "last_user"} {
		t.Run(filter, func(t *testing.T) {
			t.Parallel()
			c := &counted{}
			find := c.tool("lookup_order", tool.EffectRead, true, nil)
			refunds := &turns{replies: []func(*model.Request) *model.Response{textReply("Refunds here: ch_2 is refunded.")}}
			def := &agent.Definition{Name: "refunds", Path: "/agents/refunds", Config: agent.Config{Model: refunds, Instructions: "You do refunds."}}
			top := &turns{replies: []func(*model.Request) *model.Response{
				callsReply(tc("t1", "lookup_order", `{"order":"1042"}`)),
				callsReply(tc("t2", "transfer_to_refunds", `{"reason":"a refund"}`)),
			}}
			j := &journal{}
			l := newLoop(t, agent.Config{Model: top, Instructions: "You triage.", Journal: j, Tools: []agent.Tool{{Tool: find},
				{Tool: tool.Func(tool.Spec{Name: "transfer_to_refunds"}, nil), Agent: def, Handoff: filter}}})
			s := &agent.Session{Task: "refund order 1042"}
			res, err := l.Run(context.Background(), s)
			if err != nil || res.Status != agent.StatusAnswered || res.Answer != "Refunds here: ch_2 is refunded." {
				t.Fatalf("run: %v, %+v", err, res)
			}
			if len(s.Turns) != 3 || !s.Turns[2].Final || s.Turns[2].LLMCalls != 0 || top.calls() != 2 {
				t.Fatalf("turns %+v: the handoff's answer is the final turn, no model call", s.Turns)
			}
			sr := s.Turns[1].Calls[0].Sub
			if sr == nil || !sr.Handoff || sr.Agent != "refunds" || sr.Status != agent.SubAnswered {
				t.Fatalf("the handoff's sub-run %+v", sr)
			}
			if res.Usage.Turns != 4 || res.Usage.LLMCalls != 3 {
				t.Errorf("usage %+v: the receiving agent's turn counts", res.Usage)
			}
			var roles []string
			for _, m := range refunds.requests[0].Messages {
				roles = append(roles, string(m.Role)+":"+strings.SplitN(m.Content, " ", 2)[0])
			}
			want := map[string]string{
				"all":       "system:You,user:refund,assistant:,tool:{\"order\":\"1042\",\"status\":\"shipped\"},user:The",
				"no_tools":  "system:You,user:refund,user:The",
				"last_user": "system:You,user:refund",
			}[filter]
			if strings.Join(roles, ",") != want {
				t.Errorf("the receiving agent saw %v, want %s", roles, want)
			}
			if got := j.session("x").Turns; len(got) != 3 || !got[2].Final {
				t.Errorf("journaled turns %+v", got)
			}
		})
	}
}

// The policy gate and approvals hold across a handoff: the receiving
// agent's call that needs a person parks the caller, named under the
// transfer call; with the decision it runs once and the receiving agent's
// answer is the loop's.
func TestHandoffApprovalParksTheCaller(t *testing.T) {
	t.Parallel()
	c := &counted{}
	refund := c.tool("issue_refund", tool.EffectExternal, false, nil)
	recvReplies := []func(*model.Request) *model.Response{
		callsReply(tc("r1", "issue_refund", `{"order":"1042"}`)),
		textReply("refunded 1042"),
	}
	build := func(j agent.Journal, recv *turns, top *turns) *agent.Loop {
		def := &agent.Definition{Name: "refunds", Path: "/agents/refunds", Config: agent.Config{Model: recv, Tools: []agent.Tool{{Tool: refund, Approval: true}}}}
		return newLoop(t, agent.Config{Model: top, Journal: j, RunID: "run", StepID: "agent", Attempt: 1, Tools: []agent.Tool{
			{Tool: tool.Func(tool.Spec{Name: "transfer_to_refunds"}, nil), Agent: def, Handoff: "last_user"}}})
	}
	j := &journal{}
	top := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("t1", "transfer_to_refunds", `{}`))}}
	s := &agent.Session{Task: "refund 1042"}
	res, err := build(j, &turns{replies: recvReplies}, top).Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Ref != "turn1/call1/turn1/call1" {
		t.Fatalf("run: %v, %+v", err, res)
	}
	s2 := j.session("refund 1042")
	s2.Decisions = map[string]agent.Decision{"turn1/call1/turn1/call1": {Verdict: agent.Approve, ID: "ap1", Args: res.Pending[0].Args}}
	top2 := &turns{}
	res, err = build(j, &turns{replies: recvReplies[1:]}, top2).Run(context.Background(), s2)
	if err != nil || res.Status != agent.StatusAnswered || res.Answer != "refunded 1042" || top2.calls() != 0 {
		t.Fatalf("resumed: %v, %+v (the caller's model asked %d times)", err, res, top2.calls())
	}
	if c.n.Load() != 1 || c.keys[0] != "run/agent/1/turn1/call1/transfer_to_refunds/turn1/call1" {
		t.Fatalf("the refund ran %d times, keys %v", c.n.Load(), c.keys)
	}
}

// refuseRefunds is a gate that blocks every call of issue_refund.
type refuseRefunds struct{}

func (refuseRefunds) Check(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
	if inv.Tool.Name == "issue_refund" {
		return safety.Decision{Verdict: safety.Block, Rule: "no-refunds", Reason: "billing refunds by hand"}, nil
	}
	return safety.Decision{Verdict: safety.Allow}, nil
}

// A sub-agent's own policy holds for its calls, joined with the caller's.
func TestSubAgentOwnPolicyHolds(t *testing.T) {
	t.Parallel()
	c := &counted{}
	refund := c.tool("issue_refund", tool.EffectExternal, false, nil)
	sub := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("b1", "issue_refund", `{"order":"1042"}`)), textReply("could not refund")}}
	top := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("t1", "billing", `{"task":"refund 1042"}`)), textReply("done")}}
	bt := billingAgent(sub, agent.Tool{Tool: refund})
	bt.Agent.Gate = refuseRefunds{}
	l := newLoop(t, agent.Config{Model: top, Tools: []agent.Tool{bt}})
	s := &agent.Session{Task: "x"}
	if res, err := l.Run(context.Background(), s); err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("run: %v, %+v", err, res)
	}
	got := s.Turns[0].Calls[0].Sub.Turns[0].Calls[0]
	if got.Status != agent.StatusBlocked || !strings.Contains(got.Observation, "billing refunds by hand") || c.n.Load() != 0 {
		t.Fatalf("the sub-agent's refund: %+v (ran %d times)", got, c.n.Load())
	}
}

// The sub-run's tokens count into the caller's max_tokens: the sub-agent
// gets what the caller has left, fails when it is spent, and the caller's
// next turn is refused with the budget's error, its model not asked.
func TestSubAgentTokensAreTheCallers(t *testing.T) {
	t.Parallel()
	c := &counted{}
	find := c.tool("find", tool.EffectRead, true, nil)
	sub := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("b1", "find", `{"order":"1"}`)),
		callsReply(tc("b2", "find", `{"order":"2"}`)),
		textReply("never"),
	}}
	top := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("t1", "billing", `{"task":"find it"}`)),
		textReply("never asked"),
	}}
	l := newLoop(t, agent.Config{Model: top, Tools: []agent.Tool{billingAgent(sub, agent.Tool{Tool: find})},
		Budgets: agent.Budgets{MaxTokens: 40}})
	s := &agent.Session{Task: "x"}
	res, err := l.Run(context.Background(), s)
	if fault.BudgetOf(err) != "max_tokens" || !strings.Contains(err.Error(), "budgets.max_tokens: 40") {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if sr := s.Turns[0].Calls[0].Sub; sr.Status != agent.SubFailed || sr.ErrorType != "budget:max_tokens" || len(sr.Turns) != 2 {
		t.Fatalf("the sub-run %+v: 25 tokens were left of the caller's 40", sr)
	}
	if top.calls() != 1 || res.Usage.TokensIn+res.Usage.TokensOut != 45 {
		t.Errorf("the caller's model asked %d times, usage %+v", top.calls(), res.Usage)
	}
}
