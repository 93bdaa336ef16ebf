package flow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
)

func TestParseAgent(t *testing.T) {
	t.Parallel()
	src := `name: support
model: gpt-4o-mini
instructions: Help customers with orders.
tools:
  lookup_order:
  issue_refund: {approval: required}
  list_charges:
    command: [./tools/charges.sh]
    effect: read
    approval: none
budgets: {max_turns: 8, max_tool_calls: 12, max_tokens: 20000, timeout: 2m}
max_observation_bytes: 2048
output_schema:
  type: object
  required: [answer]
  properties: {answer: {type: string}}
`
	a, err := flow.ParseAgent([]byte(src), "agents/support/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a.Model != "gpt-4o-mini" || len(a.Tools) != 3 || a.OutputSchema == nil || a.MaxObservationBytes != 2048 {
		t.Fatalf("%+v", a)
	}
	if a.Tools[0].Name != "lookup_order" || a.Tools[0].Decl != nil || a.Tools[0].Approval {
		t.Errorf("tools[0] %+v", a.Tools[0])
	}
	if !a.Tools[1].Approval || a.Tools[2].Decl == nil || a.Tools[2].Decl.Dir != "agents/support" {
		t.Errorf("tools %+v %+v", a.Tools[1], a.Tools[2])
	}
	if a.Budgets != (flow.AgentBudgets{MaxTurns: 8, MaxToolCalls: 12, MaxTokens: 20000, Timeout: 2 * time.Minute}) {
		t.Errorf("budgets %+v", a.Budgets)
	}
}

func TestParseAgentRejects(t *testing.T) {
	t.Parallel()
	src := `model: gpt-4o-mini
instructons: typo
tools:
  refund: {approval: maybe}
  lookup: {effect: read}
  bad name: {}
budgets: {max_turns: 0, max_calls: 3}
`
	_, err := flow.ParseAgent([]byte(src), "agent.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`agent.yaml:2:1: unknown field "instructons" in agent.yaml`,
		`agent.yaml:4:22: tool refund: approval must be required or none, not "maybe"`,
		`agent.yaml:5:12: tool lookup: effect belongs to an exec tool declaration, which needs command:`,
		`agent.yaml:6:3: tool name "bad name"`,
		`agent.yaml:7:22: budgets: max_turns must be at least 1`,
		`agent.yaml:7:25: unknown field "max_calls" in budgets`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if _, err := flow.ParseAgent([]byte("instructions: x\n"), "agent.yaml"); err == nil || !strings.Contains(err.Error(), "agent.yaml:1:1: agent.yaml needs model:") {
		t.Errorf("no model: %v", err)
	}
}
