package engine

import (
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/store"
)

// TestDoubtNamesTheLatestAttempt: a plan step's (or an item's) call in
// doubt that a person approved is made again at the step's next attempt,
// under a new key, and its first record stays started. When the new call
// is in doubt too, only it is asked about: naming the first call again (a
// person already answered that it did not happen) led a person who
// checked that key to approve making the call a third time (the ledger
// probe's duplicated pay/b).
func TestDoubtNamesTheLatestAttempt(t *testing.T) {
	planOut, _ := json.Marshal(map[string]any{"goal": "pay a then b", "steps": []any{
		map[string]any{"id": "a", "tool": "pay", "args": map[string]any{"ref": "a"}},
		map[string]any{"id": "b", "tool": "pay", "depends_on": []string{"a"}, "args": map[string]any{"ref": "b"}}}})
	ok, _ := json.Marshal(map[string]any{"ok": true})
	planCalls := []*store.Call{
		{StepID: "pl", Key: "run/pl/1/plan1", Item: -1, Plan: 1, Attempt: 1, Kind: store.CallModel, Status: store.CallSucceeded, Output: planOut},
		{StepID: "pl", Key: "run/pl/1/plan1/a", Item: -1, Plan: 1, PlanStep: "a", Attempt: 1, Kind: store.CallTool, Name: "pay", Status: store.CallSucceeded, Output: ok},
		{StepID: "pl", Key: "run/pl/1/plan1/b", Item: -1, Plan: 1, PlanStep: "b", Attempt: 1, Kind: store.CallTool, Name: "pay", Status: store.CallStarted},
		{StepID: "pl", Key: "run/pl/2/plan1/b", Item: -1, Plan: 1, PlanStep: "b", Attempt: 2, Kind: store.CallTool, Name: "pay", Status: store.CallStarted},
	}
	p := &stepProgress{}
	if err := p.fromPlan(planCalls, 1); err != nil {
		t.Fatal(err)
	}
	if len(p.doubt) != 1 || p.doubt[0] != "plan step b of plan 1 (tool pay, idempotency key run/pl/2/plan1/b)" || len(p.inDoubt) != 1 || p.inDoubt[0].Attempt != 2 {
		t.Errorf("plan: doubt %q, in doubt %v; want only attempt 2's call of b", p.doubt, p.inDoubt)
	}
	if p.plan == nil || len(p.plan.Completed) != 1 || p.plan.Completed[0].ID != "a" {
		t.Errorf("plan: progress %+v, want a completed", p.plan)
	}

	itemCalls := []*store.Call{
		{StepID: "each", Key: "run/each[0]/1", Item: 0, Attempt: 1, Kind: store.CallTool, Name: "pay", Status: store.CallSucceeded, Output: ok},
		{StepID: "each", Key: "run/each[1]/1", Item: 1, Attempt: 1, Kind: store.CallTool, Name: "pay", Status: store.CallStarted},
		{StepID: "each", Key: "run/each[1]/2", Item: 1, Attempt: 2, Kind: store.CallTool, Name: "pay", Status: store.CallStarted},
	}
	p = &stepProgress{}
	if err := p.fromItems(itemCalls, 1); err != nil {
		t.Fatal(err)
	}
	if len(p.doubt) != 1 || p.doubt[0] != "item 1 (tool pay, idempotency key run/each[1]/2)" || len(p.inDoubt) != 1 {
		t.Errorf("items: doubt %q; want only attempt 2's call of item 1", p.doubt)
	}
}
