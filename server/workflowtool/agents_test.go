package workflowtool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/server/workflowtool"
)

// AgentTools makes the workflow tools of a chain of agents: desk's agent
// declares the workflow tool of a flow (relay) whose own agent declares
// process_workflow. Both load, and trusted refuses a workflow flow that
// declares tools of its own, naming the folder.
func TestAgentTools(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	root := t.TempDir()
	agentFlow := func(name, toolName, folder string) string {
		return "name: " + name + "\nsteps:\n  - id: a\n    type: agent\n    model: m\n    prompt_template: go\n    tools:\n      " +
			toolName + ": {workflow: " + folder + "}\n"
	}
	abs, err := filepath.Abs("../../examples/process-workflow")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"relay", "desk", "coded", "uses-coded"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"relay", "desk", "uses-coded"} {
		writeFile(t, filepath.Join(root, d, "script.yaml"), "replies: []\n")
	}
	writeFile(t, filepath.Join(root, "relay", "flow.yaml"), agentFlow("relay", "process_workflow", abs))
	writeFile(t, filepath.Join(root, "desk", "flow.yaml"), agentFlow("desk", "relay_workflow", "../relay"))
	writeFile(t, filepath.Join(root, "coded", "flow.yaml"), "name: coded\ntools:\n  ping: {command: [\"true\"], effect: none}\nsteps:\n  - {id: s, tool: ping}\n")
	writeFile(t, filepath.Join(root, "uses-coded", "flow.yaml"), agentFlow("uses_coded", "coded_workflow", "../coded"))

	p, err := project.Load(filepath.Join(root, "desk"), &project.LoadOptions{Workflow: workflowtool.AgentTools(st, false)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	relay, ok := p.Tools.Lookup("relay_workflow")
	if !ok {
		t.Fatalf("desk's tools %v: no relay_workflow", p.Tools.Names())
	}
	// desk loaded, so relay's flow did, its agent given process_workflow
	// (without a Workflow it is refused); its tool answers from st.
	out, err := relay.Call(context.Background(), map[string]any{"action": "status", "task_id": "none"})
	if err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("relay_workflow status of no task: %v, %v", out, err)
	}

	if _, err := project.Load(filepath.Join(root, "uses-coded"), &project.LoadOptions{Workflow: workflowtool.AgentTools(st, true)}); err == nil ||
		!strings.Contains(err.Error(), "workflow tool of "+filepath.Join(root, "coded")) {
		t.Errorf("trusted, a workflow flow with tools: of its own: %v", err)
	}
	if p, err := project.Load(filepath.Join(root, "uses-coded"), &project.LoadOptions{Workflow: workflowtool.AgentTools(st, false)}); err != nil {
		t.Errorf("untrusted, a workflow flow with tools: of its own: %v", err)
	} else {
		p.Close()
	}
}

// Actions are the actions the input schema offers, in its order.
func TestActionsAreTheSchemas(t *testing.T) {
	t.Parallel()
	var s struct {
		Properties struct {
			Action struct {
				Enum []string `json:"enum"`
			} `json:"action"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(workflowtool.InputSchema(), &s); err != nil {
		t.Fatal(err)
	}
	if got := workflowtool.Actions(); !slices.Equal(got, s.Properties.Action.Enum) || len(got) != 6 {
		t.Errorf("Actions() = %v, the schema's enum %v", got, s.Properties.Action.Enum)
	}
}
