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
