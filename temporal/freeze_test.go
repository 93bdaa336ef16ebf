package temporal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// registers them; a later run of the tenant whose tool step writes one
// waits for a person before its call (ask:amend, rule
// invalidated-resource), and rejected, never makes it.
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
	env := newTestEnv(&s)
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

	// a later run of acme whose call writes that object waits for a person.
	p2 := load(t, `name: touch
steps:
  - {id: amend, tool: amend, args: {order: "1042"}}
`, l.toolOf(tool.Spec{Name: "amend", Effect: tool.EffectWrite, Idempotent: true, Resources: []string{"bank:payment/{args.order}"}}))
	fs.Add(p2)
	env2 := newTestEnv(&s)
	Register(env2, &Workflow{Flows: fs}, &Activities{Flows: fs})
	env2.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-2"})
	in2, err := StartInput(p2, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	in2.Tenant = "acme"
	h2 := &harness{t: t, env: env2, p: p2}
	var reject *updated
	env2.RegisterDelayedCallback(func() {
		var pend []Pending
		h2.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "amend" || pend[0].Kind != "approval" || !strings.Contains(pend[0].Error, "invalidated-resource") {
			t.Errorf("a call that touches an invalidated object: pending %+v, want amend waiting for approval (rule invalidated-resource)", pend)
		}
		reject = h2.update(Decision{Step: "amend", Action: ActionReject, By: "ana"})
	}, time.Minute)
	res2 := h2.runStart(in2)
	if reject == nil || reject.err != nil || res2.Status != "failed" || l.count("amend") != 0 {
		t.Errorf("rejected: %+v; run %s, %d calls of amend; want it failed, none made", reject, res2.Status, l.count("amend"))
	}
}
