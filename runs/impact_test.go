package runs

import (
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestImpactFollowsDataAssumptionsAndResources: on a diamond (create →
// link_a, link_b → notify) with an independent branch, a premise naming a
// step affects it and everything below it by data; a declared assumption
// naming one resource affects the call that wrote it, what depends on
// that call's step by data, and a later call that read the resource, and
// keeps the rest; a read is kept even when affected.
func TestImpactFollowsDataAssumptionsAndResources(t *testing.T) {
	t.Parallel()
	specs := map[string]tool.Spec{"t": {Name: "t", Effect: tool.EffectWrite}}
	f, err := flow.Parse([]byte(`name: d
steps:
  - {id: guess, tool: t, args: {}}
  - {id: create, tool: t, args: {r: "{guess}"}}
  - {id: link_a, tool: t, args: {c: "{create}"}}
  - {id: link_b, tool: t, args: {c: "{create}"}, requires: [create]}
  - {id: notify, tool: t, args: {}, requires: [link_a, link_b]}
  - {id: audit, tool: t, args: {}, requires: []}
  - {id: other, tool: t, args: {}, requires: []}
`), "d.yaml", &flow.Options{Tools: func(n string) (tool.Spec, bool) { s, ok := specs[n]; return s, ok }})
	if err != nil {
		t.Fatal(err)
	}
	comp := &journal.Compensation{Kind: "compensate", Tool: "archive", Args: []byte(`{"id":"c"}`)}
	undo := &journal.Compensation{Kind: "undo", Tool: "unlink", Args: []byte(`{}`)}
	calls := []EffectCall{
		{Effect: journal.Effect{Key: "r/create/1", StepID: "create", Tool: "create", Effect: "write", Outcome: "ok", Compensation: comp, Writes: []string{"crm:c"}}},
		{Effect: journal.Effect{Key: "r/link_a/1", StepID: "link_a", Tool: "link", Effect: "write", Outcome: "ok", Compensation: undo, Writes: []string{"crm:link/c/a"}}},
		{Effect: journal.Effect{Key: "r/link_b/1", StepID: "link_b", Tool: "link", Effect: "write", Outcome: "ok", Compensation: undo, Writes: []string{"crm:link/c/b"}}},
		{Effect: journal.Effect{Key: "r/notify/1", StepID: "notify", Tool: "notify", Effect: "external", Outcome: "ok", Tags: []string{"money"}, Sends: []string{"mail:x"}}},
		{Effect: journal.Effect{Key: "r/audit/1", StepID: "audit", Tool: "audit", Effect: "read", Outcome: "ok", Reads: []string{"crm:link/c/b"}}},
		{Effect: journal.Effect{Key: "r/other/1", StepID: "other", Tool: "link", Effect: "write", Outcome: "ok", Compensation: undo}},
	}
	v := &EffectsView{RunID: "r", Calls: calls}
	actions := func(im *ImpactView) map[string]engine.Action {
		out := map[string]engine.Action{}
		for _, c := range im.Calls {
			out[c.StepID] = c.Action
		}
		return out
	}
	im, err := impact(f, v, "guess", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]engine.Action{"create": engine.ActCompensate, "link_a": engine.ActUndo, "link_b": engine.ActUndo, "notify": engine.ActFreeze,
		"audit": engine.ActKeep, "other": engine.ActKeep}
	for step, a := range want {
		if got := actions(im)[step]; got != a {
			t.Errorf("premise guess: step %s %s, want %s", step, got, a)
		}
	}
	if im.Source != "step" || len(im.Steps) != 6 || im.Calls[3].Escalates != true {
		t.Errorf("premise guess: %+v", im)
	}

	assumptions := []declaredAssumption{{Assumption: safety.Assumption{ID: "b-is-right", Claim: "item b belongs to c", Affects: []string{"crm:link/c/b"}}}}
	im, err = impact(f, v, "b-is-right", assumptions)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]engine.Action{"create": engine.ActKeep, "link_a": engine.ActKeep, "link_b": engine.ActUndo, "notify": engine.ActFreeze,
		"audit": engine.ActKeep, "other": engine.ActKeep}
	for step, a := range want {
		if got := actions(im)[step]; got != a {
			t.Errorf("assumption: step %s %s, want %s", step, got, a)
		}
	}
	if im.Source != "assumption" || len(im.Steps) != 3 || im.Steps[2] != "audit" {
		t.Errorf("assumption: steps %v (audit read what link_b wrote)", im.Steps)
	}
	if _, err := impact(f, v, "nope", assumptions); fault.ClassOf(err) != fault.NotFound {
		t.Errorf("an unknown premise: %v", err)
	}
}

// TestJournaledAssumptions: the assumptions models declared are read from
// an agent call's record (with its key) and a plan step's gate decision
// (step, plan step, plan number); one recorded twice is listed once, and
// one without an id is no premise.
func TestJournaledAssumptions(t *testing.T) {
	t.Parallel()
	call := `{"index":1,"id":"c1","tool":"create","args":"{}","status":"ok","key":"r/ag/1/turn1/call1",` +
		`"declaration":{"action":"create","assumptions":[{"id":"eu","claim":"in the EU","affects":["/region"]},{"claim":"no id"}]}}`
	basis := `{"chosen":true,"declaration":{"action":"link","assumptions":[{"id":"seat","claim":"a seat is free","affects":["crm:seat"]}]}}`
	events := []*trace.Event{
		{Kind: trace.AgentCall, StepID: "ag", Turn: 1, Data: call},
		{Kind: trace.AgentCall, StepID: "ag", Turn: 1, Data: call},
		{Kind: trace.GateDecision, StepID: "pl", PlanStep: "b", Attempt: 2, Data: basis},
		{Kind: trace.GateDecision, StepID: "ag", Turn: 1, Data: basis}, // an agent call's: its agent_call record counts
	}
	got := journaledAssumptions(events)
	if len(got) != 2 {
		t.Fatalf("assumptions %+v, want eu and seat", got)
	}
	if a := got[0]; a.ID != "eu" || a.Key != "r/ag/1/turn1/call1" || a.StepID != "ag" || !a.byCall() ||
		!a.declares(&EffectCall{Effect: journal.Effect{Key: "r/ag/1/turn1/call1"}}) {
		t.Errorf("agent call's: %+v", a)
	}
	if a := got[1]; a.ID != "seat" || a.StepID != "pl" || a.PlanStep != "b" || a.Plan != 2 ||
		!a.declares(&EffectCall{Effect: journal.Effect{StepID: "pl", PlanStep: "b", Plan: 2}}) ||
		a.declares(&EffectCall{Effect: journal.Effect{StepID: "pl", PlanStep: "b", Plan: 1}}) {
		t.Errorf("plan step's: %+v", a)
	}
}
