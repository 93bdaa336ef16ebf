package rein_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

const ordersFlow = `name: orders
steps:
  - {id: find, tool: lookup, args: {order: "{input.order}"}}
  - {id: review, type: approval, message: "ship it?"}
  - {id: ship, tool: lookup, approval: required, args: {order: "{find.status}"}}
`

// runsFixture is a SQLite file holding runs of ordersFlow, started with
// the Go tool lookup.
type runsFixture struct {
	t     *testing.T
	ctx   context.Context
	st    rein.Store
	p     *rein.Project
	tools []tool.Tool
}

func newRunsFixture(t *testing.T) *runsFixture {
	t.Helper()
	ctx := context.Background()
	st, err := rein.OpenStore(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tools := []tool.Tool{lookupTool()}
	p, err := rein.Load(writeFlowDir(t, ordersFlow), &rein.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return &runsFixture{t: t, ctx: ctx, st: st, p: p, tools: tools}
}

// start starts a run with id; it waits on review.
func (fx *runsFixture) start(id string) {
	fx.t.Helper()
	res, err := fx.p.Start(fx.ctx, map[string]any{"order": "A-7"}, &rein.RunConfig{Store: fx.st}, &rein.RunOptions{RunID: id})
	if err != nil || res.Status != rein.StatusWaiting {
		fx.t.Fatalf("start %s: %v %v", id, res, err)
	}
}

// runs returns the run operations with the Go tools (withTools) or none.
func (fx *runsFixture) runs(withTools bool) *rein.Runs {
	fx.t.Helper()
	o := &rein.RunsOptions{}
	if withTools {
		o.Load = &rein.LoadOptions{Tools: fx.tools}
	}
	r, err := rein.NewRuns(fx.st, o)
	if err != nil {
		fx.t.Fatal(err)
	}
	return r
}

// wantErr checks err's class and hint code and returns its hint.
func wantErr(t *testing.T, what string, err error, class rein.ErrorClass, code rein.HintCode) rein.Hint {
	t.Helper()
	var e *rein.Error
	if !errors.As(err, &e) || e.Class != class || e.Hint.Code != code || rein.ClassOf(err) != class {
		t.Fatalf("%s: %v (%#v), want a %s *rein.Error with hint %s", what, err, err, class, code)
	}
	return e.Hint
}

// Decide and Resume take the caller's Go tools: without them the decision
// is recorded and the resume says which tools it needs; with them the run
// goes on to the end.
func TestRunsResumeWithTheCallersGoTools(t *testing.T) {
	t.Parallel()
	fx := newRunsFixture(t)
	fx.start("r1")
	bare := fx.runs(false)

	v, err := bare.Show(fx.ctx, "r1")
	if err != nil || !slices.Equal(v.NeedsTools, []string{"lookup"}) {
		t.Fatalf("show without the tools: %v %+v", err, v)
	}
	out, err := bare.Decide(fx.ctx, "r1", "review", rein.Decision{Status: rein.ApprovalApproved, By: "ops", Comment: "ok"}, &rein.DecideOptions{Resume: true})
	h := wantErr(t, "decide and resume without the tools", err, rein.ClassBusiness, rein.HintNeedsTools)
	if !slices.Equal(h.Tools, []string{"lookup"}) || h.RunID != "r1" || out == nil || out.Approval == nil || out.Approval.Status != rein.ApprovalApproved {
		t.Fatalf("hint %+v, outcome %+v", h, out)
	}
	if strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), "decision is recorded") {
		t.Fatalf("the error is for a program, not a CLI: %v", err)
	}
	_, err = bare.Resume(fx.ctx, "r1", nil)
	wantErr(t, "resume without the tools", err, rein.ClassBusiness, rein.HintNeedsTools)

	full := fx.runs(true)
	if v, err := full.Show(fx.ctx, "r1"); err != nil || len(v.NeedsTools) != 0 {
		t.Fatalf("show with the tools: %v %+v", err, v)
	}
	res, err := full.Resume(fx.ctx, "last", nil)
	if err != nil || res.Result.Status != rein.StatusWaiting || len(res.Result.Pending) != 1 || res.Result.Pending[0].StepID != "ship" {
		t.Fatalf("resume with the tools: %v %+v", err, res)
	}
	if !slices.Equal(res.StepOrder, []string{"find", "review", "ship"}) {
		t.Fatalf("step order %v", res.StepOrder)
	}
	res, err = full.Decide(fx.ctx, "r1", "ship", rein.Decision{Status: rein.ApprovalApproved, By: "ops"}, &rein.DecideOptions{Resume: true})
	if err != nil || res.Result.Status != rein.StatusSucceeded || res.Approval.StepID != "ship" {
		t.Fatalf("decide ship: %v %+v", err, res)
	}
	if got := res.Result.Outputs["ship"].(map[string]any)["status"]; got != "shipped:shipped:A-7" {
		t.Fatalf("ship output %v", got)
	}
	again, err := full.Resume(fx.ctx, "r1", nil)
	if err != nil || !again.Finished || again.Result.Status != rein.StatusSucceeded {
		t.Fatalf("resume a finished run: %v %+v", err, again)
	}
}

