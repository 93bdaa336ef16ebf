package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// A saga's remediation is journaled as a typed record (Event.Remediation),
// not as JSON in the event's Data, beside the compensating call's own
// record; journal.DecodeRemediation reads it (and the Data of older
// journals: TestJournalOfAnEarlierRein).
func TestRemediationIsATypedRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSQLite(t)
	mk := tool.Func(tool.Spec{Name: "make", Effect: tool.EffectWrite, Reversibility: tool.Compensatable,
		Compensate: &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}"}}},
		func(context.Context, any) (any, error) { return map[string]any{"id": "c-1"}, nil })
	archive := tool.Func(tool.Spec{Name: "archive", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) { return map[string]any{"ok": true}, nil })
	broken := goTool("broken", func(context.Context, map[string]any) (any, error) { return nil, fault.BusinessErr(errors.New("down")) })
	reg := &tool.Registry{}
	for _, tl := range []tool.Tool{mk, archive, broken} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Parse([]byte("name: saga\non_failure: compensate\nsteps:\n  - {id: s, tool: make, args: {}}\n  - {id: fail, tool: broken, args: {}}\n"),
		"saga.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.New(engine.Config{Tools: reg, Store: st}).Run(ctx, f, map[string]any{}, &engine.RunOptions{RunID: "saga"}); err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, "saga", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rem *journal.Remediation
	var comp *journal.Call
	for _, ev := range evs {
		switch {
		case ev.Kind == trace.Remediated:
			if ev.Data != "" || ev.Remediation == nil {
				t.Fatalf("remediation event %d: data %q, record %v: want the typed record only", ev.Seq, ev.Data, ev.Remediation)
			}
			if m, err := journal.DecodeRemediation(ev); err != nil || m != ev.Remediation {
				t.Fatalf("DecodeRemediation: %v %v", m, err)
			}
			rem = ev.Remediation
		case ev.Kind == trace.CallRecorded && ev.Call != nil && ev.Call.Remedy != "":
			comp = ev.Call
		}
	}
	if rem == nil || rem.Action != "compensate" || rem.Status != journal.RemedyDone || rem.Call == nil || string(rem.Call.Args) != `{"id":"c-1"}` {
		t.Fatalf("remediation record %+v, want the compensation of the make call, done", rem)
	}
	if comp == nil || comp.TakesBack() != rem.Key || comp.Status != journal.CallSucceeded {
		t.Errorf("the compensating call's record %+v, want it succeeded, taking back %s", comp, rem.Key)
	}
}
