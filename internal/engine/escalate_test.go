package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

const escalateFlow = `name: esc
schemas:
  receipt: {type: object, properties: {n: {type: number}}, required: [n]}
steps:
  - {id: pay, tool: pay, args: {amount: 5}, output_schema: receipt, on_error: escalate}
  - {id: after, tool: log, args: {}}
`

// escalated runs escalateFlow with a pay tool that fails its first call
// with a business error, and checks that the run waits for a person.
func escalated(t *testing.T) (context.Context, store.Store, *engine.Engine, *fixture, *keyCounter) {
	t.Helper()
	ctx := context.Background()
	pay, log := newKeyCounter("pay", false), newKeyCounter("log", false)
	pay.fail = func(n int) error {
		if n == 1 {
			return fault.BusinessErr(errors.New("card declined"))
		}
		return nil
	}
	fx := newFixture(t, pay, log)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	res, err := e.Run(ctx, fx.parse(escalateFlow), nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	wantStep(t, res, "pay", trace.StepWaiting, 1)
	if len(res.Pending) != 1 {
		t.Fatalf("pending %+v, want one escalation", res.Pending)
	}
	a := res.Pending[0]
	if a.Kind != store.KindEscalation || a.StepID != "pay" || !strings.Contains(a.Message, "card declined") || string(a.Args) != `{"amount":5}` {
		t.Fatalf("escalation %+v does not say why", a)
	}
	if len(log.calls()) != 0 {
		t.Fatal("the step after an escalated one ran")
	}
	// the store answers the same as the run did.
	status, err := e.Status(ctx, "r")
	if err != nil || status.Status != trace.RunWaiting || len(status.Pending) != 1 || status.Pending[0].Kind != store.KindEscalation {
		t.Fatalf("status %+v, %v", status, err)
	}
	return ctx, st, e, fx, pay
}

func TestEscalateApproveRunsTheStepAgain(t *testing.T) {
	t.Parallel()
	ctx, st, e, fx, pay := escalated(t)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "pay", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Resume(ctx, fx.parse(escalateFlow), "r")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "pay", trace.StepSucceeded, 2)
	if got := pay.calls(); !reflect.DeepEqual(got, []string{"r/pay/1", "r/pay/2"}) {
		t.Fatalf("pay calls %v: an approval runs a new attempt", got)
	}
}

func TestEscalateRejectFailsWithTheOriginalError(t *testing.T) {
	t.Parallel()
	ctx, st, e, fx, pay := escalated(t)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "pay", Status: store.ApprovalRejected, DecidedBy: "ops", Comment: "no"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Resume(ctx, fx.parse(escalateFlow), "r")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	wantStep(t, res, "pay", trace.StepFailed, 1)
	wantErrorClass(t, res, fault.Business, "tool pay: card declined (escalated to a person, and rejected by ops: no)")
	if len(pay.calls()) != 1 {
		t.Fatal("a rejected escalation ran the step again")
	}
}

func TestEscalateSettleProvidesTheOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, output string
		ok           bool
	}{
		{"valid", `{"n": 42}`, true},
		{"breaks output_schema", `{"m": 1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, st, e, fx, pay := escalated(t)
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "pay", Status: store.ApprovalSettled, Output: json.RawMessage(tc.output)}); err != nil {
				t.Fatal(err)
			}
			res, err := e.Resume(ctx, fx.parse(escalateFlow), "r")
			if err != nil {
				t.Fatal(err)
			}
			if len(pay.calls()) != 1 {
				t.Fatal("a settled escalation ran the step again")
			}
			if !tc.ok {
				wantStatus(t, res, trace.RunFailed)
				wantErrorClass(t, res, fault.Business, "settled output")
				return
			}
			wantStatus(t, res, trace.RunSucceeded)
			if !reflect.DeepEqual(res.Outputs["pay"], map[string]any{"n": 42.0}) {
				t.Fatalf("output %v", res.Outputs["pay"])
			}
		})
	}
}

// A step that fails again after an approval is escalated again.
func TestEscalateAgainAfterAnotherFailure(t *testing.T) {
	t.Parallel()
	ctx, st, e, fx, pay := escalated(t)
	pay.fail = func(int) error { return fault.BusinessErr(errors.New("still declined")) }
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "pay", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Resume(ctx, fx.parse(escalateFlow), "r")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 1 || !strings.Contains(res.Pending[0].Message, "still declined") {
		t.Fatalf("pending %+v", res.Pending)
	}
}

func TestEscalateNeedsADurableStore(t *testing.T) {
	t.Parallel()
	pay := newKeyCounter("pay", false)
	pay.fail = func(int) error { return fault.BusinessErr(errors.New("card declined")) }
	fx := newFixture(t, pay, newKeyCounter("log", false))
	res := fx.run(escalateFlow, nil)
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "card declined (on_error: escalate waits for a person, which needs a durable store")
}
