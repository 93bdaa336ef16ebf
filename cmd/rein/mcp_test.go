package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// the one run is the server's ledger of the calls above.
	if text := res.Content[0].(*sdk.TextContent).Text; res.IsError || strings.Count(text, `"id"`) != 1 || !strings.Contains(text, `"flow":"mcp"`) {
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

// TestMCPTypeScriptSDK: the official MCP TypeScript SDK's client sees a
// tool error of a tool with an output schema as the error it is; v1 checks
// structured content against the output schema even when isError is set,
// and threw -32602 when rein sent the error as structured content. It runs
// when node is on PATH and REIN_TEST_MCP_TS_SDK names a node_modules
// folder holding @modelcontextprotocol/sdk (npm install --prefix DIR
// @modelcontextprotocol/sdk@1; DIR/node_modules); otherwise it skips.
func TestMCPTypeScriptSDK(t *testing.T) {
	t.Parallel()
	modules := os.Getenv("REIN_TEST_MCP_TS_SDK")
	node, err := exec.LookPath("node")
	if modules == "" || err != nil {
		t.Skip("needs node and REIN_TEST_MCP_TS_SDK=DIR/node_modules (npm install --prefix DIR @modelcontextprotocol/sdk@1)")
	}
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skipf("REIN_TEST_MCP_TS_SDK=%s holds no @modelcontextprotocol/sdk: %v", modules, err)
	}
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "testdata/tssdk/call_error.mjs", modules, bin, "testdata/mcp", "refuse").Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var seen struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
		Threw   string `json:"threw"`
	}
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	var envelope map[string]any
	if seen.Threw != "" || !seen.IsError || json.Unmarshal([]byte(seen.Text), &envelope) != nil ||
		envelope["error_type"] != "business" || !strings.Contains(seen.Text, "the ledger is closed") {
		t.Errorf("the TypeScript SDK's host saw %+v; want the error envelope as text", seen)
	}
}

// TestMCPStdioIDsAndBounds sends raw JSON-RPC lines to the built rein mcp,
// as a client written in any language does: every answer carries its
// request's id exactly as sent (a big integer, 1.5, an escaped string), a
// request with a null id is refused, and a 2 KB line nested 1,000 deep is
// refused with its id while the server stays up. All lines are written
// before any answer is read and stdin is closed: each request read is
// still answered, and rein mcp exits 0.
func TestMCPStdioIDsAndBounds(t *testing.T) {
	t.Parallel()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	deep := `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"echo","arguments":{"text":` +
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}}`
	requests := []struct{ line, id, want string }{
		{`{"jsonrpc":"2.0","id":12345678901234567890123,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, `12345678901234567890123`, "result"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ``, ""},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `1.5`, "result"},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, `9007199254740993`, "result"},
		{`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, `1e2`, "result"},
		{`{"jsonrpc":"2.0","id":"a\u0041<b>","method":"ping"}`, `"a\u0041<b>"`, "result"},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, `null`, "-32600"},
		{deep, `"deep"`, "-32600"},
		{`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still up"}}}`, `-7`, `still up`},
	}
	cmd := exec.Command(bin, "mcp", "--db", ":memory:", "testdata/mcp")
	var in strings.Builder
	for _, r := range requests {
		in.WriteString(r.line + "\n")
	}
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rein mcp: %v (want exit 0 when stdin ends)\n%s", err, stderr.String())
	}
	// Answers come in any order: match them by id, compared as raw JSON.
	byID := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var a struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("answer %q is not JSON: %v", line, err)
		}
		byID[string(a.ID)] = line
	}
	for _, r := range requests {
		if r.id == "" {
			continue
		}
		got, ok := byID[r.id]
		if !ok {
			t.Errorf("no answer with id %s (its request: %.80s); answers:\n%s", r.id, r.line, out)
			continue
		}
		if !strings.Contains(got, r.want) {
			t.Errorf("id %s: answer %.200s, want it to hold %q", r.id, got, r.want)
		}
	}
	if len(byID) != len(requests)-1 {
		t.Errorf("%d answers, want %d:\n%s", len(byID), len(requests)-1, out)
	}
}
