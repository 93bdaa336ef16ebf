package mcp_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestLedgerOverHTTP: a Go program serves a side-effect tool over
// streamable HTTP with a Client of SQLite, and of PostgreSQL when the
// test server runs, to hosts of the latest protocol and of 2025-11-25; a host whose user accepts gets the call made once
// with the key its record holds, one whose user declines gets a refusal
// and no call; every call is a record of the server's ledger run, which
// Close makes succeeded.
func TestLedgerOverHTTP(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"postgres": openPostgres,
	}
	for name, open := range stores {
		// "": the SDK's latest protocol (the answer comes with the call made
		// again); 2025-11-25: the server asks with a request of its own.
		for _, version := range []string{"", "2025-11-25"} {
			t.Run(name+"/"+version, func(t *testing.T) {
				t.Parallel()
				st := open(t)
				defer st.Close()
				checkLedger(t, st, version)
			})
		}
	}
}

func checkLedger(t *testing.T, st store.Store, version string) {
	ctx := context.Background()
	c, err := rein.Open(ctx, rein.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var keys []string
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, tool.CallInfoFrom(ctx).IdempotencyKey)
		return map[string]any{"paid": true}, nil
	})
	srv, err := mcp.New(ctx, c, &mcp.Options{Tools: []tool.Tool{pay}})
	if err != nil {
		t.Fatal(err)
	}
	hs := serveHTTP(t, srv)
	call := func(action string) (*sdk.CallToolResult, error) {
		opts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: action}, nil
		}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		return cs.CallTool(ctx, &sdk.CallToolParams{Name: "pay", Arguments: map[string]any{"amount": 9999}})
	}
	if res, err := call("decline"); err != nil || !res.IsError || !strings.Contains(text(res), "answered decline") {
		t.Fatalf("declined: %v, %+v", err, res)
	}
	if res, err := call("accept"); err != nil || res.IsError || text(res) != `{"paid":true}` {
		t.Fatalf("accepted: %v, %+v", err, res)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	runs, err := st.ListRuns(ctx, &store.ListRunsParams{Flow: mcp.LedgerFlow})
	if err != nil || len(runs) != 1 || runs[0].Status != "succeeded" {
		t.Fatalf("ledger runs: %v, %+v; want one, succeeded", err, runs)
	}
	calls, err := st.Calls(ctx, runs[0].ID, "pay")
	if err != nil || len(calls) != 2 {
		t.Fatalf("records: %v, %+v", err, calls)
	}
	if len(keys) != 1 || calls[1].Key != keys[0] || calls[1].Status != store.CallSucceeded || calls[0].Status != store.CallFailed {
		t.Errorf("calls made with keys %q; records %+v, %+v: want the declined one failed, the accepted one succeeded under its key", keys, calls[0], calls[1])
	}
	// each call's decisions are in its one record — the gate's hold, the
	// host's user's answer, and the gate's on the approved call — and in
	// no event of their own.
	for i, want := range []string{"require_approval block", "require_approval allow allow"} {
		var got []string
		for _, g := range calls[i].Gate {
			got = append(got, g.Verdict)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("record %s: decisions %q, want %s", calls[i].Key, got, want)
		}
	}
	evs, err := st.Events(ctx, runs[0].ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == trace.GateDecision {
			t.Errorf("event %d is a gate_decision event: a served call's decisions are in its call record", ev.Seq)
		}
	}
}

// serveHTTP serves srv over streamable HTTP for the test and returns its URL.
func serveHTTP(t *testing.T, srv *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// openPostgres opens a schema of its own on the test PostgreSQL, skipping
// without one (failing under CI).
func openPostgres(t *testing.T) store.Store {
	t.Helper()
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REIN_TEST_POSTGRES_DSN is not set under CI: .ci/run must start PostgreSQL")
		}
		t.Skip(`needs PostgreSQL: eval "$(bash .ci/postgres)"`)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: "rein_mcp_" + hex.EncodeToString(rnd[:])})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
