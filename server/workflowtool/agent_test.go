package workflowtool_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
)

// agentFolder writes an agent folder whose agent.yaml lists tools (YAML
// lines under tools:) and whose script is script.
func agentFolder(t *testing.T, tools, script string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"agent.yaml":  "name: clerk\nmodel: m\ninstructions: file the request\ntools:\n" + tools,
		"script.yaml": script,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// exampleRel is examples/process-workflow relative to dir.
func exampleRel(t *testing.T, dir string) string {
	t.Helper()
	abs, err := filepath.Abs("../../examples/process-workflow")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// An agent.yaml entry with workflow: gives the agent that flow's workflow
// tool: the scripted model starts a task through it, and the task is a run
// of the store, waiting for the parse submission.
func TestAgentDrivesWorkflowTool(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := agentFolder(t, "", `replies:
  - step: agent
    decision: agent
    turn: 1
    tool_calls:
      - {name: process_workflow, args: {action: start, session_id: s1, input: {description: "a welded frame"}}}
  - step: agent
    decision: agent
    turn: 2
    contains: "\"parse\""
    raw: "started; waiting for the parse submission"
`)
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: clerk\nmodel: m\ninstructions: file the request\ntools:\n  process_workflow: {workflow: "+exampleRel(t, dir)+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := &project.LoadOptions{Workflow: func(path string) (tool.Tool, error) {
		w, err := workflowtool.New(path, &workflowtool.Options{Store: st, DeliveryDir: t.TempDir()})
		if err != nil {
			return nil, err
		}
		return w.Tool(), nil
	}}
	p, err := project.LoadAgent(dir, load)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := rein.Open(ctx, rein.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Start(ctx, p, map[string]any{"task": "file a welded frame"}, nil)
	if err != nil || res.Outputs[project.AgentStep] != "started; waiting for the parse submission" {
		t.Fatalf("agent run: %v, %+v", err, res)
	}
	runs, err := st.ListRuns(ctx, &store.ListRunsParams{Session: "s1"})
	if err != nil || len(runs) != 1 || runs[0].Status != "waiting" {
		t.Fatalf("the workflow's task: %v, %+v", err, runs)
	}
	// the run pinned the workflow tool: a program that serves workflow
	// tools rebuilds it, one that does not is told which it lacks.
	again, err := project.LoadRun(ctx, st, res.RunID, load)
	if err != nil {
		t.Fatalf("LoadRun with LoadOptions.Workflow: %v", err)
	}
	if _, ok := again.Tools.Lookup("process_workflow"); !ok {
		t.Error("the rebuilt project has no process_workflow")
	}
	again.Close()
	_, err = project.LoadRun(ctx, st, res.RunID, nil)
	var re *rein.Error
	if !errors.As(err, &re) || re.Hint.Code != fault.HintNeedsTools || len(re.Hint.Tools) != 1 || re.Hint.Tools[0] != "process_workflow" {
		t.Fatalf("LoadRun without LoadOptions.Workflow: %v", err)
	}
}

// A workflow: entry is refused, located in agent.yaml, when the folder is
// missing, when the program serves no workflow tools, and when the entry
// is not named as the tool.
func TestAgentWorkflowToolRefusals(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	serve := &project.LoadOptions{Workflow: func(path string) (tool.Tool, error) {
		w, err := workflowtool.New(path, &workflowtool.Options{Store: st})
		if err != nil {
			return nil, err
		}
		return w.Tool(), nil
	}}
	for _, c := range []struct {
		name, entry string
		opts        *project.LoadOptions
		want        string
	}{
		{"missing folder", "  process_workflow: {workflow: ./nowhere}\n", serve, `workflow "./nowhere" is not a flow folder`},
		{"with command", "  process_workflow: {workflow: ./nowhere, command: [echo]}\n", serve, "command does not go with workflow:"},
		{"no constructor", "  process_workflow: {workflow: EX}\n", nil, "serves no workflow tools"},
		{"misnamed", "  filer: {workflow: EX}\n", serve, `serves the tool "process_workflow": name the entry process_workflow`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := agentFolder(t, "", "replies: []\n")
			entry := strings.ReplaceAll(c.entry, "EX", exampleRel(t, dir))
			if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: clerk\nmodel: m\ninstructions: x\ntools:\n"+entry), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := project.LoadAgent(dir, c.opts)
			var fe *flow.Error
			if err == nil {
				p.Close()
			}
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "agent.yaml:5:") {
				t.Fatalf("got %v, want a located error saying %q", err, c.want)
			}
		})
	}
}
