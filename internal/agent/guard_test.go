package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
)

func denyGuard(name string, input bool, phrase string) agent.Guardrail {
	return agent.Guardrail{Name: name, Input: input, Trips: func(_ context.Context, text string, _ any) (string, error) {
		if strings.Contains(text, phrase) {
			return "it holds " + phrase, nil
		}
		return "", nil
	}}
}

// TestGuardrails: an input guardrail stops the loop before any model call;
// an output guardrail refuses the answer (the turn is not committed); both
// are fault.Guardrail errors naming the guardrail.
func TestGuardrails(t *testing.T) {
	guards := []agent.Guardrail{denyGuard("no_cards", true, "4111"), denyGuard("no_secrets", false, "swordfish")}

	m := &turns{replies: []func(*model.Request) *model.Response{textReply("hello")}}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Guardrails: guards, Journal: j})
	_, err := l.Run(t.Context(), &agent.Session{Task: "refund card 4111 1111 1111 1111"})
	var ge *agent.GuardrailError
	if fault.ClassOf(err) != fault.Guardrail || !errors.As(err, &ge) || ge.Name != "no_cards" || ge.Side != "input" || m.calls() != 0 {
		t.Fatalf("input: %v (class %s), %d model calls; want guardrail no_cards before any call", err, fault.ClassOf(err), m.calls())
	}

	m = &turns{replies: []func(*model.Request) *model.Response{textReply("the password is swordfish")}}
	l = newLoop(t, agent.Config{Model: m, Guardrails: guards, Journal: j})
	res, err := l.Run(t.Context(), &agent.Session{Task: "what is the password?"})
	if fault.ClassOf(err) != fault.Guardrail || !errors.As(err, &ge) || ge.Name != "no_secrets" || ge.Side != "output" || ge.Turn != 1 ||
		!strings.Contains(err.Error(), "output guardrail no_secrets tripped on the answer of turn 1: it holds swordfish") {
		t.Fatalf("output: %v", err)
	}
	if res.Answer != nil || len(j.turns) != 0 {
		t.Errorf("the refused answer was accepted (%v) or committed (%d turns)", res.Answer, len(j.turns))
	}

	m = &turns{replies: []func(*model.Request) *model.Response{textReply("all good")}}
	l = newLoop(t, agent.Config{Model: m, Guardrails: guards})
	if res, err := l.Run(t.Context(), &agent.Session{Task: "hello"}); err != nil || res.Answer != "all good" {
		t.Errorf("a clean turn: %v, %+v", err, res)
	}
}

// TestGuardrailJudge: a judge is an isolated classifier call of the
// loop's model (Decision "guardrail", the text its only message) that
// trips the guardrail when the model says so.
func TestGuardrailJudge(t *testing.T) {
	judge := func(trip bool) func(*model.Request) *model.Response {
		return func(req *model.Request) *model.Response {
			if req.Decision != "guardrail" || len(req.Messages) != 2 || req.Messages[1].Content != "you are useless" ||
				!strings.Contains(req.Messages[0].Content, "Refuse insults.") {
				return &model.Response{Text: "not a judge request"}
			}
			if trip {
				return &model.Response{Text: `{"trip": true, "reason": "an insult"}`}
			}
			return &model.Response{Text: `{"trip": false, "reason": ""}`}
		}
	}
	guards := []agent.Guardrail{{Name: "civil", Input: true, Judge: "Refuse insults."}}
	m := &turns{replies: []func(*model.Request) *model.Response{judge(true)}}
	_, err := newLoop(t, agent.Config{Model: m, Guardrails: guards}).Run(t.Context(), &agent.Session{Task: "you are useless"})
	var ge *agent.GuardrailError
	if fault.ClassOf(err) != fault.Guardrail || !errors.As(err, &ge) || ge.Reason != "the judge refused it: an insult" || m.calls() != 1 {
		t.Fatalf("judge trips: %v, %d model calls", err, m.calls())
	}
	m = &turns{replies: []func(*model.Request) *model.Response{judge(false), textReply("Sorry to hear that.")}}
	res, err := newLoop(t, agent.Config{Model: m, Guardrails: guards}).Run(t.Context(), &agent.Session{Task: "you are useless"})
	if err != nil || res.Answer != "Sorry to hear that." {
		t.Fatalf("judge passes: %v, %+v", err, res)
	}
}
