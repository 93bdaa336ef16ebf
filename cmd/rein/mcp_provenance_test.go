package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPArgumentsAreInferred: what an MCP host sends rein mcp was written
// by its model, so every argument is inferred and the default rule
// inferred-drives-effect holds for a side-effecting tool (a call nobody
// can approve there is refused, and the tool is not called), and for a
// workflow tool's start whose input drives one (the task would count it
// as its user's), while a read-only tool is allowed.
func TestMCPArgumentsAreInferred(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sent := filepath.Join(dir, "sent.log")
	m := serveFolder(t, dir, map[string]string{
		"rein.yaml": fmt.Sprintf(`policy: {defaults: true}
tools:
  send: {command: ["sh", "-c", "cat >> \"$0\"; echo '{\"sent\": true}'", %q], effect: external}
  look: {command: ["sh", "-c", "echo '{\"found\": true}'"], effect: read}
`, sent),
		"flow.yaml": "name: mailer\ninputs: {type: object}\nsteps:\n  - {id: s, skill: write-it}\n  - {id: t, tool: send, args: {to: \"{input.to}\"}}\n  - {id: u, tool: look, args: {}}\n",
	})
	sendText, sendErr := m.call("send", map[string]any{"to": "a@example.com"})
	lookText, lookErr := m.call("look", map[string]any{})
	startText, startErr := m.call("mailer_workflow", map[string]any{"action": "start", "input": map[string]any{"to": "a@example.com"}})
	stderr := m.stop()
	if !sendErr || !strings.Contains(sendText, `"error_type":"policy"`) || !strings.Contains(sendText, "rule inferred-drives-effect") {
		t.Errorf("send: error %v, %s; want refused by inferred-drives-effect", sendErr, sendText)
	}
	if data, err := os.ReadFile(sent); err == nil && len(data) > 0 {
		t.Errorf("send was called past the gate: %s", data)
	}
	if lookErr || !strings.Contains(lookText, `"found":true`) {
		t.Errorf("look (read): error %v, %s; want it answered", lookErr, lookText)
	}
	if !startErr || !strings.Contains(startText, "rule inferred-drives-effect") || strings.Contains(startText, `"task_id"`) {
		t.Errorf("mailer_workflow start: error %v, %s; want refused for approval", startErr, startText)
	}
	if got := loggedDecisions(stderr, "rein mcp"); !containsString(got, "require_approval inferred-drives-effect") {
		t.Errorf("logged decisions %q\n%s", got, stderr)
	}
}

// mcpSession is `rein mcp` (the built binary) serving a flow folder, and
// a go-sdk client connected to it.
type mcpSession struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	cmd    *exec.Cmd
	cs     *sdk.ClientSession
	stderr *strings.Builder
	// stopped: stop ran.
	stopped bool
}

// serveFolder writes files into dir and serves it with rein mcp --db
// dir/rein.db.
func serveFolder(t *testing.T, dir string, files map[string]string) *mcpSession {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return serveMCP(t, filepath.Join(dir, "rein.db"), dir)
}

// serveMCP starts the built rein mcp --db db dirs... and connects the
// go-sdk client to it over its stdin and stdout, as an MCP host does. The
// session ends with the test (stop ends it sooner).
func serveMCP(t *testing.T, db string, dirs ...string) *mcpSession {
	t.Helper()
	return serveMCPWith(t, db, nil, dirs...)
}

// answering is a client that can ask its user (MCP elicitation), whose
// user answers action (accept, decline, cancel) and is counted in asked.
func answering(action string, asked *atomic.Int32) *sdk.ClientOptions {
	return &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		if asked != nil {
			asked.Add(1)
		}
		return &sdk.ElicitResult{Action: action}, nil
	}}
}

// serveMCPWith is serveMCP with a client made with copts.
func serveMCPWith(t *testing.T, db string, copts *sdk.ClientOptions, dirs ...string) *mcpSession {
	t.Helper()
	return serveMCPAt(t, db, copts, "", dirs...)
}

// serveMCPAt is serveMCPWith with a client that asks for protocol
// version ("": the SDK's latest).
func serveMCPAt(t *testing.T, db string, copts *sdk.ClientOptions, version string, dirs ...string) *mcpSession {
	t.Helper()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	m := &mcpSession{t: t, stderr: &strings.Builder{}}
	m.ctx, m.cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	m.cmd = exec.Command(bin, append([]string{"mcp", "--db", db}, dirs...)...)
	m.cmd.Stderr = m.stderr
	if m.cs, err = sdk.NewClient(&sdk.Implementation{Name: "test"}, copts).Connect(m.ctx, &sdk.CommandTransport{Command: m.cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version}); err != nil {
		m.cancel()
		t.Fatalf("%v\n%s", err, m.stderr.String())
	}
	t.Cleanup(func() { m.stop() })
	return m
}

// call calls tool name and returns the answer's text and whether it is an
// error.
func (m *mcpSession) call(name string, args map[string]any) (string, bool) {
	m.t.Helper()
	res, err := m.cs.CallTool(m.ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatal(err)
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

// stop ends the session and returns what rein mcp wrote to stderr; it may
// be called again.
func (m *mcpSession) stop() string {
	if !m.stopped {
		m.stopped = true
		m.cs.Close()
		_ = m.cmd.Wait()
		m.cancel()
	}
	return m.stderr.String()
}
