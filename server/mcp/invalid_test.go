package mcp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// TestServedToolsMeetInvalidatedResources: a tool the server serves is
// checked against the store's invalidated resources as every call of a
// run: a read of one is made and its ledger record names it; a write of
// one asks the host's user with the rule invalidated-resource, naming the
// run that invalidated it.
func TestServedToolsMeetInvalidatedResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Invalidate(ctx, []*store.Invalidation{{Resource: "acct:a-1", RunID: "r0", CallKey: "r0/pay/1", Premise: "p"}}); err != nil {
		t.Fatal(err)
	}
	c, err := rein.Open(ctx, rein.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	balance := tool.Func(tool.Spec{Name: "balance", Effect: tool.EffectRead, Resources: []string{"acct:{args.id}"}},
		func(context.Context, any) (any, error) { return map[string]any{"balance": 10}, nil })
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.EffectWrite, Resources: []string{"acct:{args.id}"}},
		func(context.Context, any) (any, error) { return map[string]any{"paid": true}, nil })
	srv, err := mcp.New(ctx, c, &mcp.Options{Tools: []tool.Tool{balance, pay}})
	if err != nil {
		t.Fatal(err)
	}
	hs := serveHTTP(t, srv)
	var asked []string
	opts := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params.Message)
		return &sdk.ElicitResult{Action: "decline"}, nil
	}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "balance", Arguments: map[string]any{"id": "a-1"}}); err != nil || res.IsError {
		t.Fatalf("balance: %v %+v", err, res)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "pay", Arguments: map[string]any{"id": "a-1"}}); err != nil || !res.IsError {
		t.Fatalf("pay, declined: %v %+v", err, res)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "rule invalidated-resource") || !strings.Contains(asked[0], "acct:a-1 was invalidated by run r0") {
		t.Errorf("the host's user was asked %q", asked)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	runs, err := st.ListRuns(ctx, &store.ListRunsParams{Flow: mcp.LedgerFlow})
	if err != nil || len(runs) != 1 {
		t.Fatalf("ledger runs: %v %+v", err, runs)
	}
	calls, err := st.Calls(ctx, runs[0].ID, "balance")
	if err != nil || len(calls) != 1 || len(calls[0].Invalidated) != 1 || calls[0].Invalidated[0].Resource != "acct:a-1" {
		t.Errorf("balance's ledger record: %v %+v", err, calls)
	}
}
