//go:build temporalserver

package servertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/reinhq/rein/temporal"
)

// TestAgentCommand: rein agent DIR TASK --temporal (the rein-temporal
// program, built here) against a real server, with a worker serving the
// agent folders: the
// support agent waits for the refund's approval (exit 3, and the command
// to go on), rein runs approve on agent/turn2/call1 lets it finish (exit
// 0), and the refund was made once, with the call's key; an agent that
// answers at once has its answer printed, then the run's line.
func TestAgentCommand(t *testing.T) {
	t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	outbox := t.TempDir()
	t.Setenv("REIN_OUTBOX", outbox)
	support, err := filepath.Abs(filepath.Join("..", "..", "examples", "support-agent"))
	if err != nil {
		t.Fatal(err)
	}
	hello := t.TempDir()
	for name, text := range map[string]string{
		"agent.yaml":  "name: hello\nmodel: m\ninstructions: Greet.\n",
		"script.yaml": "replies:\n  - {step: agent, decision: agent, turn: 1, raw: \"hello there\"}\n",
	} {
		if err := os.WriteFile(filepath.Join(hello, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	prog := program(t)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	fs := temporal.NewFlows()
	if err := fs.Load([]string{support, hello}, nil); err != nil {
		t.Fatal(err)
	}
	ts.NewWorkerWithOptions("rein", func(r worker.Registry) {
		temporal.Register(r, &temporal.Workflow{Flows: fs}, &temporal.Activities{Flows: fs})
	}, workerOptions)
	conn := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace()}
	run := commander(t, prog, conn, nil)

	code, out, errs := run("agent", support, "Order 1042: I was charged twice", "--run-id", "run-cli")
	// each call as it settled (the refund waiting for a person), as a
	// local rein agent prints them, then the report.
	if code != 3 || !strings.Contains(out, "run run-cli waiting") || !strings.Contains(out, "waits: step agent/turn2/call1 (approval)") ||
		!strings.Contains(out, "  -> lookup_order ") || !strings.Contains(out, "  -> issue_refund ") || !strings.Contains(out, " -> waiting") {
		t.Fatalf("rein agent: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = run("runs", "approve", "run-cli", "agent/turn2/call1", "--by", "ana")
	if code != 0 || !strings.Contains(out, "run run-cli succeeded") {
		t.Fatalf("rein runs approve: exit %d\n%s\n%s", code, out, errs)
	}
	refunds, _ := filepath.Glob(filepath.Join(outbox, "*.json"))
	if len(refunds) != 1 || filepath.Base(refunds[0]) != "run-cli_agent_1_turn2_call1.json" {
		t.Errorf("refunds in the outbox: %v, want one, named after the call's key", refunds)
	}

	code, out, errs = run("agent", hello, "say hello", "--run-id", "run-hello")
	if code != 0 || out != "hello there\nrun run-hello succeeded\n  model calls: 1, tokens: 3 in / 3 out\n" {
		t.Fatalf("rein agent: exit %d\n%q\n%s", code, out, errs)
	}
}
