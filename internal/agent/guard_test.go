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

// TestGuardrailAsk: a guardrail with on_trip: ask (Ask) does not stop the
// loop: it pauses with a Pending naming the guardrail and why it tripped
// (never the text it matched). An approved input trip goes on to the
// model's answer; a tripped answer is committed, so the resume that
// carries a person's decision does not ask the model again: approved, it
// is the answer; rejected, the guardrail error.
func TestGuardrailAsk(t *testing.T) {
	secret := func(name string, input bool) agent.Guardrail {
		g := denyGuard(name, input, "4111")
		g.Trips = func(_ context.Context, text string, _ any) (string, error) {
			if strings.Contains(text, "4111") {
				return "the text matches a card number at byte 12", nil
			}
			return "", nil
		}
		g.Ask = true
		return g
	}

	// input: asks, then an approval lets the task reach the model.
	guards := []agent.Guardrail{secret("cards", true)}
	m := &turns{replies: []func(*model.Request) *model.Response{textReply("refunded")}}
	l := newLoop(t, agent.Config{Model: m, Guardrails: guards, Journal: &journal{}})
	s := &agent.Session{Task: "refund card 4111 1111 1111 1111"}
	res, err := l.Run(t.Context(), s)
	ref := agent.GuardRef(0, "cards")
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || m.calls() != 0 {
		t.Fatalf("input trip: %v, %+v, %d model calls; want a pause before any model call", err, res, m.calls())
	}
	p := res.Pending[0]
	if p.Ref != ref || p.Guardrail != "cards" || p.Kind != "approval" || p.Tool != "" ||
		!strings.Contains(p.Reason, "input guardrail cards tripped on the task: the text matches a card number") || strings.Contains(p.Reason+p.Args, "1111") {
		t.Errorf("pending %+v", p)
	}
	s.Decisions = map[string]agent.Decision{ref: {Verdict: agent.Approve, ID: "a1"}}
	if res, err = l.Run(t.Context(), s); err != nil || res.Status != agent.StatusAnswered || res.Answer != "refunded" || m.calls() != 1 {
		t.Fatalf("approved input trip: %v, %+v, %d model calls", err, res, m.calls())
	}

	// output: the tripped answer is committed and waits.
	guards = []agent.Guardrail{secret("cards_out", false)}
	for _, verdict := range []agent.Verdict{agent.Approve, agent.Reject} {
		m = &turns{replies: []func(*model.Request) *model.Response{textReply("your card 4111 is refunded")}}
		j := &journal{}
		res, err = newLoop(t, agent.Config{Model: m, Guardrails: guards, Journal: j}).Run(t.Context(), &agent.Session{Task: "refund me"})
		ref = agent.GuardRef(1, "cards_out")
		if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Ref != ref || res.Answer != nil ||
			len(j.turns) != 1 || len(j.turns[0].Guard) != 1 {
			t.Fatalf("output trip: %v, %+v, %d turns committed", err, res, len(j.turns))
		}
		// a resume from the journal (a new process) with the decision.
		s = j.session("refund me")
		s.Decisions = map[string]agent.Decision{ref: {Verdict: verdict, ID: "a2", Comment: "not to the customer"}}
		m2 := &turns{}
		res, err = newLoop(t, agent.Config{Model: m2, Guardrails: guards, Journal: j}).Run(t.Context(), s)
		if m2.calls() != 0 {
			t.Errorf("%s: the resume asked the model %d time(s) for the committed turn", verdict, m2.calls())
		}
		var ge *agent.GuardrailError
		switch verdict {
		case agent.Approve:
			if err != nil || res.Status != agent.StatusAnswered || res.Answer != "your card 4111 is refunded" {
				t.Errorf("approved output trip: %v, %+v", err, res)
			}
		default:
			if fault.ClassOf(err) != fault.Guardrail || !errors.As(err, &ge) || ge.Name != "cards_out" || ge.Side != "output" || ge.Turn != 1 ||
				!strings.Contains(err.Error(), "a person rejected going on: not to the customer") || res.Answer != nil {
				t.Errorf("rejected output trip: %v, %+v", err, res)
			}
		}
	}
}
