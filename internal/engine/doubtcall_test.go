package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine"
)

// TestReconcileACallOutsideTheRunner: a driver outside the runner (the
// Temporal workflow) names a call in doubt — a for_each item's, an item's
// fallback's, a repeat round's, a step's fallback's — and Reconcile asks
// its tool's check with that call's key, as a local resume does: found in
// the ledger, it happened, with the check's output; not found, a person
// decides, told what the check found, unless a person had approved the
// call (made again). ReconcilesCall says whether to ask.
func TestReconcileACallOutsideTheRunner(t *testing.T) {
	cases := []struct {
		child string
		req   engine.AttemptRequest
		key   string
	}{
		{"each", engine.AttemptRequest{Item: 1, Attempt: 1}, "refund-run/refund[1]/1"},
		{"fallback", engine.AttemptRequest{Item: 1, Attempt: 1, Fallback: true}, "refund-run/refund[1]/fallback/1"},
		{"repeat", engine.AttemptRequest{Item: -1, Attempt: 1, Round: 2, Previous: map[string]any{"refund_id": "r:x"}}, "refund-run/refund#2/1"},
		{"stepfallback", engine.AttemptRequest{Item: -1, Attempt: 1, Fallback: true}, "refund-run/refund/fallback/1"},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.child, func(t *testing.T) {
			dir := t.TempDir()
			// the ledger holds another call only (the same step's, attempt 2).
			ledger := filepath.Join(dir, "ledger")
			if err := os.WriteFile(ledger, []byte(strings.TrimSuffix(tc.key, "1")+"2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			reg := reconcileTools(dir, "", "ledger")
			f := reconcileFlowFor(t, reg, tc.child)
			e := engine.New(engine.Config{Tools: reg, Models: reconcileModels()})
			again, check, err := e.ReconcilesCall(f, 0, tc.req.Fallback)
			if err != nil || again || !check {
				t.Fatalf("ReconcilesCall: again %v, check %v (%v): want its check asked", again, check, err)
			}
			req := tc.req
			req.RunID = "refund-run"
			s := &engine.Settled{Input: map[string]any{}}
			rc, err := e.Reconcile(ctx, f, s, req)
			if err != nil {
				t.Fatal(err)
			}
			if rc.Happened || rc.Again || !strings.Contains(rc.Reason, "call "+tc.key+" did not take effect") {
				t.Fatalf("before the call: %+v, want a person told the check found %s not made", rc, tc.key)
			}
			req.Approved = true
			if rc, err = e.Reconcile(ctx, f, s, req); err != nil || !rc.Again {
				t.Fatalf("approved: %+v (%v), want it made again", rc, err)
			}
			if err := os.WriteFile(ledger, []byte(tc.key+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			req.Approved = false
			rc, err = e.Reconcile(ctx, f, s, req)
			if err != nil || !rc.Happened || rc.Output.(map[string]any)["refund_id"] != "r:"+tc.key {
				t.Fatalf("after the call: %+v (%v), want it happened, with the check's output", rc, err)
			}
		})
	}
}
