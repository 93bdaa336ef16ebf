package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `rein mcp` serves a flow whose agent step declares a workflow tool
// (workflow: ../process-workflow): the flow loads, the agent's workflow
// tool is served beside the flow's own, and it drives tasks of the
// process workflow. Served with the process workflow's own folder, that
// tool is listed once.
func TestMCPServesAFlowWithAgentWorkflowTools(t *testing.T) {
	t.Parallel()
	root, desk := deskFolders(t)
	db := filepath.Join(root, "rein.db")
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"the desk alone", []string{desk}, "desk_workflow,process_workflow,runs_list,runs_show"},
		{"both folders", []string{root}, "desk_workflow,process_workflow,runs_list,runs_show"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// the start's input is the host's: its user approves it.
			m := serveMCPWith(t, db, answering("accept", nil), tc.dirs...)
			listed, err := m.cs.ListTools(m.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range listed.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if got := strings.Join(names, ","); got != tc.want {
				t.Fatalf("tools %s, want %s", got, tc.want)
			}
			text, isErr := m.call("process_workflow", map[string]any{
				"action": "start", "session_id": tc.name, "input": map[string]any{"description": "a welded frame"}})
			if isErr || !strings.Contains(text, `"task_id"`) {
				t.Fatalf("process_workflow start: error %v, %s", isErr, text)
			}
		})
	}
}

// `rein tool` drives a flow whose agent step declares a workflow tool.
func TestToolDrivesAFlowWithAgentWorkflowTools(t *testing.T) {
	t.Parallel()
	root, desk := deskFolders(t)
	code, out, stderr := cli(t, "tool", desk, "start", "--db", filepath.Join(root, "rein.db"), "--session", "s1", "--input-json", `{"task":"file it"}`)
	if code != 0 || !strings.Contains(out, `"status": "succeeded"`) || !strings.Contains(out, `"output": "done"`) {
		t.Fatalf("rein tool desk start: exit %d\n%s%s", code, out, stderr)
	}
}

// deskFolders writes a flow folder, desk, whose agent step declares the
// workflow tool of a copy of examples/process-workflow beside it; the
// agent answers "done" at once.
func deskFolders(t *testing.T) (root, desk string) {
	t.Helper()
	root = t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "process-workflow"), os.DirFS("../../examples/process-workflow")); err != nil {
		t.Fatal(err)
	}
	desk = filepath.Join(root, "desk")
	if err := os.Mkdir(desk, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"flow.yaml": `name: desk
steps:
  - id: helper
    type: agent
    model: m
    prompt_template: "{input.task}"
    tools:
      process_workflow: {workflow: ../process-workflow}
`,
		"script.yaml": "replies:\n  - {step: helper, decision: agent, turn: 1, raw: done}\n",
	} {
		if err := os.WriteFile(filepath.Join(desk, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, desk
}

// An agent's workflow tool and a served folder's that share a name but
// drive different flow folders are refused, before anything is served.
func TestMCPRefusesTwoWorkflowToolsOfOneName(t *testing.T) {
	t.Parallel()
	root, desk := deskFolders(t)
	other := filepath.Join(root, "other")
	if err := os.CopyFS(other, os.DirFS("../../examples/process-workflow")); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "mcp", "--db", filepath.Join(root, "rein.db"), desk, other)
	if code != exitUsage || !strings.Contains(stderr, "an agent's workflow tool process_workflow drives "+filepath.Join(root, "process-workflow")) ||
		!strings.Contains(stderr, "serve the folders separately") {
		t.Fatalf("rein mcp: exit %d\n%s%s", code, out, stderr)
	}
}
