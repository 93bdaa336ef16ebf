package rein_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// TestExampleInvalidatedResources runs the story of
// examples/invalidated-resources: a payout remediated with a freeze
// invalidates its account; a later audit's note made from a read of it
// and a later payout from it wait for a person, naming the run that
// invalidated it; once cleared, the payout runs.
func TestExampleInvalidatedResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join("examples", "invalidated-resources")
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := loadClient(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	load := func(path string) *project.Project {
		p, err := project.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	payout, audit := load(dir), load(filepath.Join(dir, "audit.yaml"))
	pay := func(amount int) *rein.Result {
		t.Helper()
		res, err := c.Run(ctx, payout, map[string]any{"account": "acct-7", "amount": amount})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := pay(120)
	if first.Status != trace.RunSucceeded {
		t.Fatalf("payout: %s %v", first.Status, first.Error)
	}
	if _, err := c.Remediate(ctx, first.RunID, "check", nil); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Invalidated(ctx, &store.InvalidatedParams{})
	if err != nil || len(rows) != 1 || rows[0].Resource != "ledger:acct-7" || rows[0].RunID != first.RunID {
		t.Fatalf("registry: %v %+v", err, rows)
	}
	res, err := c.Run(ctx, audit, map[string]any{"account": "acct-7"})
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "note" {
		t.Fatalf("audit: %v %+v", err, res)
	}
	if msg := res.Pending[0].Message; !strings.Contains(msg, "ledger:acct-7 was invalidated by run "+first.RunID) {
		t.Errorf("the audit's note does not name what tainted it: %s", msg)
	}
	second := pay(50)
	if second.Status != trace.RunWaiting || len(second.Pending) != 1 || second.Pending[0].StepID != "pay" {
		t.Fatalf("payout 2: %s %v %+v", second.Status, second.Error, second.Pending)
	}
	if n, err := st.ClearInvalidated(ctx, &store.ClearInvalidatedParams{Resource: "ledger:acct-7"}); err != nil || n != 1 {
		t.Fatalf("clear: %d %v", n, err)
	}
	if third := pay(50); third.Status != trace.RunSucceeded {
		t.Fatalf("payout after the clear: %s %v %+v", third.Status, third.Error, third.Pending)
	}
}
