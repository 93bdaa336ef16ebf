package temporal

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// TestAgentContinueAsNew: an agent run continues as new between two units
// (here after two, as a server's suggestion would make it): the new run
// goes on from the carried session — no model turn is asked again, no call
// runs twice — and the step after the agent gets its answer.
func TestAgentContinueAsNew(t *testing.T) {
	l := newLedger()
	p := loadAgent(t, checkFlow, checkScript, l.tool("refund", false), l.tool("charge", false))
	fs := NewFlows()
	fs.Add(p)
	newEnv := func() *testsuite.TestWorkflowEnvironment {
		var s testsuite.WorkflowTestSuite
		env := newTestEnv(&s)
		Register(env, &Workflow{Flows: fs, ContinueAfterUnits: 2}, &Activities{Flows: fs})
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
		return env
	}
	in, err := StartInput(p, map[string]any{"task": "refund order 1"})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv()
	env.ExecuteWorkflow(p.Flow.Name, in)
	var can *workflow.ContinueAsNewError
	if !env.IsWorkflowCompleted() || !errors.As(env.GetWorkflowError(), &can) {
		t.Fatalf("want a continue-as-new, got %v", env.GetWorkflowError())
	}
	var next Start
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Carry == nil || next.FlowHash != in.FlowHash || len(next.Carry.Agents[0].Turns) != 1 || next.Carry.Steps[0].Status != "pending" {
		t.Fatalf("carried %+v", next.Carry)
	}
	env = newEnv()
	env.ExecuteWorkflow(p.Flow.Name, next)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("continued run: %v", env.GetWorkflowError())
	}
	var st Status
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "succeeded" || string(st.Outputs["agent"]) != `"done"` {
		t.Fatalf("run: %+v", st)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/agent/1/turn1/call1" || l.count("charge") != 1 {
		t.Errorf("refund calls %v, charge %d", got, l.count("charge"))
	}
}
