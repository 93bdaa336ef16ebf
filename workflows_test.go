package rein_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
)

// agentFlow is a flow named name whose one agent step has tools (YAML
// lines under tools:).
func agentFlow(name, tools string) string {
	return "name: " + name + "\nsteps:\n  - id: helper\n    type: agent\n    model: m\n    prompt_template: \"{input.task}\"\n    tools:\n" + tools
}

// writeTree writes files (by path relative to a new folder) and returns
// the folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// serving returns LoadOptions that serve workflow tools over a SQLite
// store, their flows' own agents served the same way, and counts the
// workflow tools made.
func serving(t *testing.T) (*project.LoadOptions, *atomic.Int32) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var made atomic.Int32
	load := &project.LoadOptions{Script: "", NoDefaults: false}
	load.Workflow = func(path string) (tool.Tool, error) {
		made.Add(1)
		w, err := workflowtool.New(path, &workflowtool.Options{Store: st, Load: load})
		if err != nil {
			return nil, err
		}
		return w.Tool(), nil
	}
	return load, &made
}

// A cycle of workflow tools is refused when the flow or agent loads,
// before any workflow tool is made, located at the tools entry where the
// chain starts and naming every link of it.
func TestWorkflowToolCycles(t *testing.T) {
	t.Parallel()
	script := "replies: []\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		load  string // the folder loaded
		agent bool
		want  []string
	}{
		{"a flow using itself", map[string]string{
			"f/flow.yaml":   agentFlow("f", "      f_workflow: {workflow: .}\n"),
			"f/script.yaml": script,
		}, "f", false, []string{
			"f/flow.yaml:8:7: step helper: tool f_workflow: a cycle of workflow tools: ",
			"f/flow.yaml → (tool f_workflow) ", "f/flow.yaml: a flow cannot reach itself through its agents' workflow tools",
		}},
		{"an agent whose workflow's agent leads back", map[string]string{
			"a/agent.yaml":  "name: a\nmodel: m\ntools:\n  f_workflow: {workflow: ../f}\n",
			"a/script.yaml": script,
			"f/flow.yaml":   agentFlow("f", "      g_workflow: {workflow: ../g}\n"),
			"g/flow.yaml":   agentFlow("g", "      lookup:\n      f_workflow: {workflow: ../f}\n"),
		}, "a", true, []string{
			"a/agent.yaml:4:3: tool f_workflow: a cycle of workflow tools: ",
			"a/agent.yaml → (tool f_workflow) ",
			"/f/flow.yaml → (", "/f/flow.yaml:8:7 tool g_workflow) ",
			"/g/flow.yaml → (", "/g/flow.yaml:9:7 tool f_workflow) ",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := writeTree(t, c.files)
			load, made := serving(t)
			var err error
			if c.agent {
				_, err = project.LoadAgent(filepath.Join(root, c.load), load)
			} else {
				_, err = project.Load(filepath.Join(root, c.load), load)
			}
			var fe *flow.Error
			if !errors.As(err, &fe) {
				t.Fatalf("load: %v, want located problems", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in\n%v", w, err)
				}
			}
			if n := made.Load(); n != 0 {
				t.Errorf("%d workflow tools were made before the cycle was refused", n)
			}
		})
	}
}

// A chain of workflow tools without a cycle loads: the agent's workflow
// flow has an agent step with a workflow tool of its own.
func TestWorkflowToolChain(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"a/agent.yaml":  "name: a\nmodel: m\ntools:\n  f_workflow: {workflow: ../f}\n",
		"a/script.yaml": "replies: []\n",
		"f/flow.yaml":   agentFlow("f", "      g_workflow: {workflow: ../g}\n"),
		"f/script.yaml": "replies: []\n",
		"g/flow.yaml":   "name: g\nsteps:\n  - {id: s, skill: write}\n",
	})
	load, made := serving(t)
	p, err := project.LoadAgent(filepath.Join(root, "a"), load)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, ok := p.Tools.Lookup("f_workflow"); !ok || made.Load() != 2 {
		t.Fatalf("f_workflow registered: %v; workflow tools made: %d, want 2 (f's, and g's for f's agent)", ok, made.Load())
	}
}
