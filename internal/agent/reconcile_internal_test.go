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
// output), and stays unknown, told why, when it did not, when the check
// cannot say, and when its output breaks the tool's schema.
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
		name   string
		res    tool.CheckResult
		err    error
		ok     bool
		reason string
	}{
		{"happened", tool.CheckResult{Happened: true, Output: map[string]any{"id": "r-1"}}, nil, true, Reconciled},
		{"did not", tool.CheckResult{}, nil, false, "found that the call run/agent/1/turn2/call1 did not take effect"},
		{"cannot say", tool.CheckResult{}, errors.New("API down"), false, "could not say whether the call took effect: API down"},
		{"breaks the schema", tool.CheckResult{Happened: true, Output: map[string]any{}}, nil, false, "its output"},
	}
	for _, tc := range cases {
		l := answer(tc.res, tc.err)
		c := &Call{Index: 1, Tool: "refund", Args: `{"order":"o-1"}`, Status: StatusUnknown}
		if got := l.reconcile(ctx, 2, c); got != tc.ok || !strings.Contains(c.Reason, tc.reason) {
			t.Fatalf("%s: reconcile %v, reason %q; want %v, %q", tc.name, got, c.Reason, tc.ok, tc.reason)
		}
		if asked.IdempotencyKey != "run/agent/1/turn2/call1" || asked.Args.(map[string]any)["order"] != "o-1" {
			t.Fatalf("%s: the check was asked %+v", tc.name, asked)
		}
		if tc.ok && (c.Status != StatusOK || c.Observation != `{"id":"r-1"}`) {
			t.Fatalf("%s: call %+v", tc.name, c)
		}
		if !tc.ok && c.Status != StatusUnknown {
			t.Fatalf("%s: call %s, want it unknown", tc.name, c.Status)
		}
	}
}
