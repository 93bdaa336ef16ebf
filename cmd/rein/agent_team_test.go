package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestAgentTeamExample is the walkthrough of examples/agent-team: the
// triage agent asks the billing agent (a tool) about a double charge; the
// billing agent's refund waits for a person, which parks the whole run;
// approved, the run resumes into the billing agent's sub-run, the refund
// runs once, billing answers, and triage hands the conversation over to the
// shipping agent, whose answer is the run's. rein runs show tells who
// answered what.
func TestAgentTeamExample(t *testing.T) { //nolint:paralleltest // sets REIN_OUTBOX
	db := filepath.Join(t.TempDir(), "rein.db")
	t.Setenv("REIN_OUTBOX", t.TempDir())
	code, out, stderr := cli(t, "agent", "../../examples/agent-team", "I was charged twice for order 1042. Where is my parcel?", "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	var res agentResultJSON
	decodeOne(t, out, &res)
	if len(res.Pending) != 1 || res.Pending[0]["step_id"] != "agent/turn2/call1/turn2/call1" || res.Pending[0]["tool"] != "issue_refund" {
		t.Fatalf("pending %+v", res.Pending)
	}
	if len(res.Calls) != 2 || res.Calls[1].Tool != "billing" || res.Calls[1].Status != "waiting" {
		t.Fatalf("calls %+v", res.Calls)
	}
	code, out, stderr = cli(t, "runs", "approve", res.RunID, "agent/turn2/call1/turn2/call1", "--db", db)
	if code != exitOK || !strings.Contains(out, "arrives on Friday; billing has refunded the duplicate charge ch_2") {
		t.Fatalf("approve: exit %d: %s\n%s", code, stderr, out)
	}
	outbox, err := os.ReadDir(os.Getenv("REIN_OUTBOX"))
	if err != nil || len(outbox) != 1 || !strings.HasSuffix(outbox[0].Name(), "_agent_1_turn2_call1_billing_turn2_call1.json") {
		t.Fatalf("the outbox: %v %v", outbox, err)
	}
	code, out, stderr = cli(t, "runs", "show", res.RunID, "--db", db)
	if code != exitOK {
		t.Fatalf("show: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"call 1 billing", "agent billing answered: 3 turns, 2 tool calls", "call 1 issue_refund", "answer I refunded ch_2",
		"call 1 transfer_to_shipping", "handed over to agent shipping answered: 1 turns", "turn 4 (tokens 0/0): answer Your parcel for order 1042"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	// the sub-agent's refund has its own call record in the run's ledger
	if !regexp.MustCompile(`tool issue_refund +succeeded`).MatchString(out) {
		t.Errorf("runs show lists no settled record of the refund:\n%s", out)
	}
}

// TestAgentTeamWithAProvider runs examples/agent-team against an
// OpenAI-compatible server speaking the chat-completions wire format with
// native tool_calls: the triage agent calls billing as a tool, billing
// (instructions of its own, its own tools) answers, its answer comes back
// to the triage agent as the tool message, and triage hands the
// conversation over to shipping, which sees it and answers the run.
func TestAgentTeamWithAProvider(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var billingTools, triageTools []string
	var shippingSaw []map[string]any
	reply := func(w http.ResponseWriter, id string, msg string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"stop","message":%s}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, id, msg)
	}
	toolCall := func(id, name, args string) string {
		a, _ := json.Marshal(args)
		return fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`, id, name, a)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []map[string]any `json:"messages"`
			Tools    []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) < 2 {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
			return
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		system := fmt.Sprint(req.Messages[0]["content"])
		last := req.Messages[len(req.Messages)-1]
		content := fmt.Sprint(last["content"])
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(system, "You are the shipping agent"):
			shippingSaw = req.Messages
			reply(w, "s1", `{"role":"assistant","content":"Your parcel arrives on Friday; ch_2 was a duplicate."}`)
		case strings.HasPrefix(system, "You are the billing agent"):
			billingTools = names
			if last["role"] == "user" {
				reply(w, "b1", toolCall("call_b1", "list_charges", `{"order":"1042"}`))
				return
			}
			reply(w, "b2", `{"role":"assistant","content":"ch_2 duplicates ch_1; no refund made."}`)
		default:
			triageTools = names
			switch {
			case last["role"] == "user":
				reply(w, "t1", toolCall("call_t1", "lookup_order", `{"order":"1042"}`))
			case last["tool_call_id"] == "call_t1":
				reply(w, "t2", toolCall("call_t2", "billing", `{"task":"Order 1042: which charge is a duplicate?"}`))
			case last["tool_call_id"] == "call_t2" && strings.Contains(content, "ch_2 duplicates ch_1"):
				reply(w, "t3", toolCall("call_t3", "transfer_to_shipping", `{"reason":"parcel"}`))
			default:
				http.Error(w, `{"error": {"message": "unexpected conversation"}}`, http.StatusBadRequest)
			}
		}
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "team")
	if err := os.CopyFS(dir, os.DirFS("../../examples/agent-team")); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{filepath.Join(dir, "rein.yaml"), filepath.Join(dir, "billing", "rein.yaml"), filepath.Join(dir, "shipping", "rein.yaml")} {
		b, err := os.ReadFile(cfg)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		b = append(b, []byte("models:\n  real: {provider: ollama, model: tiny, base_url: "+srv.URL+"/v1}\n")...)
		if err := os.WriteFile(cfg, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := cli(t, "agent", dir, "was I charged twice for order 1042?", "--model", "real", "--db", ":memory:", "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	var res agentResultJSON
	decodeOne(t, out, &res)
	if res.Status != "answered" || res.Answer != "Your parcel arrives on Friday; ch_2 was a duplicate." || len(res.Calls) != 3 ||
		res.Calls[1].Tool != "billing" || res.Calls[1].Observation != `"ch_2 duplicates ch_1; no refund made."` || res.Calls[2].Tool != "transfer_to_shipping" {
		t.Fatalf("result %+v", res)
	}
	// the billing and shipping agents' turns and tokens count into the
	// run's: triage 3 + billing 2 + shipping 1, and the final turn.
	if res.Usage["turns"] != 7 || res.Usage["tokens_in"] != 60 {
		t.Errorf("usage %+v", res.Usage)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(triageTools, ",") != "billing,lookup_order,transfer_to_shipping,execute_plan" || strings.Join(billingTools, ",") != "issue_refund,list_charges,execute_plan" {
		t.Errorf("tools offered: triage %v, billing %v", triageTools, billingTools)
	}
	// shipping saw the whole conversation: the user's message, triage's
	// calls with their tool messages (native tool_calls), then the handover.
	var roles []string
	for _, m := range shippingSaw {
		roles = append(roles, fmt.Sprint(m["role"]))
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant,tool,user" || !strings.Contains(fmt.Sprint(shippingSaw[5]["content"]), "ch_2 duplicates ch_1") {
		t.Errorf("shipping saw %v", shippingSaw)
	}
}

// A run pins the agent folders its agents call or hand over to: a resume
// after the billing agent's folder changed (its prompt, its rein.yaml's
// tools) is refused, naming the folder and both digests; put back, the
// run resumes with the definitions it started with.
func TestAgentTeamFoldersArePinned(t *testing.T) { //nolint:paralleltest // sets REIN_OUTBOX
	dir := filepath.Join(t.TempDir(), "team")
	if err := os.CopyFS(dir, os.DirFS("../../examples/agent-team")); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	t.Setenv("REIN_OUTBOX", t.TempDir())
	code, out, stderr := cli(t, "agent", dir, "I was charged twice for order 1042. Where is my parcel?", "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	var res agentResultJSON
	decodeOne(t, out, &res)
	// the approval is recorded by the first; the run resumes after each
	resume := []string{"runs", "approve", res.RunID, "agent/turn2/call1/turn2/call1", "--db", db}
	for _, file := range []string{filepath.Join(dir, "billing", "agent.yaml"), filepath.Join(dir, "billing", "rein.yaml")} {
		was, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, append(append([]byte(nil), was...), "# edited\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr = cli(t, resume...)
		resume = []string{"runs", "resume", res.RunID, "--db", db}
		msg := out + stderr
		if code == exitOK || !strings.Contains(msg, "the agent folder "+filepath.Join(dir, "billing")+" changed since the run started") ||
			!regexp.MustCompile(`sha256 [0-9a-f]{12}, now [0-9a-f]{12}`).MatchString(msg) {
			t.Fatalf("approve after %s changed: exit %d\n%s", file, code, msg)
		}
		if err := os.WriteFile(file, was, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = cli(t, resume...)
	if code != exitOK || !strings.Contains(out, "arrives on Friday") {
		t.Fatalf("resume with the folder as it was: exit %d: %s\n%s", code, stderr, out)
	}
}
