package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

type noModel struct{}

func (noModel) Generate(context.Context, *model.Request) (*model.Response, error) {
	return nil, errors.New("not asked")
}

// TestReconcileAsksTheCheck: an agent call in doubt whose tool has a
// check is settled by it when it happened (the observation is the check's
// output); when it did not, it runs again if a person approved the call
// (it consumed an approval), and otherwise stays unknown, told why, as
// when the check cannot say and when its output breaks the tool's
// schema. What the check found is in Call.Reconciled.
func TestReconcileAsksTheCheck(t *testing.T) {
	t.Parallel()
	var asked tool.CheckRequest
	answer := func(res tool.CheckResult, err error) *Loop {
		refund := tool.Func(tool.Spec{Name: "refund", Effect: tool.EffectExternal,
			OutputSchema: []byte(`{"type":"object","required":["id"]}`)}, func(context.Context, any) (any, error) {
			return nil, errors.New("not called")
		})
		checked := tool.WithCheck(refund, func(_ context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
			asked = req
			return res, err
		})
		l, nerr := New(Config{Model: noModel{}, Tools: []Tool{{Tool: checked}}, RunID: "run", StepID: "agent", Attempt: 1})
		if nerr != nil {
			t.Fatal(nerr)
		}
		return l
	}
	ctx := context.Background()
	cases := []struct {
		name     string
		res      tool.CheckResult
		err      error
		approved bool
		status   CallStatus
		again    bool
		reason   string
	}{
		{"happened", tool.CheckResult{Happened: true, Output: map[string]any{"id": "r-1"}}, nil, false, StatusOK, false, Reconciled},
		{"did not", tool.CheckResult{}, nil, false, StatusUnknown, false, "found that the call run/agent/1/turn2/call1 did not take effect"},
		{"did not, approved", tool.CheckResult{}, nil, true, StatusUnknown, true, ""},
		{"cannot say", tool.CheckResult{}, errors.New("API down"), false, StatusUnknown, false, "could not say whether the call run/agent/1/turn2/call1 took effect: API down"},
		{"breaks the schema", tool.CheckResult{Happened: true, Output: map[string]any{}}, nil, false, StatusUnknown, false, "its output"},
	}
	for _, tc := range cases {
		l := answer(tc.res, tc.err)
		c := &Call{Index: 1, Tool: "refund", Args: `{"order":"o-1"}`, Status: StatusUnknown}
		if tc.approved {
			c.Consumed = []Consumed{{ID: "a-1", Ref: "turn2/call1"}}
		}
		if again := l.reconcile(ctx, 2, c); again != tc.again || c.Status != tc.status || !strings.Contains(c.Reason, tc.reason) {
			t.Fatalf("%s: reconcile again=%v, call %s, reason %q; want again=%v, %s, %q", tc.name, again, c.Status, c.Reason, tc.again, tc.status, tc.reason)
		}
		if asked.IdempotencyKey != "run/agent/1/turn2/call1" || asked.Args.(map[string]any)["order"] != "o-1" {
			t.Fatalf("%s: the check was asked %+v", tc.name, asked)
		}
		if tc.status == StatusOK && c.Observation != `{"id":"r-1"}` {
			t.Fatalf("%s: call %+v", tc.name, c)
		}
		if want := map[string]string{"happened": "check: happened", "did not": "check: did not happen", "did not, approved": "check: did not happen"}[tc.name]; c.Reconciled != want {
			t.Fatalf("%s: reconciled %q, want %q", tc.name, c.Reconciled, want)
		}
	}
}