// Every error of the run operations has its class and hint.
func TestRunsErrors(t *testing.T) {
	t.Parallel()
	fx := newRunsFixture(t)
	for _, id := range []string{"ab-1", "ab-2", "held", "done"} {
		fx.start(id)
	}
	runs := fx.runs(true)
	ctx := fx.ctx

	_, err := runs.Show(ctx, "nope")
	wantErr(t, "show nope", err, rein.ClassNotFound, rein.HintNoRun)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("not found: %v does not wrap store.ErrNotFound", err)
	}
	_, err = runs.Resume(ctx, "ab-", nil)
	wantErr(t, "resume ab-", err, rein.ClassConflict, rein.HintAmbiguousRun)
	var amb *rein.AmbiguousRunError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Fatalf("ambiguous: %v", err)
	}

	approve := rein.Decision{Status: rein.ApprovalApproved, By: "ann"}
	if _, err := runs.Decide(ctx, "ab-1", "review", approve, nil); err != nil {
		t.Fatal(err)
	}
	_, err = runs.Decide(ctx, "ab-1", "review", rein.Decision{Status: rein.ApprovalRejected, By: "bob"}, nil)
	h := wantErr(t, "decide twice", err, rein.ClassConflict, rein.HintAlreadyDecided)
	if h.Status != "approved" || h.DecidedBy != "ann" || h.DecidedAt.IsZero() || !strings.Contains(err.Error(), "already approved by ann") {
		t.Fatalf("already decided: %+v %v", h, err)
	}
	_, err = runs.Decide(ctx, "ab-2", "find", approve, nil)
	h = wantErr(t, "decide a step that does not wait", err, rein.ClassBusiness, rein.HintNothingToDecide)
	if !slices.Equal(h.Waiting, []string{"review"}) {
		t.Fatalf("nothing to decide: %+v", h)
	}
	for _, d := range []rein.Decision{{Status: "maybe"}, {Status: rein.ApprovalSettled}, {Status: rein.ApprovalSettled, Output: json.RawMessage(`{`)}} {
		_, err = runs.Decide(ctx, "ab-2", "review", d, nil)
		wantErr(t, "decision "+string(d.Status), err, rein.ClassBusiness, "")
	}

	if _, err := fx.st.AcquireLease(ctx, &store.LeaseParams{RunID: "held", Owner: "elsewhere", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_, err = runs.Cancel(ctx, "held", "")
	h = wantErr(t, "cancel a held run", err, rein.ClassConflict, rein.HintHeldByAnotherProcess)
	if h.Owner != "elsewhere" || h.Until.Before(time.Now()) || h.Since.IsZero() || h.Since.After(h.Until) || !strings.Contains(err.Error(), "wait for its lease to expire") {
		t.Fatalf("held: %+v %v", h, err)
	}
	_, err = runs.Resume(ctx, "held", nil)
	if h = wantErr(t, "resume a held run", err, rein.ClassConflict, rein.HintHeldByAnotherProcess); h.Owner != "elsewhere" {
		t.Fatalf("held: %+v", h)
	}

	run, err := runs.Cancel(ctx, "done", "not today")
	if err != nil || run.Status != rein.StatusCancelled {
		t.Fatalf("cancel: %v %+v", err, run)
	}
	_, err = runs.Cancel(ctx, "done", "")
	if h = wantErr(t, "cancel twice", err, rein.ClassConflict, rein.HintRunFinished); h.Status != "cancelled" {
		t.Fatalf("finished: %+v", h)
	}
	_, err = runs.Decide(ctx, "done", "review", approve, nil)
	wantErr(t, "decide a cancelled run", err, rein.ClassConflict, rein.HintRunFinished)

	if _, err := runs.Prune(ctx, &rein.PruneParams{Status: rein.StatusWaiting}); rein.ClassOf(err) != rein.ClassBusiness {
		t.Fatalf("prune waiting runs: %v", err)
	}
	if _, err := rein.NewRuns(nil, nil); err == nil {
		t.Fatal("NewRuns without a store")
	}
}

// Show returns what `rein runs show -o json` prints; List, Cancel and
// Prune work on the same rows.
func TestRunsShowListPrune(t *testing.T) {
	t.Parallel()
	fx := newRunsFixture(t)
	fx.start("r1")
	fx.start("r2")
	runs := fx.runs(true)
	ctx := fx.ctx
	if _, err := runs.Decide(ctx, "r1", "review", rein.Decision{Status: rein.ApprovalApproved, By: "ann", Comment: "fine"}, nil); err != nil {
		t.Fatal(err)
	}
	v, err := runs.Show(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if v.Run.ID != "r1" || len(v.Steps) != 2 || v.Steps[0].StepID != "find" || v.Steps[0].Attempt != 1 || len(v.Steps[0].Output) == 0 ||
		len(v.Approvals) != 1 || v.Approvals[0].Comment != "fine" || len(v.Pending()) != 0 {
		t.Fatalf("view %+v", v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	step := doc["steps"].([]any)[0].(map[string]any)
	if doc["run"].(map[string]any)["id"] != "r1" || step["step_id"] != "find" || step["llm_calls"] != 0.0 || doc["approvals"] == nil {
		t.Fatalf("view JSON %s", b)
	}

	rows, err := runs.List(ctx, &rein.ListRunsParams{Status: rein.StatusWaiting})
	if err != nil || len(rows) != 1 || rows[0].ID != "r2" {
		t.Fatalf("list waiting: %v %+v", err, rows)
	}
	if _, err := runs.Cancel(ctx, "r2", ""); err != nil {
		t.Fatal(err)
	}
	sel, err := runs.Prune(ctx, &rein.PruneParams{Status: rein.StatusCancelled, DryRun: true})
	if err != nil || sel.Runs != 1 || !slices.Equal(sel.RunIDs, []string{"r2"}) {
		t.Fatalf("prune dry run: %v %+v", err, sel)
	}
	if every, err := runs.EmptiesStore(ctx, sel); err != nil || every {
		t.Fatalf("pruning r2 empties the store: %v %v", every, err)
	}
	res, err := runs.Prune(ctx, nil)
	if err != nil || res.Runs != 1 {
		t.Fatalf("prune: %v %+v", err, res)
	}
	_, err = runs.Show(ctx, "r2")
	wantErr(t, "show a pruned run", err, rein.ClassNotFound, rein.HintNoRun)
}
