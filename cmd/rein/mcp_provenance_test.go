package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPArgumentsAreInferred: what an MCP host sends rein mcp was written
// by its model, so every argument is inferred and the default rule
// inferred-drives-effect holds for a side-effecting tool (a call nobody
// can approve there is refused, and the tool is not called), while a
// read-only tool, and a workflow tool's start (its task's steps meet the
// gate themselves), are allowed.
func TestMCPArgumentsAreInferred(t *testing.T) {
	t.Parallel()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sent := filepath.Join(dir, "sent.log")
	files := map[string]string{
		"rein.yaml": fmt.Sprintf(`policy: {defaults: true}
tools:
  send: {command: ["sh", "-c", "cat >> \"$0\"; echo '{\"sent\": true}'", %q], effect: external}
  look: {command: ["sh", "-c", "echo '{\"found\": true}'"], effect: read}
`, sent),
		"flow.yaml": "name: mailer\ninputs: {type: object}\nsteps:\n  - {id: s, skill: write-it}\n  - {id: t, tool: send, args: {to: \"{input.to}\"}}\n  - {id: u, tool: look, args: {}}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "--db", filepath.Join(dir, "rein.db"), dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	call := func(name string, args map[string]any) (string, bool) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*sdk.TextContent).Text, res.IsError
	}
	sendText, sendErr := call("send", map[string]any{"to": "a@example.com"})
	lookText, lookErr := call("look", map[string]any{})
	startText, startErr := call("mailer_workflow", map[string]any{"action": "start", "input": map[string]any{"to": "a@example.com"}})
	cs.Close()
	_ = cmd.Wait()
	if !sendErr || !strings.Contains(sendText, `"error_type":"policy"`) || !strings.Contains(sendText, "by rule inferred-drives-effect") {
		t.Errorf("send: error %v, %s; want refused by inferred-drives-effect", sendErr, sendText)
	}
	if data, err := os.ReadFile(sent); err == nil && len(data) > 0 {
		t.Errorf("send was called past the gate: %s", data)
	}
	if lookErr || !strings.Contains(lookText, `"found":true`) {
		t.Errorf("look (read): error %v, %s; want it answered", lookErr, lookText)
	}
	if startErr || !strings.Contains(startText, `"task_id"`) {
		t.Errorf("mailer_workflow start: error %v, %s; want a task", startErr, startText)
	}
	if got := loggedDecisions(stderr.String(), "rein mcp"); !containsString(got, "require_approval inferred-drives-effect") {
		t.Errorf("logged decisions %q\n%s", got, stderr.String())
	}
}
