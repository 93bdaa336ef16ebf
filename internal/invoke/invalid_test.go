package invoke_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
)

// TestInvalidatedResources: with a run's Invalid in its context, on a
// real SQLite store, a pausable caller's (an agent's) read of an
// invalidated resource is made and flagged; a write of it, or a write made
// from the read's output (a tainted origin), waits for a person whatever
// the gate (AllowAll here); an approved one is made; a resource only the
// output names is flagged after the call; another tenant's run sees none.
func TestInvalidatedResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Invalidate(ctx, []*store.Invalidation{{Tenant: "acme", Resource: "acct:a-1", RunID: "r0", CallKey: "r0/pay/1", Premise: "p"}}); err != nil {
		t.Fatal(err)
	}
	made := 0
	fn := func(out any) func(context.Context, any) (any, error) {
		return func(context.Context, any) (any, error) { made++; return out, nil }
	}
	read := tool.Func(tool.Spec{Name: "read", Effect: tool.EffectRead, Resources: []string{"acct:{args.id}"}}, fn(map[string]any{"owner": "ann"}))
	pay := tool.Func(tool.Spec{Name: "pay", Effect: tool.EffectWrite, Resources: []string{"acct:{args.id}"}}, fn(map[string]any{}))
	note := tool.Func(tool.Spec{Name: "note", Effect: tool.EffectWrite}, fn(map[string]any{}))
	find := tool.Func(tool.Spec{Name: "find", Effect: tool.EffectRead, Resources: []string{"acct:{output.id}"}}, fn(map[string]any{"id": "a-1"}))
	p := &invoke.Pipeline{Gate: safety.AllowAll}
	call := func(ctx context.Context, tl tool.Tool, args any, prov safety.Provenance, approved bool) (*probe, invoke.Outcome, error) {
		pr := &probe{}
		_, outcome, err := p.Call(ctx, &invoke.Request{Tool: tl, Args: args, Recorder: pr, Provenance: prov, Pausable: true, Approved: approved,
			At: invoke.Position{RunID: "r1", StepID: "s", Attempt: 1}})
		return pr, outcome, err
	}
	run := invoke.WithInvalid(ctx, &invoke.Invalid{Store: st, Tenant: "acme"})

	pr, outcome, err := call(run, read, map[string]any{"id": "a-1"}, nil, false)
	if err != nil || outcome != invoke.OK || made != 1 {
		t.Fatalf("read: %v %s, made %d", err, outcome, made)
	}
	rec := pr.records[0]
	if len(rec.Invalidated) != 1 || rec.Invalidated[0].Resource != "acct:a-1" || rec.Invalidated[0].RunID != "r0" || rec.Invalidated[0].After {
		t.Errorf("read's record: %+v", rec.Invalidated)
	}
	if os := rec.Provenance[""]; len(os) != 1 || os[0] != safety.OriginInvalidated {
		t.Errorf("read's provenance: %v", rec.Provenance)
	}
	if c := rec.Journal("succeeded", nil, false); len(c.Invalidated) != 1 {
		t.Errorf("read's journal record: %+v", c)
	}

	_, outcome, err = call(run, pay, map[string]any{"id": "a-1"}, nil, false)
	var ae *invoke.ApprovalError
	if outcome != invoke.AwaitingApproval || !errors.As(err, &ae) || made != 1 {
		t.Fatalf("pay: %v %s, made %d", err, outcome, made)
	}
	for _, want := range []string{safety.InvalidatedRuleName, "acct:a-1", "run r0", "premise p", "rein resources clear acct:a-1"} {
		if !strings.Contains(ae.Reason, want) {
			t.Errorf("pay's reason lacks %q: %s", want, ae.Reason)
		}
	}
	if _, outcome, err = call(run, pay, map[string]any{"id": "a-1"}, nil, true); err != nil || outcome != invoke.OK || made != 2 {
		t.Fatalf("approved pay: %v %s, made %d", err, outcome, made)
	}

	// a write made from the read's output: the read tool's origin (db) is
	// tainted in this run.
	fromRead := safety.Provenance{"/who": {safety.OriginDB}}
	if _, outcome, err = call(run, note, map[string]any{"who": "ann"}, fromRead, false); outcome != invoke.AwaitingApproval || !errors.As(err, &ae) ||
		!strings.Contains(ae.Reason, "acct:a-1 was invalidated by run r0") {
		t.Fatalf("note from the read: %v %s", err, outcome)
	}
	if _, outcome, err = call(run, note, map[string]any{"who": "ann"}, safety.Provenance{"/who": {safety.OriginUser}}, false); err != nil || outcome != invoke.OK {
		t.Errorf("note from the user: %v %s", err, outcome)
	}

	// a resource only the output names: flagged after the call.
	fresh := invoke.WithInvalid(ctx, &invoke.Invalid{Store: st, Tenant: "acme"})
	pr, outcome, err = call(fresh, find, map[string]any{}, nil, false)
	if err != nil || outcome != invoke.OK || len(pr.records[0].Invalidated) != 1 || !pr.records[0].Invalidated[0].After {
		t.Errorf("find: %v %s %+v", err, outcome, pr.records)
	}

	// another tenant: nothing is invalid.
	other := invoke.WithInvalid(ctx, &invoke.Invalid{Store: st, Tenant: "globex"})
	if pr, outcome, err = call(other, pay, map[string]any{"id": "a-1"}, nil, false); err != nil || outcome != invoke.OK || len(pr.records[0].Invalidated) != 0 {
		t.Errorf("another tenant's pay: %v %s %+v", err, outcome, pr.records)
	}
}
