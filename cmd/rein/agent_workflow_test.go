package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rein validate on an agent folder checks its workflow: entries: the
// process workflow's tool loads; a missing folder is located in agent.yaml.
func TestValidateAgentWorkflowTool(t *testing.T) {
	abs, err := filepath.Abs("../../examples/process-workflow")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		workflow string
		ok       bool
		want     string
	}{
		{abs, true, ""},
		{"./nowhere", false, `agent.yaml:4:`},
	} {
		dir := t.TempDir()
		text := "model: m\ninstructions: x\ntools:\n  process_workflow: {workflow: " + c.workflow + "}\n"
		if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("replies: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := cli(t, "validate", dir)
		if (code == exitOK) != c.ok || !strings.Contains(out+stderr, c.want) {
			t.Fatalf("workflow %s: exit %d\n%s%s", c.workflow, code, out, stderr)
		}
	}
}

// clerkFolders writes, under a new folder, a copy of the process workflow
// and an agent folder clerk whose agent calls its workflow tool, then a
// tool that waits for a person's approval, then answers; it returns the
// agent folder and the workflow's folder.
func clerkFolders(t *testing.T) (agentDir, flowDir string) {
	t.Helper()
	root := t.TempDir()
	flowDir = filepath.Join(root, "process-workflow")
	if err := os.CopyFS(flowDir, os.DirFS("../../examples/process-workflow")); err != nil {
		t.Fatal(err)
	}
	agentDir = filepath.Join(root, "clerk")
	files := map[string]string{
		"agent.yaml": `name: clerk
model: m
execute_plan: false
tools:
  process_workflow: {workflow: ../process-workflow}
  file_note:
    command: [cat]
    effect: write
    approval: required
`,
		"script.yaml": `replies:
  - step: agent
    decision: agent
    turn: 1
    tool_calls:
      - {name: process_workflow, args: {action: start, session_id: s1, input: {description: "a welded frame"}}}
  - step: agent
    decision: agent
    turn: 2
    tool_calls:
      - {name: file_note, args: {note: "task started"}}
  - step: agent
    decision: agent
    turn: 3
    contains: "task started"
    raw: "filed"
`,
	}
	if err := os.Mkdir(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(agentDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return agentDir, flowDir
}

// An agent run that called a workflow tool and parked on an approval is
// approved by another rein process, which makes the workflow tool again
// from what the run pinned and finishes the run. A run whose workflow's
// flow.yaml changed meanwhile is refused, saying so.
func TestAgentWorkflowRunApprovedInAnotherProcess(t *testing.T) {
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	agentDir, flowDir := clerkFolders(t)
	db := filepath.Join(t.TempDir(), "rein.db")
	rein := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--db", db)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	start := func() string {
		t.Helper()
		code, out := rein("agent", agentDir, "file a welded frame", "--output", "json")
		var res struct {
			RunID   string `json:"run_id"`
			Pending []struct {
				StepID string `json:"step_id"`
			} `json:"pending"`
		}
		if i := strings.Index(out, "{"); i >= 0 {
			_ = json.Unmarshal([]byte(out[i:]), &res)
		}
		if code != exitWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "agent/turn2/call1" {
			t.Fatalf("rein agent: exit %d\n%s", code, out)
		}
		return res.RunID
	}
	run := start()
	if code, out := rein("runs", "approve", run, "agent/turn2/call1"); code != exitOK || !strings.Contains(out, "filed") {
		t.Fatalf("rein runs approve: exit %d\n%s", code, out)
	}
	if code, out := rein("runs", "show", run); code != exitOK || !strings.Contains(out, "succeeded") || !strings.Contains(out, "process_workflow") {
		t.Fatalf("rein runs show: exit %d\n%s", code, out)
	}

	run = start()
	f, err := os.OpenFile(filepath.Join(flowDir, "flow.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("# edited\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out := rein("runs", "approve", run, "agent/turn2/call1")
	if code == exitOK || !strings.Contains(out, "changed since the run started") {
		t.Fatalf("approve after the workflow changed: exit %d\n%s", code, out)
	}
}

// rein validate refuses a cycle of workflow tools, located: an agent
// folder whose workflow's agent step leads back to that workflow, and a
// flow whose agent step has the flow's own workflow tool.
func TestValidateWorkflowCycles(t *testing.T) {
	root := t.TempDir()
	step := "steps:\n  - id: helper\n    type: agent\n    model: m\n    prompt_template: \"{input.task}\"\n    tools:\n"
	files := map[string]string{
		"a/agent.yaml":  "name: a\nmodel: m\ntools:\n  f_workflow: {workflow: ../f}\n",
		"a/script.yaml": "replies: []\n",
		"f/flow.yaml":   "name: f\n" + step + "      g_workflow: {workflow: ../g}\n",
		"f/script.yaml": "replies: []\n",
		"g/flow.yaml":   "name: g\n" + step + "      f_workflow: {workflow: ../f}\n",
		"g/script.yaml": "replies: []\n",
		"s/flow.yaml":   "name: s\n" + step + "      s_workflow: {workflow: .}\n",
		"s/script.yaml": "replies: []\n",
	}
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for dir, want := range map[string][]string{
		"a": {"a/agent.yaml:4:3: tool f_workflow: a cycle of workflow tools: ", "f/flow.yaml:8:7 tool g_workflow) ", "g/flow.yaml:8:7 tool f_workflow) "},
		"s": {"s/flow.yaml:8:7: step helper: tool s_workflow: a cycle of workflow tools: "},
	} {
		code, out, stderr := cli(t, "validate", filepath.Join(root, dir))
		if code != exitUsage {
			t.Errorf("validate %s: exit %d\n%s%s", dir, code, out, stderr)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("validate %s: missing %q in\n%s", dir, w, stderr)
			}
		}
	}
}
