package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/store"
)

// payFolder writes a flow folder whose rein.yaml sets no policy: pay
// (effect external, not idempotent) appends its idempotency key and args
// to ledger, look (read) answers. The flow pays its input's amount.
func payFolder(t *testing.T) (dir, ledger string) {
	t.Helper()
	dir = t.TempDir()
	ledger = filepath.Join(dir, "ledger")
	files := map[string]string{
		"rein.yaml": fmt.Sprintf(`tools:
  pay:
    command: ["sh", "-c", "printf '%%s %%s\n' \"$REIN_IDEMPOTENCY_KEY\" \"$(cat)\" >> \"$0\"; echo '{\"paid\": true}'", %q]
    effect: external
    input_schema: {type: object, properties: {amount: {type: number}}, required: [amount]}
  look:
    command: ["sh", "-c", "cat > /dev/null; echo '{\"balance\": 10}'"]
    effect: read
`, ledger),
		"flow.yaml": "name: fx\ninputs: {type: object}\nsteps:\n  - {id: p, tool: pay, args: {amount: \"{input.amount}\"}}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ledger
}

// ledgerLines returns the lines pay appended.
func ledgerLines(t *testing.T, ledger string) []string {
	t.Helper()
	data, err := os.ReadFile(ledger)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	// a file the shell created for its append, not yet written to, holds
	// no line: the test must not take it for one (and kill too soon).
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// TestMCPServedCallsNeedTheHostsUser: rein mcp gates what it serves with
// the default rules even when rein.yaml sets no policy. A side effect the
// host's model wrote is put to the host's user with MCP elicitation:
// accepted, it is made once; declined, it is refused and not made; a host
// that cannot ask gets a refusal saying what to do. A read tool is
// answered without asking. Every call is journaled in the server's
// ledger run, which rein runs show shows.
func TestMCPServedCallsNeedTheHostsUser(t *testing.T) {
	t.Parallel()
	dir, ledger := payFolder(t)
	db := filepath.Join(dir, "rein.db")
	pay := map[string]any{"amount": 9999}

	m := serveMCP(t, db, dir) // no elicitation
	text, isErr := m.call("pay", pay)
	if !isErr || !strings.Contains(text, `"error_type":"policy"`) || !strings.Contains(text, "rule inferred-drives-effect") ||
		!strings.Contains(text, "does not support elicitation") || !strings.Contains(text, "rein run "+dir) {
		t.Errorf("pay without elicitation: error %v, %s; want a refusal saying how to go on", isErr, text)
	}
	if text, isErr := m.call("look", map[string]any{"account": "a"}); isErr || !strings.Contains(text, `"balance":10`) {
		t.Errorf("look: error %v, %s", isErr, text)
	}
	m.stop()
	if got := ledgerLines(t, ledger); len(got) != 0 {
		t.Fatalf("pay ran without a person's approval: %q", got)
	}

	var asked atomic.Int32
	m = serveMCPWith(t, db, answering("decline", &asked), dir)
	text, isErr = m.call("pay", pay)
	if !isErr || !strings.Contains(text, "answered decline") || asked.Load() != 1 {
		t.Errorf("pay declined: error %v, asked %d, %s", isErr, asked.Load(), text)
	}
	if _, isErr := m.call("look", map[string]any{"account": "a"}); isErr || asked.Load() != 1 {
		t.Errorf("look: error %v, asked %d times; want answered without asking", isErr, asked.Load())
	}
	m.stop()
	if got := ledgerLines(t, ledger); len(got) != 0 {
		t.Fatalf("pay ran though the host's user declined: %q", got)
	}

	asked.Store(0)
	m = serveMCPWith(t, db, answering("accept", &asked), dir)
	text, isErr = m.call("pay", pay)
	m.stop()
	if isErr || !strings.Contains(text, `"paid":true`) || asked.Load() != 1 {
		t.Fatalf("pay accepted: error %v, asked %d, %s", isErr, asked.Load(), text)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 || !strings.Contains(got[0], `{"amount":9999}`) {
		t.Fatalf("ledger %q, want the one approved payment", got)
	}

	// each process journaled its calls in a run of its own.
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), &store.ListRunsParams{Flow: "mcp"})
	if err != nil || len(runs) != 3 {
		t.Fatalf("ledger runs: %v, %d; want one per process", err, len(runs))
	}
	last := runs[0] // newest first: the accepting host's
	calls, err := st.Calls(context.Background(), last.ID, "")
	if err != nil || len(calls) != 1 {
		t.Fatalf("calls of %s: %v, %+v", last.ID, err, calls)
	}
	c := calls[0]
	key := strings.Fields(ledgerLines(t, ledger)[0])[0]
	if c.Name != "pay" || c.Status != store.CallSucceeded || c.Key != key || c.Key != last.ID+"/pay/1" || last.Status != "succeeded" {
		t.Errorf("record %+v (run %s), want pay succeeded under the key the tool got, %s", c, last.Status, key)
	}
	gates, _ := json.Marshal(c.Gate)
	if !strings.Contains(string(gates), "require_approval") || !strings.Contains(string(gates), "approved by the MCP host's user") {
		t.Errorf("record's decisions %s, want the gate's and the host's user's", gates)
	}
	declined, err := st.Calls(context.Background(), runs[1].ID, "pay")
	if err != nil || len(declined) != 1 || declined[0].Status != store.CallFailed || !strings.Contains(declined[0].Error, "answered decline") {
		t.Errorf("the declined call's record: %v, %+v", err, declined)
	}
	code, out, stderr := cli(t, "runs", "show", last.ID, "--db", db)
	if code != 0 || !strings.Contains(out, "pay") || !strings.Contains(out, "succeeded") {
		t.Errorf("rein runs show %s: exit %d\n%s%s", last.ID, code, out, stderr)
	}
}

// TestMCPKeysDifferAcrossProcesses: two rein mcp processes, one after the
// other on one store, give their first calls of a tool different
// idempotency keys (a per-process counter gave both mcp/pay/1, and the
// second payment overwrote the first's outbox).
func TestMCPKeysDifferAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir, ledger := payFolder(t)
	db := filepath.Join(dir, "rein.db")
	for range 2 {
		m := serveMCPWith(t, db, answering("accept", nil), dir)
		if text, isErr := m.call("pay", map[string]any{"amount": 5}); isErr {
			t.Fatalf("pay: %s", text)
		}
		m.stop()
	}
	got := ledgerLines(t, ledger)
	if len(got) != 2 {
		t.Fatalf("ledger %q, want two payments", got)
	}
	k1, k2 := strings.Fields(got[0])[0], strings.Fields(got[1])[0]
	if k1 == k2 || !strings.HasSuffix(k1, "/pay/1") || !strings.HasSuffix(k2, "/pay/1") {
		t.Errorf("keys %q and %q, want two different keys, each <ledger run>/pay/1", k1, k2)
	}
}

