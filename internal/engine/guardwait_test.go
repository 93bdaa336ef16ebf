package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// guardAskFlow is an llm step whose output guardrail asks a person.
const guardAskFlow = `name: guarded
steps:
  - id: answer
    type: llm
    model: m
    prompt_template: "Answer: {input.q}"
    guardrails:
      output: [{name: no_notes, regex: 'internal-[a-z]+', on_trip: ask}]
`

func guardAskEngine(t testing.TB, _ string, st store.Store) (*engine.Engine, *flow.Flow) {
	models := &model.Registry{}
	models.Register("m", scripted.New([]scripted.Reply{{Step: "answer", Raw: raw("internal-only: the customer is on a watch list")}}))
	f, err := flow.Parse([]byte(guardAskFlow), "guarded.yaml", &flow.Options{Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: &tool.Registry{}, Models: models, Store: st}), f
}

// TestGuardAskChild is the child of TestLLMGuardrailAskSurvivesAKill: it
// runs the flow until the guardrail's trip parks it, then dies by SIGKILL.
func TestGuardAskChild(t *testing.T) {
	if os.Getenv("REIN_GUARD_ASK_CHILD") == "" {
		t.Skip("the guardrail ask test's child process")
	}
	parkThenDie(t, "guard-run", map[string]any{"q": "notes"}, guardAskEngine)
}

// TestLLMGuardrailAskSurvivesAKill: an llm step's output guardrail with
// on_trip: ask parks the run durably (the approval names the guardrail
// and why it tripped, not the text); the process dies by SIGKILL; in
// another process a resume keeps it waiting, and once a person approves,
// the recorded reply is the step's output: the model is asked once in
// all. A rejection fails the run with the guardrail error.
func TestLLMGuardrailAskSurvivesAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	for _, verdict := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected} {
		t.Run(string(verdict), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir, st := killedChild(t, "TestGuardAskChild", "REIN_GUARD_ASK_CHILD=1")
			approvals, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: "guard-run"})
			if err != nil || len(approvals) != 1 {
				t.Fatalf("approvals %+v (%v)", approvals, err)
			}
			a := approvals[0]
			if a.StepID != "answer/guardrail/no_notes" || a.Status != store.ApprovalPending ||
				!strings.Contains(a.Message, "output guardrail no_notes tripped on the reply: the text matches internal-[a-z]+ at byte 0") ||
				strings.Contains(a.Message, "watch list") {
				t.Fatalf("approval %+v", a)
			}
			e, f := guardAskEngine(t, dir, st)
			res, err := e.Resume(ctx, f, "guard-run")
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunWaiting)
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "guard-run", StepID: a.StepID, Status: verdict, Comment: "not for customers"}); err != nil {
				t.Fatal(err)
			}
			e, f = guardAskEngine(t, dir, st)
			if res, err = e.Resume(ctx, f, "guard-run"); err != nil {
				t.Fatal(err)
			}
			if verdict == store.ApprovalApproved {
				wantStatus(t, res, trace.RunSucceeded)
				if got := res.Outputs["answer"]; got != "internal-only: the customer is on a watch list" {
					t.Errorf("output %v, want the recorded reply", got)
				}
			} else {
				wantErrorClass(t, res, "guardrail", "output guardrail no_notes tripped on the reply: the text matches internal-[a-z]+ at byte 0; a person rejected going on: not for customers")
			}
			evs, err := st.Events(ctx, "guard-run", 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			for _, ev := range evs {
				if ev.Kind == trace.ModelCall {
					calls++
				}
			}
			if calls != 1 {
				t.Errorf("%d model calls, want 1: the reply was asked again", calls)
			}
		})
	}
}
