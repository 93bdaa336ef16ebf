package main

import (
	"os"
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
