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
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// planGateFlow is agentFlow without a declared approval: only the policy
// gate asks a person before a refund.
const planGateFlow = `name: support
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: support
    type: agent
    model: m
    instructions: Help with orders.
    prompt_template: "{input.task}"
    tools: {status: , charge: , refund: }
`

var refundsByHand = &safety.Policy{Rules: []safety.Rule{{Name: "refunds-by-hand", Tools: []string{"refund"},
	Verdict: safety.RequireApproval, Reason: "a person checks every refund"}}}

func planGateEngine(t testing.TB, dir string, st store.Store) (*engine.Engine, *flow.Flow) {
	reg := agentTools(dir, "")
	models := &model.Registry{}
	models.Register("m", agentTurns(dir, "", planApprovalScript...))
	f, err := flow.Parse([]byte(planGateFlow), "support.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Gate: refundsByHand}), f
}

// TestAgentPlanGateChild is the child of TestAgentPlanGateApprovalSurvivesAKill:
// it runs the agent until the run parks, then dies by SIGKILL.
func TestAgentPlanGateChild(t *testing.T) {
	if os.Getenv("REIN_PLAN_GATE_CHILD") == "" {
		t.Skip("the plan gate test's child process")
	}
	parkThenDie(t, "crash-run", agentInput, planGateEngine)
}

// TestAgentPlanGateApprovalSurvivesAKill: a plan step that the policy
// gate answers require_approval parks the whole agent run durably, with
// the step's exact args; the process that parked it dies; in another
// process, approving runs exactly those args and the plan continues where
// it stopped (its completed steps are not called again), while rejecting
// hands the agent the plan's failure with the person's comment.
func TestAgentPlanGateApprovalSurvivesAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	for _, verdict := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected} {
		t.Run(string(verdict), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir, st := killedChild(t, "TestAgentPlanGateChild", "REIN_PLAN_GATE_CHILD=1")
			run, err := st.GetRun(ctx, "crash-run")
			if err != nil || run.Status != trace.RunWaiting {
				t.Fatalf("run %+v (%v): want it waiting", run, err)
			}
			approvals, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: "crash-run"})
			if err != nil {
				t.Fatal(err)
			}
			if len(approvals) != 1 {
				t.Fatalf("approvals %+v", approvals)
			}
			a := approvals[0]
			if a.StepID != "support/turn1/call1/back" || a.Tool != "refund" || string(a.Args) != `{"order":"1042"}` ||
				a.Status != store.ApprovalPending || !strings.Contains(a.Message, "rule refunds-by-hand: a person checks every refund") {
				t.Fatalf("the approval does not hold the exact plan step call: %+v", a)
			}
			if got := readLines(t, filepath.Join(dir, "refund.log")); len(got) != 0 {
				t.Fatalf("refund ran before approval: %v", got)
			}
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "crash-run", StepID: a.StepID, Status: verdict, Comment: "already refunded"}); err != nil {
				t.Fatal(err)
			}
			e, f := planGateEngine(t, dir, st)
			res, err := e.Resume(ctx, f, "crash-run")
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			if got := strings.Join(readLines(t, filepath.Join(dir, "model.log")), " "); got != "turn1 turn2" {
				t.Errorf("model asked for %s: a committed turn was asked again", got)
			}
			for _, name := range []string{"status", "charge"} {
				if got := readLines(t, filepath.Join(dir, name+".log")); len(got) != 2 {
					t.Errorf("%s calls %v: a completed plan step ran again", name, got)
				}
			}
			refunds := readLines(t, filepath.Join(dir, "refund.log"))
			if verdict == store.ApprovalApproved && strings.Join(refunds, " ") != "crash-run/support/1/turn1/call1/plan1/back 1042" {
				t.Errorf("approved refund calls: %v", refunds)
			}
			if verdict == store.ApprovalRejected && len(refunds) != 0 {
				t.Errorf("a rejected plan step ran: %v", refunds)
			}
			// the call records: one per plan step that ran; the one that
			// waited keeps the gate's decision (waiting) until it is made.
			calls, err := st.Calls(ctx, "crash-run", "support")
			if err != nil {
				t.Fatal(err)
			}
			var recs []string
			for _, c := range calls {
				if c.PlanStep != "" {
					recs = append(recs, c.PlanStep+":"+string(c.Status))
				}
			}
			want := "look:succeeded pay:succeeded back:succeeded"
			if verdict == store.ApprovalRejected {
				want = "look:succeeded pay:succeeded back:waiting"
			}
			if got := strings.Join(recs, " "); got != want {
				t.Errorf("plan call records %s, want %s", got, want)
			}
			evs, err := st.Events(ctx, "crash-run", 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var sub []string
			var answer string
			for _, ev := range evs {
				switch ev.Kind {
				case "plan_started", "plan_finished", "plan_step_waiting":
					sub = append(sub, string(ev.Kind)+" "+ev.PlanStep+" "+ev.Status)
				case trace.CallRecorded:
					if d := agentCallData(t, ev); strings.Contains(d, `"status":"ok"`) && strings.Contains(d, "execute_plan") {
						answer = d
					}
				}
			}
			final := "succeeded"
			if verdict == store.ApprovalRejected {
				final = "failed"
			}
			wantSub := "plan_started call1 running,plan_step_waiting call1/back waiting,plan_finished call1 waiting,plan_started call1 running,plan_finished call1 " + final
			if got := strings.Join(sub, ","); got != wantSub {
				t.Errorf("sub-run records\n %s\nwant\n %s", got, wantSub)
			}
			wantAnswer := `\"success\":true`
			if verdict == store.ApprovalRejected {
				wantAnswer = `\"failed_steps\":[{\"error\":\"rejected by a person: already refunded\",\"id\":\"back\",\"tool\":\"refund\"}]`
			}
			if !strings.Contains(answer, wantAnswer) {
				t.Errorf("the execute_plan answer lacks %s: %s", wantAnswer, answer)
			}
		})
	}
}
