package rein_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestSQLiteInvalidatedResources: a resource a remediation froze in one
// run is recognised by later runs of the same store: a read of it is
// flagged (its call record names the resource and the run that froze it)
// and a write made from that read waits for a person (rule
// invalidated-resource); a write of it waits for a person too; once a
// person cleared the resource, the write runs. Another tenant's runs do
// not see it.
func TestSQLiteInvalidatedResources(t *testing.T) {
	t.Parallel()
	st, err := openStore(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	invalidatedResources(t, st)
}

// TestPostgresInvalidatedResources is TestSQLiteInvalidatedResources on
// PostgreSQL.
func TestPostgresInvalidatedResources(t *testing.T) {
	dsn := pgDSN(t)
	ctx := context.Background()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: "rein_invalid_" + hex.EncodeToString(rnd[:])})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	invalidatedResources(t, st)
}

func invalidatedResources(t *testing.T, st store.Store) {
	ctx := context.Background()
	var mu sync.Mutex
	var log []string
	note := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(log)
		log = nil
		return out
	}
	str := func(args any, k string) string { s, _ := args.(map[string]any)[k].(string); return s }
	tools := []tool.Tool{
		tool.Func(tool.Spec{Name: "pay", Effect: tool.EffectWrite, Reversibility: tool.Irreversible, Resources: []string{"acct:{args.acct}"}},
			func(_ context.Context, args any) (any, error) {
				note("pay " + str(args, "acct"))
				return map[string]any{"paid": true}, nil
			}),
		tool.Func(tool.Spec{Name: "balance", Effect: tool.EffectRead, Resources: []string{"acct:{args.acct}"}},
			func(_ context.Context, args any) (any, error) {
				note("balance " + str(args, "acct"))
				return map[string]any{"acct": str(args, "acct"), "balance": 10}, nil
			}),
		// a read whose resource only its output names.
		tool.Func(tool.Spec{Name: "owner", Effect: tool.EffectRead, Resources: []string{"acct:{output.acct}"}},
			func(_ context.Context, args any) (any, error) {
				note("owner " + str(args, "name"))
				return map[string]any{"acct": "a-1"}, nil
			}),
		tool.Func(tool.Spec{Name: "note", Effect: tool.EffectWrite},
			func(_ context.Context, args any) (any, error) {
				note("note " + str(args, "text"))
				return map[string]any{}, nil
			}),
	}
	load := func(text string) *project.Project {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := project.Load(dir, &project.LoadOptions{Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	c, err := loadClient(st, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	run := func(p *project.Project, tenant string) *rein.Result {
		t.Helper()
		res, err := c.Start(ctx, p, nil, &rein.RunOptions{Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	calls := func(runID string) map[string]*store.Call {
		t.Helper()
		cs, err := st.Calls(ctx, runID, "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*store.Call{}
		for _, c := range cs {
			out[c.StepID] = c
		}
		return out
	}

	// run 1 pays a-1, and is remediated: the payment cannot be taken
	// back, so it is frozen and a-1 is invalid.
	payA1 := load(`name: pay
steps:
  - {id: charge, tool: pay, args: {acct: a-1}}
`)
	first := run(payA1, "acme")
	if first.Status != trace.RunSucceeded {
		t.Fatalf("run 1: %s %v", first.Status, first.Error)
	}
	if _, err := c.Remediate(ctx, first.RunID, "charge", nil); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Invalidated(ctx, &store.InvalidatedParams{Tenant: "acme"})
	if err != nil || len(rows) != 1 || rows[0].Resource != "acct:a-1" || rows[0].RunID != first.RunID || rows[0].Premise != "charge" {
		t.Fatalf("the registry after the remediation: %v %+v", err, rows)
	}
	_ = taken()

	// run 2 reads a-1: the read is made and flagged, and the note written
	// from its output waits for a person.
	readThenNote := load(`name: read
steps:
  - {id: read, tool: balance, args: {acct: a-1}}
  - {id: write, tool: note, args: {text: "{read.acct}"}}
`)
	second := run(readThenNote, "acme")
	if second.Status != trace.RunWaiting || len(second.Pending) != 1 || second.Pending[0].StepID != "write" {
		t.Fatalf("run 2: %s %v, pending %+v", second.Status, second.Error, second.Pending)
	}
	if got := strings.Join(taken(), ", "); got != "balance a-1" {
		t.Errorf("run 2 calls: %s", got)
	}
	cs := calls(second.RunID)
	if read := cs["read"]; read == nil || len(read.Invalidated) != 1 || read.Invalidated[0].Resource != "acct:a-1" || read.Invalidated[0].RunID != first.RunID {
		t.Errorf("run 2's read is not flagged: %+v", read)
	}
	if msg := second.Pending[0].Message; !strings.Contains(msg, "invalidated-resource") {
		t.Errorf("run 2's approval does not name the rule: %s", msg)
	}

	// run 3 pays a-1 again: it waits for a person, who is told which run
	// and premise invalidated it and how to clear it.
	third := run(payA1, "acme")
	if third.Status != trace.RunWaiting || len(third.Pending) != 1 || third.Pending[0].StepID != "charge" {
		t.Fatalf("run 3: %s %v, pending %+v", third.Status, third.Error, third.Pending)
	}
	msg := third.Pending[0].Message
	for _, want := range []string{"invalidated-resource", "acct:a-1", first.RunID, "premise charge", "rein resources clear acct:a-1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("run 3's approval message lacks %q: %s", want, msg)
		}
	}
	if w := calls(third.RunID)["charge"]; w == nil || len(w.Invalidated) != 1 {
		t.Errorf("run 3's waiting call is not flagged: %+v", w)
	}
	// an agent's calls meet it too: its read is made and flagged, its
	// payment waits for a person.
	agentDir := t.TempDir()
	for name, text := range map[string]string{
		"agent.yaml": "name: payer\nmodel: m\nexecute_plan: false\ntools:\n  balance:\n  pay:\n",
		"script.yaml": `replies:
  - step: agent
    decision: agent
    turn: 1
    tool_calls:
      - {name: balance, args: {acct: a-1}}
      - {name: pay, args: {acct: a-1}}
`,
	} {
		if err := os.WriteFile(filepath.Join(agentDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ap, err := project.LoadAgent(agentDir, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ap.Close() })
	ar, err := c.Start(ctx, ap, map[string]any{"task": "pay a-1"}, &rein.RunOptions{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if ar.Status != trace.RunWaiting || len(ar.Pending) != 1 || ar.Pending[0].StepID != "agent/turn1/call2" ||
		!strings.Contains(ar.Pending[0].Message, "invalidated-resource") {
		t.Fatalf("agent run: %s %v, pending %+v", ar.Status, ar.Error, ar.Pending)
	}
	if got := strings.Join(taken(), ", "); got != "balance a-1" {
		t.Errorf("agent calls: %s", got)
	}

	// a read whose resource only its output names is flagged after it.
	second2 := run(load(`name: owner
steps:
  - {id: who, tool: owner, args: {name: ann}}
`), "acme")
	if second2.Status != trace.RunSucceeded {
		t.Fatalf("owner run: %s %v", second2.Status, second2.Error)
	}
	if who := calls(second2.RunID)["who"]; who == nil || len(who.Invalidated) != 1 || !who.Invalidated[0].After {
		t.Errorf("the owner read is not flagged after the call: %+v", who)
	}

	// another tenant's payment of a-1 runs: the registry is the tenant's.
	if other := run(payA1, "globex"); other.Status != trace.RunSucceeded {
		t.Fatalf("another tenant's run: %s %v %+v", other.Status, other.Error, other.Pending)
	}
	if cs := calls(first.RunID); len(cs) == 0 {
		t.Fatal("run 1 has no call records")
	}
	_ = taken()

	// a person clears a-1: the payment runs.
	if n, err := st.ClearInvalidated(ctx, &store.ClearInvalidatedParams{Tenant: "acme", Resource: "acct:a-1"}); err != nil || n != 1 {
		t.Fatalf("clear: %d %v", n, err)
	}
	fourth := run(payA1, "acme")
	if fourth.Status != trace.RunSucceeded {
		t.Fatalf("run 4 after the clear: %s %v %+v", fourth.Status, fourth.Error, fourth.Pending)
	}
	if got := strings.Join(taken(), ", "); got != "pay a-1" {
		t.Errorf("run 4 calls: %s", got)
	}
	if w := calls(fourth.RunID)["charge"]; w == nil || len(w.Invalidated) != 0 {
		t.Errorf("run 4's call is flagged after the clear: %+v", w)
	}
	// remediating run 1 again registers its freeze again, idempotently:
	// the clear holds.
	if _, err := c.Remediate(ctx, first.RunID, "charge", nil); err != nil {
		t.Fatal(err)
	}
	if fifth := run(payA1, "acme"); fifth.Status != trace.RunSucceeded {
		t.Fatalf("run 5 after remediating run 1 again: %s %v %+v", fifth.Status, fifth.Error, fifth.Pending)
	}
}
