package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPStdio drives `rein mcp` as an MCP host would: the go-sdk client
// spawns it and talks JSON-RPC over its stdin and stdout.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	m := serveMCP(t, ":memory:", "testdata/mcp")
	ctx, cs := m.ctx, m.cs
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
		if tl.Name == "echo" {
			if s, _ := json.Marshal(tl.InputSchema); !strings.Contains(string(s), `"required":["text"]`) {
				t.Errorf("echo input schema = %s", s)
			}
		}
	}
	if strings.Join(names, ",") != "echo,mcp_tools_workflow,refuse,runs_list,runs_show" {
		t.Errorf("tools = %v", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"text":"hi"}` {
		t.Errorf("echo: %+v", res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "refuse", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !res.IsError || !strings.Contains(text, `"error_type":"business"`) || !strings.Contains(text, "the ledger is closed") {
		t.Errorf("refuse: error %v, %s", res.IsError, text)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "runs_list", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"runs":[]}` {
		t.Errorf("runs_list: %+v", res.Content[0])
	}
}

// TestMCPStdioMalformed sends lines that are not JSON-RPC: each gets a
// protocol error and the session goes on.
func TestMCPStdioMalformed(t *testing.T) {
	t.Parallel()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--db", ":memory:", "testdata/mcp")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	ask := func(line string) map[string]any {
		t.Helper()
		if _, err := stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("after %s: no answer (%v)", line, lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("answer %q: %v", lines.Text(), err)
		}
		return m
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	for _, c := range []struct {
		line string
		code float64
	}{
		{`this is not json`, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, -32700},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600},
		{`{"id":2,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":3,"method":42}`, -32600},
	} {
		if got := code(ask(c.line)); got != c.code {
			t.Errorf("%s: code %v, want %v", c.line, got, c.code)
		}
	}
	init := ask(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if init["id"] != float64(7) || init["result"] == nil {
		t.Errorf("initialize after bad lines: %v", init)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("rein mcp exited with %v after its stdin closed, want 0", err)
	}
}
