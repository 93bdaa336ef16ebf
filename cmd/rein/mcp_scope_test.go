package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPHidesEveryFoldersSecrets: rein mcp over two folders, where only
// the second names a secret (rein.yaml secrets:), stores none of it in clear
// when a run of the first one's workflow meets it: not in the journal,
// not in runs_show, not in the store's bytes.
func TestMCPHidesEveryFoldersSecrets(t *testing.T) {
	// not parallel: it sets the environment rein mcp inherits.
	const secret = "b-folder-private-value-0123"
	t.Setenv("B_PRIVATE_VALUE", secret)
	root := t.TempDir()
	files := map[string]string{
		"a/flow.yaml": `name: alpha
steps:
  - {id: dump, tool: dump, args: {}}
tools:
  dump: {command: ["sh", "-c", "cat >/dev/null; cat ../shared.json"], effect: read}
`,
		"b/flow.yaml": `name: beta
steps:
  - {id: noop, tool: noop, args: {}}
tools:
  noop: {command: ["sh", "-c", "cat >/dev/null; echo '{}'"], effect: none}
`,
		"b/rein.yaml": "secrets: [B_PRIVATE_VALUE]\n",
		"shared.json": `{"seen": "` + secret + `"}`,
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(root, "rein.db")
	m := serveMCP(t, db, filepath.Join(root, "a"), filepath.Join(root, "b"))
	started, isErr := m.call("alpha_workflow", map[string]any{"action": "start", "input": map[string]any{}})
	if isErr || !strings.Contains(started, "[REDACTED]") {
		t.Fatalf("start: %s", started)
	}
	shown, _ := m.call("runs_list", map[string]any{})
	stderr := m.stop()
	places := map[string]string{"start": started, "runs_list": shown, "stderr": stderr}
	for _, f := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(f)
		places[filepath.Base(f)] = string(b)
	}
	for where, text := range places {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds folder b's secret in clear", where)
		}
	}
}

// TestMCPAgentWorkflowToolHidesEveryFoldersSecrets: rein mcp over two
// folders, where only b names a secret (rein.yaml secrets:); a's agent
// declares the workflow tool of a third folder, c, and passes b's secret
// to it. c's task, kept by that agent-declared tool, stores none of it in
// clear: every folder's secrets hide everywhere the process writes.
func TestMCPAgentWorkflowToolHidesEveryFoldersSecrets(t *testing.T) {
	// not parallel: it sets the environment rein mcp inherits.
	const secret = "b-folder-agent-value-4567"
	t.Setenv("B_AGENT_VALUE", secret)
	root := t.TempDir()
	files := map[string]string{
		"a/flow.yaml": `name: alpha
steps:
  - id: desk
    type: agent
    model: m
    prompt_template: pass it on
    tools:
      gamma_workflow: {workflow: ../c}
`,
		"a/script.yaml": `replies:
  - step: desk
    decision: agent
    turn: 1
    tool_calls:
      - {name: gamma_workflow, args: {action: start, input: {code: "` + secret + `"}}}
  - step: desk
    decision: agent
    turn: 2
    raw: done
`,
		"b/flow.yaml": `name: beta
steps:
  - {id: noop, tool: noop, args: {}}
tools:
  noop: {command: ["sh", "-c", "cat >/dev/null; echo '{}'"], effect: none}
`,
		"b/rein.yaml": "secrets: [B_AGENT_VALUE]\n",
		"c/flow.yaml": `name: gamma
steps:
  - {id: keep, tool: keep, args: {code: "{input.code}"}}
tools:
  keep: {command: ["sh", "-c", "cat >/dev/null; echo '{\"kept\": true}'"], effect: none}
`,
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(root, "rein.db")
	m := serveMCP(t, db, filepath.Join(root, "a"), filepath.Join(root, "b"))
	started, isErr := m.call("alpha_workflow", map[string]any{"action": "start", "input": map[string]any{}})
	if isErr {
		t.Fatalf("start: %s", started)
	}
	listed, _ := m.call("runs_list", map[string]any{})
	if !strings.Contains(listed, "gamma") {
		t.Fatalf("the agent did not start gamma's task: %s", listed)
	}
	stderr := m.stop()
	places := map[string]string{"start": started, "runs_list": listed, "stderr": stderr}
	for _, f := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(f)
		places[filepath.Base(f)] = string(b)
	}
	for where, text := range places {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds folder b's secret in clear", where)
		}
	}
}
