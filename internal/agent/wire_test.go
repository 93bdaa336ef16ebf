package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// A tool whose name providers refuse (an MCP tool's crm.find) is offered
// as crm__find; the model may call it so, also inside execute_plan, and
// sees its earlier calls under that name. The transcript keeps crm.find.
func TestWireNames(t *testing.T) {
	t.Parallel()
	c := &counted{}
	find := c.tool("crm.find", tool.EffectRead, true, nil)
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("1", "crm__find", `{"order":"1"}`), tc("2", "crm.find", `{"order":"2"}`)),
		callsReply(tc("3", "execute_plan", `{"objective":"x","steps":[{"id":"a","tool":"crm__find","args":{"order":"3"}}]}`)),
		textReply("done"),
	}}
	l := newLoop(t, agent.Config{Model: m, Tools: []agent.Tool{{Tool: find}}, ExecutePlan: &agent.PlanOptions{}})
	s := &agent.Session{Task: "find"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if got := c.n.Load(); got != 3 {
		t.Fatalf("the tool ran %d times, want 3 (two calls and one plan step)", got)
	}
	var offered []string
	for _, d := range m.requests[0].Tools {
		offered = append(offered, d.Name)
	}
	if strings.Join(offered, ",") != "crm__find,execute_plan" {
		t.Errorf("offered %v", offered)
	}
	for i, call := range s.Turns[0].Calls {
		if call.Tool != "crm.find" || call.Status != agent.StatusOK {
			t.Errorf("turn 1 call %d: %+v", i+1, call)
		}
	}
	if obs := s.Turns[1].Calls[0].Observation; !strings.Contains(obs, `"success":true`) {
		t.Errorf("the plan: %s", obs)
	}
	for _, msg := range m.requests[1].Messages {
		for _, call := range msg.ToolCalls {
			if call.Name != "crm__find" {
				t.Errorf("the history names a call %q, not the name the model was offered", call.Name)
			}
		}
	}
}
