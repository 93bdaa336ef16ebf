package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flowFolders takes a flow folder as it is, and a folder of flow folders
// as its subfolders that hold a flow, sorted; a folder with neither is an
// error saying what to give.
func TestFlowFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, sub := range []string{"b", "a", "notes"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, sub, "flow.yaml"), []byte("name: x\nsteps: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := flowFolders(dir)
	if err != nil || len(got) != 2 || got[0] != filepath.Join(dir, "a") || got[1] != filepath.Join(dir, "b") {
		t.Errorf("folder of flows: %v, %v", got, err)
	}
	if got, err := flowFolders(filepath.Join(dir, "a")); err != nil || len(got) != 1 {
		t.Errorf("flow folder: %v, %v", got, err)
	}
	// an agent folder is served as its one-step flow
	if err := os.WriteFile(filepath.Join(dir, "notes", "agent.yaml"), []byte("model: m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := flowFolders(filepath.Join(dir, "notes")); err != nil || len(got) != 1 {
		t.Errorf("agent folder: %v, %v", got, err)
	}
	if got, err := flowFolders(dir); err != nil || len(got) != 3 || got[2] != filepath.Join(dir, "notes") {
		t.Errorf("folder of flows and agents: %v, %v", got, err)
	}
	if err := os.Remove(filepath.Join(dir, "notes", "agent.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := flowFolders(filepath.Join(dir, "notes")); err == nil || !strings.Contains(err.Error(), "holds no flow.yaml nor agent.yaml, and none of its folders does") {
		t.Errorf("empty folder: %v", err)
	}
}
