package main

import (
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
)

type agentResultJSON struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Answer any    `json:"answer"`
	Calls  []struct {
		Turn        int            `json:"turn"`
		Tool        string         `json:"tool"`
		Args        map[string]any `json:"args"`
		Status      string         `json:"status"`
		Observation string         `json:"observation"`
	} `json:"calls"`
	Usage   map[string]int   `json:"usage"`
	Error   any              `json:"error"`
	Pending []map[string]any `json:"pending"`
}

const supportTask = "I was charged twice for order 1042"

// TestAgentSupportExample is the walkthrough of examples/support-agent:
// the agent looks the order up, proposes a refund that waits for a person,
// and answers once it is approved; a rejection reaches the agent instead.
func TestAgentSupportExample(t *testing.T) {
	for _, verdict := range []string{"approve", "reject"} {
		outbox := t.TempDir()
		t.Setenv("REIN_OUTBOX", outbox)
		db := filepath.Join(t.TempDir(), "rein.db")
		code, out, stderr := cli(t, "agent", "../../examples/support-agent", supportTask, "--db", db, "--output", "json")
		if code != exitWaiting {
			t.Fatalf("exit %d, want 3 (waiting); stderr: %s\n%s", code, stderr, out)
		}
		var res agentResultJSON
		decodeOne(t, out, &res)
		if res.Status != "waiting" || len(res.Pending) != 1 || res.Pending[0]["step_id"] != "agent/turn2/call1" {
			t.Fatalf("result %+v", res)
		}
		if len(res.Calls) != 3 || res.Calls[0].Tool != "lookup_order" || res.Calls[0].Status != "ok" ||
			!strings.Contains(res.Calls[1].Observation, "ch_2") || res.Calls[2].Tool != "issue_refund" ||
			res.Calls[2].Status != "waiting" || res.Calls[2].Args["charge"] != "ch_2" {
			t.Fatalf("calls %+v", res.Calls)
		}
		if u := res.Usage; u["turns"] != 2 || u["tool_calls"] != 3 || u["llm_calls"] != 2 || u["tokens_in"] == 0 {
			t.Errorf("usage %v", u)
		}
		if sent, _ := os.ReadDir(outbox); len(sent) != 0 {
			t.Fatalf("a refund was sent before approval: %v", sent)
		}
		// rein runs why traces each argument the model wrote.
		code, out, stderr = cli(t, "runs", "why", res.RunID, "agent", "--db", db)
		for _, w := range []string{"step agent of run " + res.RunID + ": the tool calls a model chose",
			"turn2/call1  tool issue_refund (waiting)", "/charge  inferred        written by the model", "/order   user-mentioned  only inside the user's text",
			"/charge verified by the output of tool list_charges (turn1/call2) at /charges/1/id", "/order verified by the output of tool lookup_order (turn1/call1) at /order", "declaration: none"} {
			if code != exitOK || !strings.Contains(out, w) {
				t.Fatalf("runs why lacks %q: exit %d\n%s\n%s", w, code, out, stderr)
			}
		}
		args := []string{"runs", verdict, res.RunID, "agent/turn2/call1", "--db", db, "--by", "bob"}
		if verdict == "reject" {
			args = append(args, "--comment", "refunded by phone already")
		}
		if code, out, stderr = cli(t, args...); code != exitOK {
			t.Fatalf("%s: exit %d: %s\n%s", verdict, code, stderr, out)
		}
		sent, _ := os.ReadDir(outbox)
		want := "I refunded the duplicate charge"
		if verdict == "reject" {
			want = "a colleague will contact you"
			if len(sent) != 0 {
				t.Errorf("a rejected refund was sent: %v", sent)
			}
		} else if len(sent) != 1 || !strings.Contains(sent[0].Name(), "_agent_1_turn2_call1") {
			t.Errorf("outbox %v: want one refund keyed run/agent/1/turn2/call1", sent)
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s: answer missing %q:\n%s", verdict, want, out)
		}
		code, out, _ = cli(t, "runs", "show", res.RunID, "--db", db)
		if code != exitOK {
			t.Errorf("runs show: exit %d", code)
		}
		for _, w := range []string{"transcript of agent:", "call 1 issue_refund", "turn 3", "step agent/turn2/call1 (approval): " + map[string]string{"approve": "approved", "reject": "rejected"}[verdict] + " by bob"} {
			if !strings.Contains(out, w) {
				t.Errorf("runs show lacks %q:\n%s", w, out)
			}
		}
	}
}

