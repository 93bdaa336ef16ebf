package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/tool"
)

// cancelled runs h's flow to its end and returns the Status its
// cancellation carries; the workflow must have closed as cancelled.
func (h *harness) cancelled(input any) *Status {
	h.t.Helper()
	in, err := StartInput(h.p, input)
	if err != nil {
		h.t.Fatal(err)
	}
	h.env.ExecuteWorkflow(h.p.Flow.Name, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
	err = h.env.GetWorkflowError()
	if !temporal.IsCanceledError(err) {
		h.t.Fatalf("workflow error %v, want a cancellation", err)
	}
	st, ok := StatusOf(err)
	if !ok {
		h.t.Fatalf("the cancellation %v carries no Status", err)
	}
	return st
}

// TestCancelWaiting: a run that waits for an approval and is cancelled
// stops waiting and closes cancelled; the step behind the approval never
// runs.
func TestCancelWaiting(t *testing.T) {
	l := newLedger()
	p := load(t, approvalFlow, l.tool("ok", true), l.tool("pay", false))
	h := newHarness(t, p)
	h.env.RegisterDelayedCallback(func() {
		var st Status
		h.query(QueryStatus, &st)
		if st.Status != "waiting" {
			t.Errorf("status before the cancel %s, want waiting", st.Status)
		}
		h.env.CancelWorkflow()
	}, time.Minute)
	st := h.cancelled(map[string]any{})
	if st.Status != "cancelled" || st.Error == nil || st.Error.Class != string(fault.Cancelled) {
		t.Fatalf("run: %+v, error %+v", st, st.Error)
	}
	if s := stepOf(t, st, "draft"); s.Status != "succeeded" {
		t.Errorf("draft: %+v", s)
	}
	if s := stepOf(t, st, "pay"); s.Status == "succeeded" || l.count("pay") != 0 {
		t.Errorf("pay: %+v, called %d times", s, l.count("pay"))
	}
}

const cancelFlow = `name: slow
steps:
  - {id: slow, tool: slow, args: {}}
  - {id: after, tool: after, args: {}}
`

// TestCancelInFlight: a run cancelled while an attempt runs cancels the
// attempt (its tool's context ends), starts no further step and closes
// cancelled.
func TestCancelInFlight(t *testing.T) {
	l := newLedger()
	var h *harness
	sawCancel := make(chan bool, 1)
	slow := tool.Func(tool.Spec{Name: "slow", Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		h.env.CancelWorkflow()
		select {
		case <-ctx.Done():
			sawCancel <- true
			return nil, ctx.Err()
		case <-time.After(time.Minute): // a bound, not a timing: the test fails below
			sawCancel <- false
			return nil, errors.New("slow: the attempt was not cancelled")
		}
	})
	p := load(t, cancelFlow, slow, l.tool("after", true))
	h = newHarness(t, p)
	st := h.cancelled(map[string]any{})
	if st.Status != "cancelled" {
		t.Fatalf("run: %+v, error %+v", st, st.Error)
	}
	if s := stepOf(t, st, "slow"); s.Status != "failed" && s.Status != "cancelled" {
		t.Errorf("slow: %+v", s)
	}
	if l.count("after") != 0 {
		t.Errorf("after ran %d times after the cancel", l.count("after"))
	}
	if !<-sawCancel {
		t.Error("the running attempt's context did not end")
	}
}

// TestCancelAtContinueAsNew: a run whose workflow was cancelled by the
// time it would continue as new ends cancelled, and does not continue (the
// new run would never hear of the cancellation). On a server this is a
// cancellation delivered in the same workflow task as what woke the run (a
// decision, a unit's result), or one the server took while the task that
// continues was in flight (it fails that task and hands the cancellation
// to the next); the test suite delivers each in a task of its own, so the
// test drives the run's state directly, in a workflow of its own: once
// cancelled, once not.
func TestCancelAtContinueAsNew(t *testing.T) {
	l := newLedger()
	p := load(t, approvalFlow, l.tool("ok", true), l.tool("pay", false))
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Carried   bool    `json:"carried"`
		Cancelled bool    `json:"cancelled"`
		Status    *Status `json:"status"`
	}
	wf := func(ctx workflow.Context, cancel bool) (got, error) {
		r := &wrun{w: &Workflow{}, f: p.Flow, runID: "run-1", in: in, outputs: map[string]any{}, raw: map[string]json.RawMessage{},
			errs: map[string]string{}, answers: map[int]*answer{}, agents: map[int]*agentRun{}, gateArgs: map[int]json.RawMessage{}}
		r.m.Reset(r.f, r.runID)
		r.status = journal.RunWaiting
		cctx, stop := workflow.WithCancel(ctx)
		if cancel {
			stop()
		}
		cerr := r.continueAsNew(cctx, -1)
		var can *workflow.ContinueAsNewError
		g := got{Carried: errors.As(cerr, &can)}
		_, eerr := r.ended(cctx, nil, cerr)
		if st, ok := StatusOf(eerr); ok && temporal.IsCanceledError(eerr) {
			g.Cancelled, g.Status = true, st
		}
		return g, nil
	}
	for _, cancel := range []bool{true, false} {
		var s testsuite.WorkflowTestSuite
		env := newTestEnv(&s)
		env.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "carry-cancel"})
		env.ExecuteWorkflow("carry-cancel", cancel)
		var g got
		if err := env.GetWorkflowResult(&g); err != nil {
			t.Fatal(err)
		}
		switch {
		case cancel && (g.Carried || !g.Cancelled || g.Status.Status != "cancelled" || g.Status.Error == nil || g.Status.Error.Class != string(fault.Cancelled)):
			t.Errorf("cancelled at continue-as-new: %+v, want the run cancelled, not carried", g)
		case !cancel && (!g.Carried || g.Cancelled):
			t.Errorf("not cancelled: %+v, want it continued as new", g)
		}
	}
}
