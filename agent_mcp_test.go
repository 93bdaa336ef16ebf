package rein_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
)

// crmAgent writes an agent folder whose rein.yaml starts the test MCP
// server crm (and adds extra lines), whose agent.yaml gives the agent
// tools, and whose script.yaml is script ("" for none).
func crmAgent(t *testing.T, extra, tools, script string) string {
	t.Helper()
	bin, err := crmServer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"rein.yaml":  fmt.Sprintf("mcp:\n  crm:\n    command: [%q]\n    timeout: 5s\n    tools:\n      lookup: {effect: read, idempotent: true}\n%s", bin, extra),
		"agent.yaml": "name: crm-agent\nmodel: m\nexecute_plan: false\ntools:\n" + tools,
	}
	if script != "" {
		files["script.yaml"] = script
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startAgent runs the agent folder dir on task over a new SQLite store.
func startAgent(t *testing.T, dir, task string) (*engine.Result, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := project.LoadAgent(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	res, err := clientOf(&engine.Config{Store: st}).Start(context.Background(), p, map[string]any{"task": task}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, st
}

// An agent calls the tools of a real MCP server: the scripted model calls
// them by the names it is offered (crm__lookup), the transcript, the
// gate and the approval keep their own (crm.lookup, crm.die, crm.refund).
func TestAgentCallsMCPToolsScripted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := crmAgent(t, "policy:\n  rules:\n    - {name: no-die, tools: [crm.die], verdict: block, reason: the server must stay up}\n",
		"  crm.lookup:\n  crm.die:\n  crm.refund: {approval: required}\n", `replies:
  - step: agent
    decision: agent
    turn: 1
    tool_calls:
      - {name: crm__lookup, args: {id: "7"}}
      - {name: crm__die, args: {}}
  - step: agent
    decision: agent
    turn: 2
    contains: "Customer 7"
    tool_calls:
      - {name: crm__refund, args: {}}
`)
	res, st := startAgent(t, dir, "refund customer 7")
	if res.Status != "waiting" || len(res.Pending) != 1 || res.Pending[0].Tool != "crm.refund" || res.Pending[0].StepID != "agent/turn2/call1" {
		t.Fatalf("run %s, pending %+v, error %v", res.Status, res.Pending, res.Error)
	}
	turns, err := engine.AgentTranscript(ctx, st, res.RunID, project.AgentStep, 0)
	if err != nil || len(turns) != 2 {
		t.Fatalf("transcript: %v, %+v", err, turns)
	}
	c := turns[0].Calls
	if c[0].Tool != "crm.lookup" || c[0].Status != agent.StatusOK || !strings.Contains(c[0].Observation, "Customer 7") {
		t.Errorf("turn 1 call 1: %+v", c[0])
	}
	if c[1].Tool != "crm.die" || c[1].Status != agent.StatusBlocked || !strings.Contains(c[1].Observation, "the server must stay up") {
		t.Errorf("turn 1 call 2 (the gate's rule names crm.die): %+v", c[1])
	}
	if c := turns[1].Calls[0]; c.Tool != "crm.refund" || c.Status != agent.StatusWaiting {
		t.Errorf("turn 2: %+v", c)
	}
}

// An OpenAI-compatible server is offered the MCP tool as crm__lookup,
// calls it natively by that name, and sees its call again under that name
// in the next turn's history; the run records crm.lookup.
func TestAgentCallsMCPToolsNative(t *testing.T) {
	t.Parallel()
	var turns atomic.Int32
	var problem atomic.Value
	fail := func(w http.ResponseWriter, msg string) {
		problem.Store(msg)
		http.Error(w, `{"error": {"message": "`+msg+`"}}`, http.StatusBadRequest)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Tools) != 1 || req.Tools[0].Function.Name != "crm__lookup" {
			fail(w, fmt.Sprintf("want one tool, crm__lookup: %s", body))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if turns.Add(1) == 1 {
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"tool_calls",
				"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"crm__lookup","arguments":"{\"id\":\"9\"}"}}]}}],
				"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}`)
			return
		}
		n := len(req.Messages)
		asked, answer := req.Messages[n-2], req.Messages[n-1]
		if len(asked.ToolCalls) != 1 || asked.ToolCalls[0].Function.Name != "crm__lookup" {
			fail(w, fmt.Sprintf("the history names the call otherwise: %s", body))
			return
		}
		if answer.Role != "tool" || answer.ToolCallID != "call_a" || !strings.Contains(fmt.Sprint(answer.Content), "Customer 9") {
			fail(w, fmt.Sprintf("the tool result is missing: %s", body))
			return
		}
		fmt.Fprint(w, `{"id":"c2","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"stop",
			"message":{"role":"assistant","content":"Customer 9 is on file."}}],"usage":{"prompt_tokens":80,"completion_tokens":6,"total_tokens":86}}`)
	}))
	defer srv.Close()
	dir := crmAgent(t, "models:\n  m: {provider: ollama, model: tiny, base_url: "+srv.URL+"/v1}\n", "  crm.lookup:\n", "")
	res, st := startAgent(t, dir, "who is customer 9?")
	if res.Error != nil || res.Outputs[project.AgentStep] != "Customer 9 is on file." {
		t.Fatalf("run %s: %v, %v; the server said %v", res.Status, res.Error, res.Outputs, problem.Load())
	}
	turnsSeen, err := engine.AgentTranscript(context.Background(), st, res.RunID, project.AgentStep, 0)
	if err != nil || len(turnsSeen) != 2 || turnsSeen[0].Calls[0].Tool != "crm.lookup" || turnsSeen[0].Calls[0].Status != agent.StatusOK {
		t.Fatalf("transcript: %v, %+v", err, turnsSeen)
	}
}

// An agent.yaml naming an MCP tool the server does not offer is refused,
// located, as rein validate reports it.
func TestAgentUnknownMCPTool(t *testing.T) {
	t.Parallel()
	dir := crmAgent(t, "", "  crm.lokup:\n", "replies: []\n")
	_, err := project.LoadAgent(dir, nil)
	if err == nil || !strings.Contains(err.Error(), `agent.yaml:5:3: unknown tool "crm.lokup"`) {
		t.Fatalf("load: %v", err)
	}
}