// TestMCPWorkflowStartInputIsInferred: a task's input the host writes is
// its model's, not its user's: fx_workflow start with values that drive
// the flow's payment needs the host's user's approval, as a direct call
// of pay does; refused, nothing is paid and no task starts.
func TestMCPWorkflowStartInputIsInferred(t *testing.T) {
	t.Parallel()
	dir, ledger := payFolder(t)
	db := filepath.Join(dir, "rein.db")
	start := map[string]any{"action": "start", "input": map[string]any{"amount": 9999}}

	m := serveMCP(t, db, dir)
	text, isErr := m.call("fx_workflow", start)
	m.stop()
	if !isErr || !strings.Contains(text, "rule inferred-drives-effect") || !strings.Contains(text, "/input") || strings.Contains(text, `"task_id"`) {
		t.Errorf("fx_workflow start without elicitation: error %v, %s; want refused for approval", isErr, text)
	}
	m = serveMCPWith(t, db, answering("decline", nil), dir)
	text, isErr = m.call("fx_workflow", start)
	m.stop()
	if !isErr || !strings.Contains(text, "answered decline") {
		t.Errorf("fx_workflow start declined: error %v, %s", isErr, text)
	}
	if got := ledgerLines(t, ledger); len(got) != 0 {
		t.Fatalf("the task paid with the host's values unasked: %q", got)
	}
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if tasks, err := st.ListRuns(context.Background(), &store.ListRunsParams{Flow: "fx"}); err != nil || len(tasks) != 0 {
		t.Errorf("tasks %v, %d; want none started", err, len(tasks))
	}
}

