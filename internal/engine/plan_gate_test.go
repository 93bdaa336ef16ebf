package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

const planGateStepFlow = `name: plan_gate
steps:
  - {id: pl, type: plan, model: m, goal: "fetch, charge, fetch", tools: [fetch, charge], max_replans: 0}
`

var chargesByHand = &safety.Policy{Rules: []safety.Rule{{Name: "charges-by-hand", Tools: []string{"charge"},
	Verdict: safety.RequireApproval, Reason: "a person checks every charge"}}}

func planGateStepEngine(t testing.TB, dir string, st store.Store) (*engine.Engine, *flow.Flow) {
	reg := crashCallsTools(dir, "")
	models := &model.Registry{}
	models.SetFallback(scripted.New([]scripted.Reply{{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "g", "steps": []any{
		map[string]any{"id": "a", "tool": "fetch", "args": map[string]any{"n": "a"}},
		map[string]any{"id": "b", "tool": "charge", "depends_on": []any{"a"}, "args": map[string]any{"n": "b"}},
		map[string]any{"id": "c", "tool": "fetch", "depends_on": []any{"b"}, "args": map[string]any{"n": "c"}},
	}}}}))
	f, err := flow.Parse([]byte(planGateStepFlow), "plan_gate.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Gate: chargesByHand}), f
}

// TestPlanStepGateChild is the child of TestPlanStepGateApprovalSurvivesAKill.
func TestPlanStepGateChild(t *testing.T) {
	if os.Getenv("REIN_PLAN_STEP_GATE_CHILD") == "" {
		t.Skip("the plan step gate test's child process")
	}
	parkThenDie(t, "pg", nil, planGateStepEngine)
}

// TestPlanStepGateApprovalSurvivesAKill: in a durable run, a plan step of
// a type: plan step that the gate answers require_approval parks the run
// with the step's resolved args instead of failing it; after the process
// died, approving in another one runs exactly those args and the plan goes
// on from there (its completed steps are not called again); rejecting
// fails the plan step with the person's comment.
func TestPlanStepGateApprovalSurvivesAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	for _, verdict := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected} {
		t.Run(string(verdict), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir, st := killedChild(t, "TestPlanStepGateChild", "REIN_PLAN_STEP_GATE_CHILD=1")
			approvals, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: "pg"})
			if err != nil {
				t.Fatal(err)
			}
			if len(approvals) != 1 {
				t.Fatalf("approvals %+v", approvals)
			}
			a := approvals[0]
			if a.StepID != "pl/b" || a.Tool != "charge" || string(a.Args) != `{"n":"b"}` || a.Status != store.ApprovalPending ||
				!strings.Contains(a.Message, "rule charges-by-hand: a person checks every charge") {
				t.Fatalf("the approval does not hold the exact plan step call: %+v", a)
			}
			if got := strings.Join(readLines(t, filepath.Join(dir, "calls.log")), " "); got != "pg/pl/1/plan1/a" {
				t.Fatalf("calls before the approval: %s", got)
			}
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "pg", StepID: a.StepID, Status: verdict, Comment: "not today"}); err != nil {
				t.Fatal(err)
			}
			e, f := planGateStepEngine(t, dir, st)
			res, err := e.Resume(ctx, f, "pg")
			if err != nil {
				t.Fatal(err)
			}
			calls := strings.Join(readLines(t, filepath.Join(dir, "calls.log")), " ")
			if verdict == store.ApprovalRejected {
				wantStatus(t, res, trace.RunFailed)
				if res.Error == nil || !strings.Contains(res.Error.Error(), "rejected by a person: not today") || calls != "pg/pl/1/plan1/a" {
					t.Fatalf("rejected: error %v, calls %s", res.Error, calls)
				}
				return
			}
			wantStatus(t, res, trace.RunSucceeded)
			if calls != "pg/pl/1/plan1/a pg/pl/1/plan1/b pg/pl/1/plan1/c" {
				t.Fatalf("calls %s: want each plan step once, b after its approval", calls)
			}
			if out := res.Outputs["pl"].(map[string]any); out["executed"] != 3.0 {
				t.Errorf("output %v", out)
			}
		})
	}
}
