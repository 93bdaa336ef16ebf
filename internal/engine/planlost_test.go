package engine

import (
	"testing"

	"github.com/reinhq/rein/internal/plan"
)

// TestPlanLog: a plan's events make the progress a local resume reads from
// its call records: the latest plan and its number, each plan step's first
// success with its output, the calls made, and those not returned; a
// continued plan (Seed) keeps its completed steps and does not list them
// twice.
func TestPlanLog(t *testing.T) {
	var l PlanLog
	if p, calls := l.Progress(); p != nil || calls != nil {
		t.Fatalf("before a plan: %+v %v", p, calls)
	}
	pl := &plan.Plan{Goal: "g", Steps: []plan.Step{{ID: "a", Tool: "x"}, {ID: "b", Tool: "y"}}}
	for _, ev := range []plan.Event{
		{Kind: plan.PlanProposed, Attempt: 2, Plan: pl},
		{Kind: plan.StepStarted, Attempt: 2, PlanStep: "a", Tool: "x", IdempotencyKey: "k/plan2/a"},
		{Kind: plan.StepStarted, Attempt: 2, PlanStep: "b", Tool: "y", IdempotencyKey: "k/plan2/b"},
		{Kind: plan.StepSettled, Attempt: 2, PlanStep: "a", Tool: "x", IdempotencyKey: "k/plan2/a", Status: "succeeded", Output: "out-a"},
	} {
		if !l.Add(ev) {
			t.Errorf("event %s: not a change", ev.Kind)
		}
	}
	if l.Add(plan.Event{Kind: plan.PlanStarted}) {
		t.Error("plan_started counted as a change")
	}
	p, calls := l.Progress()
	if p == nil || p.Plan != pl || p.Number != 2 || p.Executed != 2 || len(p.Completed) != 1 || p.Completed[0].ID != "a" || p.Completed[0].Output != "out-a" {
		t.Fatalf("progress %+v", p)
	}
	if len(calls) != 1 || calls[0] != (PlanCall{Plan: 2, PlanStep: "b", Tool: "y", Key: "k/plan2/b"}) {
		t.Errorf("in flight %+v, want plan step b's call", calls)
	}
	var m PlanLog
	m.Seed(p)
	m.Add(plan.Event{Kind: plan.StepStarted, Attempt: 2, PlanStep: "b", Tool: "y", IdempotencyKey: "k/plan2/b"})
	m.Add(plan.Event{Kind: plan.StepSettled, Attempt: 2, PlanStep: "b", Tool: "y", IdempotencyKey: "k/plan2/b", Status: "succeeded", Output: "out-b"})
	m.Add(plan.Event{Kind: plan.StepSettled, Attempt: 2, PlanStep: "a", Tool: "x", IdempotencyKey: "k/plan2/a", Status: "succeeded", Output: "again"})
	q, calls := m.Progress()
	if q == nil || q.Number != 2 || q.Executed != 3 || len(q.Completed) != 2 || q.Completed[0].Output != "out-a" || q.Completed[1].ID != "b" || len(calls) != 0 {
		t.Errorf("continued progress %+v, in flight %v", q, calls)
	}
}
