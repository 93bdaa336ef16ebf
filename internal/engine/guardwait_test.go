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
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
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

// TestLLMGuardrailAskMessageIsBoundedAndRedacted: a judge's reason (the
// model's words) reaches the approval's message and the guardrail event
// cut to a bound, with the secrets the engine's redactor knows hidden.
func TestLLMGuardrailAskMessageIsBoundedAndRedacted(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const secret = "sk-guard-0123456789abcdefghij"
	models := &model.Registry{}
	models.Register("m", scripted.New([]scripted.Reply{
		{Step: "answer", Decision: "guardrail", Output: map[string]any{"trip": true, "reason": "it quotes " + secret + " " + strings.Repeat("and more ", 500)}},
		{Step: "answer", Raw: raw("fine")},
	}))
	f, err := flow.Parse([]byte(`name: judged
steps:
  - id: answer
    type: llm
    model: m
    prompt_template: "Answer: {input.q}"
    guardrails:
      input: [{name: civil, judge: Refuse rude questions., on_trip: ask}]
`), "judged.yaml", &flow.Options{Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(engine.Config{Tools: &tool.Registry{}, Models: models, Store: st, Redactor: redact.New(secret)})
	res, err := e.Run(ctx, f, map[string]any{"q": "hi"}, &engine.RunOptions{RunID: "judged"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	approvals, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: "judged"})
	if err != nil || len(approvals) != 1 {
		t.Fatalf("approvals %+v (%v)", approvals, err)
	}
	msg := approvals[0].Message
	if strings.Contains(msg, secret) || len(msg) > 1024 || !strings.Contains(msg, "llm step answer: input guardrail civil tripped on the prompt: the judge refused it: it quotes") ||
		!strings.Contains(msg, "approve to send the prompt anyway") {
		t.Fatalf("approval message (%d bytes): %s", len(msg), msg)
	}
	evs, err := st.Events(ctx, "judged", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	trips := 0
	for _, ev := range evs {
		if ev.Kind == trace.GuardrailTripped {
			trips++
			if strings.Contains(ev.Data, secret) || len(ev.Data) > 1024 || ev.Decision != "ask" || !strings.Contains(ev.Data, `"kind":"judge"`) {
				t.Errorf("guardrail event %+v", ev)
			}
		}
	}
	if trips != 1 {
		t.Errorf("%d guardrail events, want 1", trips)
	}
}

// TestLLMGuardrailAskNeedsAStore: without a run store, a trip of a
// guardrail that asks cannot wait: the run fails with a policy error
// saying so.
func TestLLMGuardrailAskNeedsAStore(t *testing.T) {
	fx := newFixture(t)
	fx.script(scripted.Reply{Step: "answer", Raw: raw("internal-only")})
	res := fx.run(guardAskFlow, map[string]any{"q": "x"})
	wantErrorClass(t, res, "policy", "llm step answer: output guardrail no_notes tripped and waits for a person's decision (on_trip: ask), which needs a durable store")
}
