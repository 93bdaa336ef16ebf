package agent

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// Handing back. A handoff to an agent already on the chain of handoffs
// that leads to the loop (triage → refunds → triage) does not start that
// agent again inside the sub-run: it hands the conversation back. The call
// (journaled as any) settles with Call.Back; the loop that made it stops
// with StatusHandedBack; each loop between it and the agent handed back to
// stops the same way (its transfer call's sub-run ends SubHandedBack), and
// the agent handed back to goes on from its transfer call, whose
// observation says who handed back, why, and what they said and did. The
// root loop (no Config.path) takes every hand-back that reaches it. A
// hand-back cannot cross an agent called as a tool: such a sub-run fails
// (its caller asked a question; the conversation is not the sub-agent's to
// pass on). Every transfer, either way, counts against
// Budgets.MaxHandoffs over the whole chain (Usage.Handoffs), so a team
// that hands the conversation back and forth stops with a max_handoffs
// budget error.

// DefaultMaxHandoffs is Budgets.MaxHandoffs when none is given.
const DefaultMaxHandoffs = 5

// HandBack is a transfer of the conversation back to an agent on the
// chain: the agent it goes to (To, its folder ToPath), the agent that
// handed it back (By) and why.
type HandBack struct {
	To     string `json:"to"`
	ToPath string `json:"to_path,omitempty"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// isBack reports whether t, a handoff, goes to an agent on path (or one
// its Definition marks Back): a hand-back, not a new sub-run.
func isBack(t Tool, path []string) bool {
	if t.Handoff == "" || t.Agent == nil {
		return false
	}
	return t.Agent.Back || slices.Contains(path, agentID(t.Agent))
}

func agentID(d *Definition) string {
	if d.Path != "" {
		return d.Path
	}
	return d.Name
}

// backSpec is the spec a hand-back tool is offered with.
func backSpec(t Tool) tool.Spec {
	spec := t.Spec()
	spec.InputSchema = json.RawMessage(handoffInputSchema)
	spec.OutputSchema = nil
	spec.Description = "Hand the conversation back to the agent " + t.Agent.Name + ": it answers the user from here on (call it alone, as the turn's only call). " + t.Agent.Description
	spec.Effect, spec.Idempotent = tool.EffectNone, true
	return spec
}

// handBack is the tool of a hand-back call c: it records the transfer on
// c and answers what the loop's model is told.
func (l *Loop) handBack(c *Call, bt *boundTool, args map[string]any) any {
	reason, _ := args["reason"].(string)
	c.Back = &HandBack{To: bt.back.Name, ToPath: agentID(bt.back), Reason: reason}
	return map[string]any{"handed_back_to": bt.back.Name}
}

// backOf returns the hand-back a settled turn t made, if any: a call of
// its own (Call.Back) or of a sub-run it handed over to (SubRun.Back).
func backOf(t *Turn) *HandBack {
	for i := range t.Calls {
		c := &t.Calls[i]
		if c.Status != StatusOK {
			continue
		}
		if c.Back != nil {
			return c.Back
		}
		if c.Sub != nil && c.Sub.Status == SubHandedBack && c.Sub.Back != nil {
			return c.Sub.Back
		}
	}
	return nil
}

// own reports whether b goes to this loop's agent: the last agent of
// its path, or any for the root loop.
func (l *Loop) own(b *HandBack) bool {
	if len(l.cfg.path) == 0 {
		return true
	}
	return l.cfg.path[len(l.cfg.path)-1] == b.ToPath
}

// handedBack settles a sub-run whose agent handed the conversation back
// (res): a handoff's sub-run ends SubHandedBack and its observation tells
// the agent it goes to what happened; a sub-agent called as a tool cannot
// hand the conversation back, so its sub-run fails.
func handedBack(sr *SubRun, agent string, res *Result) any {
	b := *res.Back
	if b.By == "" {
		b.By = agent
	}
	if !sr.Handoff {
		sr.Status, sr.ErrorType = SubFailed, "handoff"
		sr.Error = fmt.Sprintf("agent %s handed the conversation back to %s, but it was called as a tool, not handed the conversation: only an agent the conversation was transferred to can hand it back", b.By, b.To)
		return subAnswer(sr)
	}
	sr.Status, sr.Back = SubHandedBack, &b
	note := map[string]any{"handed_back_by": b.By, "to": b.To,
		"note": "The conversation is back with " + b.To + ": answer the user's last request, or transfer it again."}
	if b.Reason != "" {
		note["reason"] = b.Reason
	}
	said, calls := subStory(sr.Turns, nil, nil)
	if len(said) > 0 {
		note["said"] = said
	}
	if len(calls) > 0 {
		note["calls"] = calls
	}
	return note
}

// maxStory bounds what a hand-back's observation repeats of the sub-run:
// its last texts and calls.
const maxStory = 12

// subStory lists what the turns of a handed-over sub-run said and did,
// its own handoffs' sub-runs included, the last maxStory of each.
func subStory(turns []Turn, said []string, calls []map[string]any) ([]string, []map[string]any) {
	for i := range turns {
		t := &turns[i]
		if t.Text != "" {
			said = append(said, cut(t.Text, 600))
		}
		for j := range t.Calls {
			c := &t.Calls[j]
			if c.Back != nil {
				continue
			}
			if c.Sub != nil && c.Sub.Handoff {
				said, calls = subStory(c.Sub.Turns, said, calls)
				continue
			}
			calls = append(calls, map[string]any{"tool": c.Tool, "status": string(c.Status), "observation": cut(c.Observation, 400)})
		}
	}
	if len(said) > maxStory {
		said = said[len(said)-maxStory:]
	}
	if len(calls) > maxStory {
		calls = calls[len(calls)-maxStory:]
	}
	return said, calls
}

// handoffsAsked counts the calls of a model reply that transfer the
// conversation (handoffs and hand-backs).
func (l *Loop) handoffsAsked(calls []model.ToolCall) int {
	n := 0
	for _, tc := range calls {
		if b, ok := l.named(tc.Name); ok && b.Handoff != "" {
			n++
		}
	}
	return n
}

// checkHandoffs refuses a turn that would transfer the conversation more
// often than Budgets.MaxHandoffs allows, the chain's transfers counted.
func (l *Loop) checkHandoffs(turn, asked, used int) error {
	limit := l.cfg.Budgets.MaxHandoffs
	if asked == 0 || used+asked <= limit {
		return nil
	}
	return fault.BudgetErr("max_handoffs", "agent: handoff budget exhausted: turn %d transfers the conversation again after %d transfer(s) (budgets.max_handoffs: %d); its calls did not run: a team's agents hand it back and forth at most that often", turn, used, limit)
}