// TestMCPApprovalLetsOneCallThrough: the host's user's answer to a held
// call (MCP multi round-trip: an input request, then the call made again
// with the answer and the request state) approves that call alone — the
// same tool with the same arguments, once; other arguments, a replayed
// answer or an altered state are refused, and the tool is called once.
func TestMCPApprovalLetsOneCallThrough(t *testing.T) {
	t.Parallel()
	dir, ledger := payFolder(t)
	copts := answering("accept", nil)
	copts.MultiRoundTrip = &sdk.MultiRoundTripOptions{Disabled: true} // the test answers itself
	m := serveMCPWith(t, filepath.Join(dir, "rein.db"), copts, dir)
	pay := map[string]any{"amount": 9999}
	held, err := m.cs.CallTool(m.ctx, &sdk.CallToolParams{Name: "pay", Arguments: pay})
	if err != nil {
		t.Fatal(err)
	}
	ask, _ := held.InputRequests["approval"].(*sdk.ElicitParams)
	if !held.NeedsInput() || held.RequestState == "" || ask == nil || !strings.Contains(ask.Message, "Tool pay") ||
		!strings.Contains(ask.Message, `{"amount":9999}`) || !strings.Contains(ask.Message, "inferred-drives-effect") {
		t.Fatalf("pay: %+v (asked %+v), want the host's user asked about the exact call", held, ask)
	}
	accept := sdk.InputResponseMap{"approval": &sdk.ElicitResult{Action: "accept"}}
	again := func(args map[string]any, state string) (string, bool) {
		t.Helper()
		res, err := m.cs.CallTool(m.ctx, &sdk.CallToolParams{Name: "pay", Arguments: args, InputResponses: accept, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*sdk.TextContent).Text, res.IsError
	}
	if text, isErr := again(map[string]any{"amount": 1}, held.RequestState); !isErr || !strings.Contains(text, "another call") {
		t.Errorf("other args: error %v, %s", isErr, text)
	}
	if text, isErr := again(pay, held.RequestState+"x"); !isErr || !strings.Contains(text, "altered") {
		t.Errorf("altered state: error %v, %s", isErr, text)
	}
	if text, isErr := again(pay, held.RequestState); isErr || !strings.Contains(text, `"paid":true`) {
		t.Errorf("approved: error %v, %s", isErr, text)
	}
	if text, isErr := again(pay, held.RequestState); !isErr || !strings.Contains(text, "answered already") {
		t.Errorf("replayed: error %v, %s", isErr, text)
	}
	m.stop()
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Errorf("pay ran %d times (%q), want once", len(got), got)
	}
}

// TestMCPLegacyHostIsAskedDirectly: a host of the protocol before multi
// round-trip requests (2025-11-25) is asked with an elicitation/create
// request of rein mcp's own, over stdio, while its call waits: accepted,
// the call is made once; declined, it is refused.
func TestMCPLegacyHostIsAskedDirectly(t *testing.T) {
	t.Parallel()
	dir, ledger := payFolder(t)
	db := filepath.Join(dir, "rein.db")
	var asked atomic.Int32
	m := serveMCPAt(t, db, answering("decline", &asked), "2025-11-25", dir)
	text, isErr := m.call("pay", map[string]any{"amount": 7})
	m.stop()
	if !isErr || !strings.Contains(text, "answered decline") || asked.Load() != 1 {
		t.Errorf("declined: error %v, asked %d, %s", isErr, asked.Load(), text)
	}
	m = serveMCPAt(t, db, answering("accept", &asked), "2025-11-25", dir)
	text, isErr = m.call("pay", map[string]any{"amount": 7})
	m.stop()
	if isErr || !strings.Contains(text, `"paid":true`) || asked.Load() != 2 {
		t.Errorf("accepted: error %v, asked %d, %s", isErr, asked.Load(), text)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Errorf("pay ran %d times (%q), want once", len(got), got)
	}
}