func TestAgentInvalidDefinition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("model: m\ninstructons: x\ntools: {nope: }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "agent", dir, "hello", "--db", ":memory:")
	if code != exitUsage || !strings.Contains(stderr, `agent.yaml:2:1: unknown field "instructons"`) {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("model: m\ntools: {nope: }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, "agent", dir, "hello", "--db", ":memory:")
	if code != exitUsage || !strings.Contains(stderr, `agent.yaml:2:9: unknown tool "nope"`) || !strings.Contains(stderr, `agent.yaml:1:8: model "m" is not configured`) {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if code, _, stderr = cli(t, "agent", t.TempDir(), "hello"); code != exitUsage || !strings.Contains(stderr, "holds no agent.yaml") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
}

// TestAgentWithAProvider runs the support agent with --model against an
// OpenAI-compatible server (a stand-in speaking the wire format, native tool
// calls): nothing in the loop is specific to the scripted model.
func TestAgentWithAProvider(t *testing.T) {
	t.Parallel()
	var turns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []map[string]any `json:"messages"`
			Tools    []any            `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Tools) != 4 {
			http.Error(w, `{"error": {"message": "want 4 tools: the agent's 3 and execute_plan"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if turns.Add(1) == 1 {
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"tool_calls",
				"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":\"1042\"}"}}]}}],
				"usage":{"prompt_tokens":120,"completion_tokens":20,"total_tokens":140}}`)
			return
		}
		last := req.Messages[len(req.Messages)-1]
		if last["role"] != "tool" || last["tool_call_id"] != "call_a" || !strings.Contains(fmt.Sprint(last["content"]), "Ana Lima") {
			http.Error(w, `{"error": {"message": "the tool result is missing"}}`, http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"id":"c2","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"stop",
			"message":{"role":"assistant","content":"Order 1042 of Ana Lima has shipped."}}],"usage":{"prompt_tokens":180,"completion_tokens":12,"total_tokens":192}}`)
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "support")
	if err := os.CopyFS(dir, os.DirFS("../../examples/support-agent")); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "rein.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("models:\n  real: {provider: ollama, model: tiny, base_url: "+srv.URL+"/v1}\n")...)
	if err := os.WriteFile(filepath.Join(dir, "rein.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "agent", dir, "where is order 1042?", "--model", "real", "--db", ":memory:", "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	var res agentResultJSON
	decodeOne(t, out, &res)
	if res.Status != "answered" || res.Answer != "Order 1042 of Ana Lima has shipped." || len(res.Calls) != 1 ||
		res.Calls[0].Status != "ok" || res.Usage["tokens_in"] != 300 {
		t.Fatalf("result %+v", res)
	}
}

// TestAgentPlanExample is the walkthrough of examples/agent-plan: the
// agent's first plan names an unknown tool and is rejected, located,
// before anything runs; the corrected three-step plan, joined by $ref,
// runs and the agent answers from its result.
func TestAgentPlanExample(t *testing.T) {
	db := filepath.Join(t.TempDir(), "rein.db")
	tr := filepath.Join(t.TempDir(), "trace.jsonl")
	code, out, stderr := cli(t, "agent", "../../examples/agent-plan", "Brief me on order 1042", "--db", db, "--output", "json", "--trace", tr)
	if code != exitOK {
		t.Fatalf("exit %d; stderr: %s\n%s", code, stderr, out)
	}
	var res agentResultJSON
	decodeOne(t, out, &res)
	if res.Status != "answered" || !strings.Contains(fmt.Sprint(res.Answer), "Ana Lima") || len(res.Calls) != 2 {
		t.Fatalf("result %+v", res)
	}
	first, second := res.Calls[0], res.Calls[1]
	if first.Tool != "execute_plan" || !strings.Contains(first.Observation, `at /steps/1/tool: unknown tool \"get_customer\"`) ||
		!strings.Contains(first.Observation, `"completed_steps":[]`) {
		t.Fatalf("first plan: %s", first.Observation)
	}
	// the printed observation is a preview; what it begins with says enough.
	if !strings.HasPrefix(second.Observation, `{"completed_steps":["order","customer","charges"],"failed_steps":[],"objective":"brief on order 1042","result":{"charges":`) {
		t.Fatalf("second plan: %s", second.Observation)
	}
	// the plans are journaled: the rejection in turn 1, each plan step in turn 2.
	events, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"plan_rejected"`, `"plan_step":"call1/customer"`, `"kind":"plan_step_settled"`} {
		if !strings.Contains(string(events), want) {
			t.Errorf("trace lacks %s:\n%s", want, events)
		}
	}
	// runs show prints each plan as the sub-run of its call: status, budget, steps.
	code, out, _ = cli(t, "runs", "show", res.RunID, "--db", db)
	for _, want := range []string{"Ana Lima", "plan rejected (invalid_plan): nothing ran (max_steps 5)",
		"plan succeeded: 3 of max_steps 5 tool calls", "customer lookup_customer -> succeeded"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs show: exit %d, lacks %q\n%s", code, want, out)
		}
	}
	if u := res.Usage; u["turns"] != 3 || u["tool_calls"] != 2 {
		t.Errorf("usage %v: the plan's calls are its own, not the loop's", u)
	}
}
