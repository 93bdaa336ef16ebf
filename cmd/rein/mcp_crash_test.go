package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/store"
)

// TestMCPServedCallKilledMidCall: a rein mcp process (the built binary) is
// killed with SIGKILL while a call it serves — pay, not idempotent, which
// the host's user approved — runs, after pay did its effect. A second
// process on the same store does not make it again on its own: the same
// call from the host is a new call, asked of the host's user again
// (declined here: not made); the first call's record stays started in
// the first process's ledger run — unknown — and rein runs show says so.
// pay ran once: 0 repeats without a person, 0 lost.
func TestMCPServedCallKilledMidCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger, fifo := filepath.Join(dir, "ledger"), filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// pay appends its key, then blocks on the fifo until the test ends.
	files := map[string]string{
		"rein.yaml": fmt.Sprintf(`tools:
  pay:
    command: ["sh", "-c", "printf '%%s %%s\n' \"$REIN_IDEMPOTENCY_KEY\" \"$(cat)\" >> \"$0\"; cat \"$1\"; echo '{\"paid\": true}'", %q, %q]
    effect: external
    input_schema: {type: object, properties: {amount: {type: number}}, required: [amount]}
`, ledger, fifo),
		"flow.yaml": "name: fx\ninputs: {type: object}\nsteps:\n  - {id: p, tool: pay, args: {amount: \"{input.amount}\"}}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // let a blocked pay end
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	db := filepath.Join(dir, "rein.db")
	pay := map[string]any{"amount": 250}

	m := serveMCPWith(t, db, answering("accept", nil), dir)
	go func() { _, _ = m.cs.CallTool(m.ctx, &sdk.CallToolParams{Name: "pay", Arguments: pay}) }()
	for deadline := time.Now().Add(30 * time.Second); len(ledgerLines(t, ledger)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pay did not run\n%s", m.stderr.String())
		}
	}
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.stop()

	m = serveMCPWith(t, db, answering("decline", nil), dir)
	text, isErr := m.call("pay", pay)
	m.stop()
	if !isErr || !strings.Contains(text, "answered decline") {
		t.Errorf("pay again on a new process, declined: error %v, %s", isErr, text)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Fatalf("pay ran %d times (%q), want once: the one before the kill", len(got), got)
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), &store.ListRunsParams{Flow: "mcp"})
	if err != nil || len(runs) != 2 {
		t.Fatalf("ledger runs: %v, %d; want one per process", err, len(runs))
	}
	killed := runs[1] // newest first
	calls, err := st.Calls(context.Background(), killed.ID, "pay")
	key := strings.Fields(ledgerLines(t, ledger)[0])[0]
	if err != nil || len(calls) != 1 || calls[0].Status != store.CallStarted || calls[0].Key != key || calls[0].ArgsSHA == "" {
		t.Fatalf("the killed process's record of pay: %v, %+v; want it started (unknown) under key %s", err, calls, key)
	}
	code, out, stderr := cli(t, "runs", "show", killed.ID, "--db", db)
	if code != 0 || !strings.Contains(out, "pay") || !strings.Contains(out, "started") {
		t.Errorf("rein runs show %s: exit %d, want the call in doubt shown\n%s%s", killed.ID, code, out, stderr)
	}
}
