package http_test

import (
	"net/http"
	"strings"
	"testing"

	reinhttp "github.com/reinhq/rein/server/http"
)

// An agent started over HTTP proposes a refund: its call waits in the
// inbox with the exact args, and an approval there lets it answer.
func TestAgentRunApprovedInInbox(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true, dirs: []string{"../../examples/support-agent", "../../examples/refund"}})
	bob := e.token("bob", "acme", "run", "approve")
	var flows struct {
		Flows []reinhttp.FlowInfo `json:"flows"`
	}
	e.do("GET", "/v1/flows", bob, nil).json(t, &flows)
	if len(flows.Flows) != 2 || flows.Flows[0].Name != "refund" || flows.Flows[0].Kind != "flow" || flows.Flows[1].Name != "support" || flows.Flows[1].Kind != "agent" {
		t.Fatalf("flows = %s", jsonOf(flows))
	}
	if r := e.do("POST", "/v1/runs", bob, map[string]any{"flow": "support", "input": map[string]any{}}); r.status != http.StatusNotFound {
		t.Errorf("an agent started as a flow: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/runs", bob, map[string]any{"agent": "support"}); r.status != http.StatusBadRequest || r.problem(t).Pointer != "/task" {
		t.Errorf("an agent without a task: %d %s", r.status, r.body)
	}
	s := e.start(bob, map[string]any{"agent": "support", "task": "I was charged twice for order 1042"})
	if s.Status != "waiting" {
		t.Fatalf("the support agent is %s, want waiting for the refund's approval", s.Status)
	}
	var inbox struct {
		Approvals []reinhttp.PendingApproval `json:"approvals"`
	}
	e.do("GET", "/v1/approvals", bob, nil).json(t, &inbox)
	if len(inbox.Approvals) != 1 || inbox.Approvals[0].Tool != "issue_refund" || !strings.Contains(string(inbox.Approvals[0].Args), `"ch_2"`) {
		t.Fatalf("inbox = %s", jsonOf(inbox))
	}
	step := inbox.Approvals[0].StepID
	if r := e.do("POST", "/v1/runs/"+s.RunID+"/decisions", bob, map[string]any{"step": step, "decision": "approve"}); r.status != 200 {
		t.Fatalf("approve %s: %d %s", step, r.status, r.body)
	}
	v := e.waitStatus(bob, s.RunID, "succeeded")
	if v.Run.Tenant != "acme" || len(v.Agents["agent"]) == 0 {
		t.Errorf("the run: tenant %q, %d turns", v.Run.Tenant, len(v.Agents["agent"]))
	}
}
