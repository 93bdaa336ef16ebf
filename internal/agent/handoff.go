package agent

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/value"
)

// Handoffs. A Tool with Agent and Handoff is offered to the model as a
// handoff (transfer_to_<name>, {reason}): calling it transfers the
// conversation to that agent. The transfer is a call of the turn, journaled
// as any (its decision, then its outcome); the receiving agent runs as the
// call's sub-run (SubRun, Handoff set) with the history the handoff passes
// (Tool.Handoff: the whole conversation, the messages without tool calls, or
// only the user's last message), through the same pipeline (gate, keys,
// ledger) and within what the caller's budgets leave, its approvals parking
// the run as a sub-agent's do. Once it answers, its answer is the loop's:
// committed as the loop's final turn (no model call), so the transcript
// shows who answered. A handoff whose agent fails (its budget, its model)
// answers the error as the observation, and the caller's model goes on.

const handoffInputSchema = `{"type":"object","additionalProperties":false,
"properties":{"reason":{"type":"string","description":"why the conversation goes to this agent"}}}`

// handover is what a handoff's receiving agent sees: its task (the last
// user message) and the conversation before it.
type handover struct {
	task    string
	history []model.Message
	agents  []string // the receiving agent's Session.Agent
}

// handoverOf builds what the agent of handoff call c of turn t receives
// from s, under filter.
func (l *Loop) handoverOf(s *Session, t *Turn, c *Call, filter string) handover {
	if filter == flow.HistoryLastUser {
		return handover{task: s.Task}
	}
	msgs := make([]model.Message, 0, len(s.History)+1+2*len(s.Turns))
	msgs = append(msgs, s.History...)
	msgs = append(msgs, model.Message{Role: model.User, Content: s.Task})
	for i := range s.Turns {
		tt := &s.Turns[i]
		if tt.N >= t.N {
			break
		}
		if filter == flow.HistoryNoTools || len(tt.Calls) == 0 {
			if tt.Text != "" {
				msgs = append(msgs, model.Message{Role: model.Assistant, Content: tt.Text})
			}
			continue
		}
		m := model.Message{Role: model.Assistant, Content: tt.Text, ToolCalls: make([]model.ToolCall, len(tt.Calls))}
		for j, call := range tt.Calls {
			m.ToolCalls[j] = model.ToolCall{ID: call.ID, Name: l.wireName(call.Tool), Args: call.Args}
		}
		msgs = append(msgs, m)
		for _, call := range tt.Calls {
			msgs = append(msgs, model.Message{Role: model.Tool, ToolCallID: call.ID, Content: call.Observation, IsError: call.Status != StatusOK})
		}
	}
	if t.Text != "" {
		msgs = append(msgs, model.Message{Role: model.Assistant, Content: t.Text})
	}
	reason := ""
	if m, err := parseArgs(c.Args); err == nil {
		if r, ok := m["reason"].(string); ok && r != "" {
			reason = " (" + r + ")"
		}
	}
	return handover{history: msgs, task: fmt.Sprintf("The conversation above was handed over to you%s. Answer the user's last request.", reason)}
}

// handedOff returns the handoff call of t whose agent answered, if any
// (the first, in call order).
func handedOff(t *Turn) *Call {
	for i := range t.Calls {
		c := &t.Calls[i]
		if c.Status == StatusOK && c.Sub != nil && c.Sub.Handoff && c.Sub.Status == SubAnswered {
			return c
		}
	}
	return nil
}

// finalOf is turn n of a loop whose conversation was handed over through
// c: the final answer is c's agent's, no model call of its own.
func finalOf(n int, c *Call) *Turn {
	text, ok := c.Sub.Answer.(string)
	if !ok {
		if b, err := value.Canonical(c.Sub.Answer); err == nil {
			text = string(b)
		}
	}
	return &Turn{N: n, Text: text, Final: true, Answer: c.Sub.Answer}
}

// continueID is the call id of the turn that continues a conversation
// with the agent that answered it last (Session.Agent).
const continueID = "rein_continue"

// continueWith is the first turn of s when it continues with the agent
// s.Agent[0] (a handoff of l): one transfer call, no model call; nil when
// l has no handoff to that agent.
func (l *Loop) continueWith(s *Session) *Turn {
	if len(s.Agent) == 0 {
		return nil
	}
	for _, t := range l.cfg.Tools {
		bt := l.tools[t.Spec().Name]
		if bt == nil || bt.sub == nil || bt.Handoff == "" || bt.sub.def.Name != s.Agent[0] {
			continue
		}
		args := map[string]any{"reason": "the user's last message was answered by " + s.Agent[0] + ": the conversation continues with it"}
		raw, _ := json.Marshal(args)
		return &Turn{N: 1, Calls: []Call{{Index: 1, ID: continueID, Tool: bt.spec.Name, Args: string(raw), Status: StatusChosen, Key: l.key(1, 1), args: args}}}
	}
	return nil
}

// continues reports whether call c of turn t is the transfer that
// continues s with the agent that answered last (continueWith).
func continues(s *Session, t *Turn, c *Call) bool {
	return len(s.Agent) > 0 && t.N == 1 && t.LLMCalls == 0 && c.Index == 1 && c.ID == continueID
}

// AnsweredBy names the agent that gave the final answer of turns when it
// was handed the conversation: the agents handed over to, outermost
// first (a receiving agent may hand it over again); nil when the loop's
// own model answered (or nothing did).
func AnsweredBy(turns []Turn) []string {
	n := len(turns)
	if n < 2 || !turns[n-1].Final || turns[n-1].LLMCalls != 0 {
		return nil
	}
	h := handedOff(&turns[n-2])
	if h == nil {
		return nil
	}
	return append([]string{h.Sub.Agent}, AnsweredBy(h.Sub.Turns)...)
}
