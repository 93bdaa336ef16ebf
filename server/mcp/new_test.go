package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/store"
)

// syncBuffer is a log a test reads while the server may write it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNewServesAFolder is a Go program serving a flow folder over
// streamable HTTP with a Client of its own (SQLite): the go-sdk client
// lists the flow's tools, its workflow tool and the runs tools; a call
// is answered; a call the folder's policy refuses is an MCP tool error
// and a line of the log; a task started through the workflow tool is a
// run of the Client's store, which runs_show shows.
func TestNewServesAFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := rein.Open(ctx, rein.Config{DB: filepath.Join(t.TempDir(), "runs.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var log syncBuffer
	srv, err := mcp.New(ctx, c, &mcp.Options{Dirs: []string{"testdata/notes"}, Log: &log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := connectHTTP(t, srv)

	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
	}
	if got, want := strings.Join(names, ","), "echo,notes_workflow,runs_list,runs_show,wipe"; got != want || strings.Join(srv.Tools(), ",") != want {
		t.Fatalf("listed %s, Tools() %v, want %s", got, srv.Tools(), want)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || text(res) != `{"text":"hi"}` {
		t.Fatalf("echo: %v, %+v", err, res)
	}

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "wipe", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := errorObject(t, res); !res.IsError || got["error_type"] != "policy" || !strings.Contains(fmt.Sprint(got["message"]), "notes are kept") {
		t.Errorf("wipe: error %v, %v", res.IsError, got)
	}
	line := regexp.MustCompile(`^rein: policy gate: block on tool wipe \(call [0-9a-f-]{36}/wipe/\d+\) by rule no-wipe: notes are kept\n$`)
	if !line.MatchString(log.String()) {
		t.Errorf("log %q, want one line of the refusal", log.String())
	}

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "notes_workflow", Arguments: map[string]any{"action": "start", "input": map[string]any{"topic": "mcp"}}})
	if err != nil || res.IsError {
		t.Fatalf("notes_workflow start: %v, %s", err, text(res))
	}
	var answer struct {
		TaskID string `json:"task_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(text(res)), &answer); err != nil || answer.TaskID == "" || answer.Status != "waiting" {
		t.Fatalf("start answered %s (%v)", text(res), err)
	}
	rows, err := c.Runs().List(ctx, &store.ListRunsParams{Flow: "notes"})
	if err != nil || len(rows) != 1 || rows[0].ID != answer.TaskID {
		t.Fatalf("the client's runs of notes: %v, %+v; want the task %s", err, rows, answer.TaskID)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "runs_show", Arguments: map[string]any{"run": answer.TaskID}})
	if err != nil || res.IsError || !strings.Contains(text(res), answer.TaskID) || !strings.Contains(text(res), `"kind":"submission"`) {
		t.Errorf("runs_show: %v, %s", err, text(res))
	}
}

// An agent folder (agent.yaml, no flow.yaml) is served as its one-step
// flow: its tools, but not the agents it calls as tools, and its workflow
// tool, whose start runs the agent; a call of its sub-agent that needs a
// person parks the run, as runs_show shows.
func TestNewServesAnAgentFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := rein.Open(ctx, rein.Config{DB: filepath.Join(t.TempDir(), "runs.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, err := mcp.New(ctx, c, &mcp.Options{Dirs: []string{"../../examples/agent-team"}, Log: &syncBuffer{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := connectHTTP(t, srv)
	if got, want := strings.Join(srv.Tools(), ","), "lookup_order,runs_list,runs_show,triage_workflow"; got != want {
		t.Fatalf("Tools() %s, want %s", got, want)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "triage_workflow", Arguments: map[string]any{"action": "start", "input": map[string]any{"task": "I was charged twice for order 1042"}}})
	if err != nil || res.IsError {
		t.Fatalf("triage_workflow start: %v, %s", err, text(res))
	}
	var answer struct {
		TaskID string `json:"task_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(text(res)), &answer); err != nil || answer.TaskID == "" || answer.Status != "waiting" {
		t.Fatalf("start answered %s (%v)", text(res), err)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "runs_show", Arguments: map[string]any{"run": answer.TaskID}})
	if err != nil || res.IsError || !strings.Contains(text(res), "agent/turn2/call1/turn2/call1") {
		t.Errorf("runs_show: %v, %s", err, text(res))
	}
}

// New refuses to serve a folder without a durable store, and opens the
// store lazily: not at all when a folder does not load.
func TestNewOpensTheClientLazily(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := mcp.New(ctx, nil, &mcp.Options{Dirs: []string{"testdata/notes"}}); err == nil || !strings.Contains(err.Error(), "needs a Client with a durable store") {
		t.Errorf("no Client: %v", err)
	}
	mem, err := rein.Open(ctx, rein.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcp.New(ctx, mem, &mcp.Options{Dirs: []string{"testdata/notes"}}); err == nil || !strings.Contains(err.Error(), "needs a Client with a durable store") {
		t.Errorf("a Client of runs in memory: %v", err)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "flow.yaml"), []byte("name: bad\nsteps:\n  - {id: a, tool: nosuch}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opened := 0
	open := func(ctx context.Context) (*rein.Client, error) {
		opened++
		return rein.Open(ctx, rein.Config{DB: filepath.Join(t.TempDir(), "runs.db")})
	}
	if _, err := mcp.New(ctx, nil, &mcp.Options{Dirs: []string{bad}, Open: open}); err == nil || !strings.Contains(err.Error(), `unknown tool "nosuch"`) || opened != 0 {
		t.Errorf("a folder that does not load: %v, the store opened %d times", err, opened)
	}
	var client *rein.Client
	srv, err := mcp.New(ctx, nil, &mcp.Options{Dirs: []string{"testdata/notes"}, Open: func(ctx context.Context) (*rein.Client, error) {
		c, err := open(ctx)
		client = c
		return c, err
	}})
	if err != nil || opened != 1 {
		t.Fatalf("New: %v, the store opened %d times", err, opened)
	}
	defer client.Close()
	defer srv.Close()
	if n := len(srv.Tools()); n != 5 {
		t.Errorf("tools %v", srv.Tools())
	}
}
