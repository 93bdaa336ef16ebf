package temporal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
)

// TestSagaFreezeRegisters: a failed saga's call that cannot be taken back
// (irreversible, not tagged for a person) is frozen, and the objects its
// tool declares it wrote are registered as invalid in the worker's run
// store under the run's tenant (activity freeze:pay), as a local saga
// registers them.
func TestSagaFreezeRegisters(t *testing.T) {
	l := newLedger()
	p := load(t, `name: freeze_register
on_failure: compensate
steps:
  - {id: pay, tool: pay, args: {order: "1042"}}
  - {id: ship, tool: ship, args: {fail: true}, requires: [pay]}
`, l.toolOf(tool.Spec{Name: "pay", Effect: tool.EffectWrite, Reversibility: tool.Irreversible, Resources: []string{"bank:payment/{args.order}"}}),
		l.toolOf(tool.Spec{Name: "ship", Effect: tool.EffectWrite, Idempotent: true}))
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fs := NewFlows()
	fs.Store = st
	fs.Add(p)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env, &Workflow{Flows: fs}, &Activities{Flows: fs})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	in.Tenant = "acme"
	res := (&harness{t: t, env: env, p: p}).runStart(in)
	if res.Status != "failed" || strings.Join(l.order, ",") != "pay,ship" {
		t.Fatalf("run %s, calls %v", res.Status, l.order)
	}
	rows, err := st.Invalidated(ctx, &store.InvalidatedParams{Tenant: "acme"})
	if err != nil || len(rows) != 1 || rows[0].Resource != "bank:payment/1042" || rows[0].RunID != "run-1" || rows[0].CallKey != "run-1/pay/1" ||
		!strings.Contains(rows[0].Reason, "cannot be taken back") {
		t.Fatalf("acme's invalidated resources %+v, %v; want bank:payment/1042 of run-1/pay/1", rows, err)
	}
}
