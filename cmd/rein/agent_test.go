package main

import (
	"os"
	"path/filepath"
	"strings"
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
		args := []string{"runs", verdict, res.RunID, "agent/turn2/call1", "--db", db}
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
		for _, w := range []string{"transcript of agent:", "call 1 issue_refund", "turn 3", "step agent/turn2/call1 (approval): " + verdict} {
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
