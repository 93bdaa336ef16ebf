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
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
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
	st    store.Store
	p     *project.Project
	tools []tool.Tool
}

func newRunsFixture(t *testing.T) *runsFixture {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tools := []tool.Tool{lookupTool()}
	p, err := project.Load(writeFlowDir(t, ordersFlow), &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return &runsFixture{t: t, ctx: ctx, st: st, p: p, tools: tools}
}

// start starts a run with id; it waits on review.
func (fx *runsFixture) start(id string) {
	fx.t.Helper()
	res, err := clientOf(&engine.Config{Store: fx.st}).Start(fx.ctx, fx.p, map[string]any{"order": "A-7"}, &rein.RunOptions{RunID: id})
	if err != nil || res.Status != trace.RunWaiting {
		fx.t.Fatalf("start %s: %v %v", id, res, err)
	}
}

// runs returns the run operations with the Go tools (withTools) or none.
func (fx *runsFixture) runs(withTools bool) *rein.Client {
	fx.t.Helper()
	o := rein.Config{Store: fx.st}
	if withTools {
		o.Load = &project.LoadOptions{Tools: fx.tools}
	}
	r, err := rein.Open(fx.ctx, o)
	if err != nil {
		fx.t.Fatal(err)
	}
	return r
}

// wantErr checks err's class and hint code and returns its hint.
func wantErr(t *testing.T, what string, err error, class fault.Class, code fault.HintCode) fault.Hint {
	t.Helper()
	var e *rein.Error
	if !errors.As(err, &e) || e.Class != class || e.Hint.Code != code || fault.ClassOf(err) != class {
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

	v, err := bare.Runs().Show(fx.ctx, "r1")
	if err != nil || !slices.Equal(v.NeedsTools, []string{"lookup"}) {
		t.Fatalf("show without the tools: %v %+v", err, v)
	}
	out, err := bare.Decide(fx.ctx, "r1", "review", rein.Decision{Status: store.ApprovalApproved, By: "ops", Comment: "ok"}, &rein.DecideOptions{Resume: true})
	h := wantErr(t, "decide and resume without the tools", err, fault.Business, fault.HintNeedsTools)
	if !slices.Equal(h.Tools, []string{"lookup"}) || h.RunID != "r1" || out == nil || out.Approval == nil || out.Approval.Status != store.ApprovalApproved {
		t.Fatalf("hint %+v, outcome %+v", h, out)
	}
	if strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), "decision is recorded") {
		t.Fatalf("the error is for a program, not a CLI: %v", err)
	}
	_, err = bare.Resume(fx.ctx, "r1", nil)
	wantErr(t, "resume without the tools", err, fault.Business, fault.HintNeedsTools)

	full := fx.runs(true)
	if v, err := full.Runs().Show(fx.ctx, "r1"); err != nil || len(v.NeedsTools) != 0 {
		t.Fatalf("show with the tools: %v %+v", err, v)
	}
	res, err := full.Resume(fx.ctx, "last", nil)
	if err != nil || res.Result.Status != trace.RunWaiting || len(res.Result.Pending) != 1 || res.Result.Pending[0].StepID != "ship" {
		t.Fatalf("resume with the tools: %v %+v", err, res)
	}
	if !slices.Equal(res.StepOrder, []string{"find", "review", "ship"}) {
		t.Fatalf("step order %v", res.StepOrder)
	}
	res, err = full.Decide(fx.ctx, "r1", "ship", rein.Decision{Status: store.ApprovalApproved, By: "ops"}, &rein.DecideOptions{Resume: true})
	if err != nil || res.Result.Status != trace.RunSucceeded || res.Approval.StepID != "ship" {
		t.Fatalf("decide ship: %v %+v", err, res)
	}
	if got := res.Result.Outputs["ship"].(map[string]any)["status"]; got != "shipped:shipped:A-7" {
		t.Fatalf("ship output %v", got)
	}
	again, err := full.Resume(fx.ctx, "r1", nil)
	if err != nil || !again.Finished || again.Result.Status != trace.RunSucceeded {
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
	c := fx.runs(true)
	ctx := fx.ctx

	_, err := c.Runs().Show(ctx, "nope")
	wantErr(t, "show nope", err, fault.NotFound, fault.HintNoRun)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("not found: %v does not wrap store.ErrNotFound", err)
	}
	_, err = c.Resume(ctx, "ab-", nil)
	wantErr(t, "resume ab-", err, fault.Conflict, fault.HintAmbiguousRun)
	var amb *runs.AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Fatalf("ambiguous: %v", err)
	}

	approve := rein.Decision{Status: store.ApprovalApproved, By: "ann"}
	if _, err := c.Decide(ctx, "ab-1", "review", approve, nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.Decide(ctx, "ab-1", "review", rein.Decision{Status: store.ApprovalRejected, By: "bob"}, nil)
	h := wantErr(t, "decide twice", err, fault.Conflict, fault.HintAlreadyDecided)
	if h.Status != "approved" || h.DecidedBy != "ann" || h.DecidedAt.IsZero() || !strings.Contains(err.Error(), "already approved by ann") {
		t.Fatalf("already decided: %+v %v", h, err)
	}
	_, err = c.Decide(ctx, "ab-2", "find", approve, nil)
	h = wantErr(t, "decide a step that does not wait", err, fault.Business, fault.HintNothingToDecide)
	if !slices.Equal(h.Waiting, []string{"review"}) {
		t.Fatalf("nothing to decide: %+v", h)
	}
	for _, d := range []rein.Decision{{Status: "maybe"}, {Status: store.ApprovalSettled}, {Status: store.ApprovalSettled, Output: json.RawMessage(`{`)}} {
		_, err = c.Decide(ctx, "ab-2", "review", d, nil)
		wantErr(t, "decision "+string(d.Status), err, fault.Business, "")
	}

	if _, err := fx.st.AcquireLease(ctx, &store.LeaseParams{RunID: "held", Owner: "elsewhere", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Cancel(ctx, "held", "")
	h = wantErr(t, "cancel a held run", err, fault.Conflict, fault.HintHeldByAnotherProcess)
	if h.Owner != "elsewhere" || h.Until.Before(time.Now()) || h.Since.IsZero() || h.Since.After(h.Until) || !strings.Contains(err.Error(), "wait for its lease to expire") {
		t.Fatalf("held: %+v %v", h, err)
	}
	_, err = c.Resume(ctx, "held", nil)
	if h = wantErr(t, "resume a held run", err, fault.Conflict, fault.HintHeldByAnotherProcess); h.Owner != "elsewhere" {
		t.Fatalf("held: %+v", h)
	}

	run, err := c.Cancel(ctx, "done", "not today")
	if err != nil || run.Status != trace.RunCancelled {
		t.Fatalf("cancel: %v %+v", err, run)
	}
	_, err = c.Cancel(ctx, "done", "")
	if h = wantErr(t, "cancel twice", err, fault.Conflict, fault.HintRunFinished); h.Status != "cancelled" {
		t.Fatalf("finished: %+v", h)
	}
	_, err = c.Decide(ctx, "done", "review", approve, nil)
	wantErr(t, "decide a cancelled run", err, fault.Conflict, fault.HintRunFinished)

	if _, err := c.Prune(ctx, &store.PruneParams{Status: trace.RunWaiting}); fault.ClassOf(err) != fault.Business {
		t.Fatalf("prune waiting runs: %v", err)
	}
	mem, err := rein.Open(ctx, rein.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Resume(ctx, "done", nil); fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "durable store") {
		t.Fatalf("resume on a client without a store: %v", err)
	}
	if mem.Runs() != nil {
		t.Fatal("a client without a store has read views")
	}
}

// Show returns what `rein runs show -o json` prints; List, Cancel and
// Prune work on the same rows.
func TestRunsShowListPrune(t *testing.T) {
	t.Parallel()
	fx := newRunsFixture(t)
	fx.start("r1")
	fx.start("r2")
	c := fx.runs(true)
	ctx := fx.ctx
	if _, err := c.Decide(ctx, "r1", "review", rein.Decision{Status: store.ApprovalApproved, By: "ann", Comment: "fine"}, nil); err != nil {
		t.Fatal(err)
	}
	v, err := c.Runs().Show(ctx, "r1")
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

	rows, err := c.Runs().List(ctx, &store.ListRunsParams{Status: trace.RunWaiting})
	if err != nil || len(rows) != 1 || rows[0].ID != "r2" {
		t.Fatalf("list waiting: %v %+v", err, rows)
	}
	if _, err := c.Cancel(ctx, "r2", ""); err != nil {
		t.Fatal(err)
	}
	sel, err := c.Prune(ctx, &store.PruneParams{Status: trace.RunCancelled, DryRun: true})
	if err != nil || sel.Runs != 1 || !slices.Equal(sel.RunIDs, []string{"r2"}) {
		t.Fatalf("prune dry run: %v %+v", err, sel)
	}
	if every, err := c.EmptiesStore(ctx, sel); err != nil || every {
		t.Fatalf("pruning r2 empties the store: %v %v", every, err)
	}
	res, err := c.Prune(ctx, nil)
	if err != nil || res.Runs != 1 {
		t.Fatalf("prune: %v %+v", err, res)
	}
	_, err = c.Runs().Show(ctx, "r2")
	wantErr(t, "show a pruned run", err, fault.NotFound, fault.HintNoRun)
}

// A Client's operations share one lease owner, so the client itself keeps
// two of them from advancing one run at once: concurrent resumes of a run
// either advance it once or meet a conflict that names the holder, and the
// journal and the step rows never disagree.
func TestClientAdvancesARunOnceAtATime(t *testing.T) {
	t.Parallel()
	fx := newRunsFixture(t)
	fx.start("r1")
	c := fx.runs(true)
	if _, err := c.Decide(fx.ctx, "r1", "review", rein.Decision{Status: store.ApprovalApproved, By: "ann"}, nil); err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Resume(fx.ctx, "r1", nil)
			errs <- err
		}()
	}
	ok := 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case fault.HintOf(err).Code == fault.HintHeldByAnotherProcess && errors.Is(err, store.ErrConflict):
		default:
			t.Errorf("a concurrent resume: %v", err)
		}
	}
	if ok == 0 {
		t.Fatal("no resume went through")
	}
	v, err := c.Runs().Show(fx.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	// ship waits for its own approval: the run went on once, to there.
	if v.Run.Status != trace.RunWaiting || len(v.Pending()) != 1 || v.Pending()[0].StepID != "ship" {
		t.Fatalf("run %s, pending %+v: want it waiting on ship", v.Run.Status, v.Pending())
	}
}
