package rein_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestPostgresSagaAndRemediation: on PostgreSQL, a failed run whose flow
// says on_failure: compensate compensates its calls latest first — the
// tier-4 one once a person approved it, the run waiting meanwhile — and
// ends failed; a remediation of a finished-then-waiting run cancels it, takes
// back what the premise touched, puts it back to waiting for the frozen
// message's escalation, and a person's decision ends it cancelled. The
// store's rows (run status, approvals) say so after every step.
func TestPostgresSagaAndRemediation(t *testing.T) {
	dsn := pgDSN(t)
	ctx := context.Background()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: "rein_remedy_" + hex.EncodeToString(rnd[:])})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sagaAndRemediation(t, st)
}

// TestSQLiteSagaAndRemediation is TestPostgresSagaAndRemediation on
// SQLite, so that the two backends are held to one story.
func TestSQLiteSagaAndRemediation(t *testing.T) {
	t.Parallel()
	st, err := openStore(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sagaAndRemediation(t, st)
}

func sagaAndRemediation(t *testing.T, st store.Store) {
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
		return slices.Clone(log)
	}
	str := func(args any, k string) string { s, _ := args.(map[string]any)[k].(string); return s }
	tools := []tool.Tool{
		tool.Func(tool.Spec{Name: "create", Effect: tool.EffectWrite, Reversibility: tool.Compensatable,
			Compensate: &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}"}}, Resources: []string{"crm:customer/{output.id}"}},
			func(_ context.Context, args any) (any, error) {
				note("create " + str(args, "name"))
				return map[string]any{"id": "c-" + str(args, "name")}, nil
			}),
		tool.Func(tool.Spec{Name: "link", Effect: tool.EffectWrite, Reversibility: tool.Reversible,
			Undo: &tool.Compensation{Tool: "unlink", Args: map[string]any{"customer": "{args.customer}"}}},
			func(_ context.Context, args any) (any, error) {
				note("link " + str(args, "customer"))
				return map[string]any{}, nil
			}),
		tool.Func(tool.Spec{Name: "notify", Effect: tool.EffectExternal, Reversibility: tool.Irreversible, Tags: []string{"user-facing"},
			Resources: []string{"mail:{args.to}"}},
			func(_ context.Context, args any) (any, error) {
				note("notify " + str(args, "to"))
				return map[string]any{}, nil
			}),
		tool.Func(tool.Spec{Name: "archive", Effect: tool.EffectWrite},
			func(_ context.Context, args any) (any, error) {
				note("archive " + str(args, "id"))
				return map[string]any{}, nil
			}),
		tool.Func(tool.Spec{Name: "unlink", Effect: tool.EffectWrite},
			func(_ context.Context, args any) (any, error) {
				note("unlink " + str(args, "customer"))
				return map[string]any{}, nil
			}),
		tool.Func(tool.Spec{Name: "broken", Effect: tool.EffectNone},
			func(context.Context, any) (any, error) { return nil, fault.New(fault.Business, errors.New("down")) }),
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

	// the archive is costed at tier 4: the saga unlinks at once, then
	// waits for a person to approve the archive.
	saga := load(`name: saga
on_failure: compensate
risk: {costs: {tools: {archive: 4}}}
steps:
  - {id: create, tool: create, args: {name: ann}}
  - {id: link, tool: link, args: {customer: "{create.id}"}}
  - {id: fail, tool: broken, args: {}}
`)
	res, err := clientOf(&engine.Config{Store: st}).Run(ctx, saga, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "create/1/compensate" {
		t.Fatalf("saga: %s %v, pending %+v", res.Status, res.Error, res.Pending)
	}
	if got := strings.Join(taken(), ", "); got != "create ann, link c-ann, unlink c-ann" {
		t.Fatalf("saga calls: %s", got)
	}
	c, err := loadClient(st, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decide(ctx, res.RunID, "create/1/compensate", rein.Decision{Status: store.ApprovalApproved, Comment: "archive it"},
		&rein.DecideOptions{Resume: true})
	if err != nil || out.Result.Status != trace.RunFailed {
		t.Fatalf("approve the archive: %v %+v", err, out)
	}
	if got := strings.Join(taken(), ", "); got != "create ann, link c-ann, unlink c-ann, archive c-ann" {
		t.Fatalf("saga calls: %s", got)
	}
	if row, err := st.GetRun(ctx, res.RunID); err != nil || row.Status != trace.RunFailed {
		t.Fatalf("saga row: %v %+v", err, row)
	}

	mu.Lock()
	log = nil
	mu.Unlock()
	onboard := load(`name: onboard
steps:
  - {id: create, tool: create, args: {name: bob}}
  - {id: link, tool: link, args: {customer: "{create.id}"}}
  - {id: welcome, tool: notify, args: {to: "bob@example.com", customer: "{create.id}"}}
  - {id: check, type: approval, message: "is bob right?"}
`)
	res, err = clientOf(&engine.Config{Store: st}).Run(ctx, onboard, nil)
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("onboard: %v %+v", err, res)
	}
	m, err := c.Remediate(ctx, res.RunID, "create", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(taken(), ", "); got != "create bob, link c-bob, notify bob@example.com, unlink c-bob, archive c-bob" {
		t.Errorf("remediation calls: %s", got)
	}
	pending := m.Run.Pending()
	if m.Run.Run.Status != trace.RunWaiting || len(pending) != 1 || pending[0].StepID != "welcome/1/freeze" {
		t.Fatalf("after remediate: %s, pending %+v", m.Run.Run.Status, pending)
	}
	out, err = c.Decide(ctx, res.RunID, "welcome/1/freeze", rein.Decision{Status: store.ApprovalApproved, Comment: "called bob"},
		&rein.DecideOptions{Resume: true})
	if err != nil || out.Result.Status != trace.RunCancelled {
		t.Fatalf("decide: %v %+v", err, out)
	}
	row, err := st.GetRun(ctx, res.RunID)
	if err != nil || row.Status != trace.RunCancelled {
		t.Fatalf("run row at the end: %v %+v", err, row)
	}
	left, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: res.RunID, Status: store.ApprovalPending})
	if err != nil || len(left) != 0 {
		t.Errorf("approvals left pending: %v %+v", err, left)
	}
}
