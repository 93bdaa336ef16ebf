package flow_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

// TestParseAgentGuardrails: each guardrail rule trips on what it should
// and passes the rest; problems are located in agent.yaml.
func TestParseAgentGuardrails(t *testing.T) {
	t.Parallel()
	src := `model: m
tools: {lookup: {}}
guardrails:
  input:
    - {name: no_cards, regex: '\b(?:\d[ -]?){13,16}\b'}
  output:
    - {name: no_secrets, deny: [Password, internal-only]}
    - {name: short, check: 'len(text) <= 40'}
    - {name: shaped, schema: {type: object, required: [ok]}, on_trip: ask}
`
	a, err := flow.ParseAgent([]byte(src), "agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Guardrails) != 4 || !a.Guardrails[0].Input || a.Guardrails[1].Input || a.Guardrails[0].Ask || !a.Guardrails[3].Ask {
		t.Fatalf("guardrails %+v", a.Guardrails)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		g        int
		text     string
		tripsFor string
	}{
		{0, "refund card 4111 1111 1111 1111 please", "matches"},
		{0, "refund order 1042", ""},
		{1, "the PASSWORD is swordfish", `denied phrase "Password"`},
		{1, "all good", ""},
		{2, strings.Repeat("x", 41), "its check is false"},
		{2, "short", ""},
		{3, `{"nope": 1}`, "breaks the guardrail's schema"},
		{3, `{"ok": true}`, ""},
		{3, "plain text", "breaks the guardrail's schema"},
	} {
		g := a.Guardrails[tc.g]
		why, err := g.Trips(ctx, tc.text, nil)
		if err != nil || (tc.tripsFor == "") != (why == "") || !strings.Contains(why, tc.tripsFor) {
			t.Errorf("%s on %q: %q, %v; want a trip saying %q", g.Name, tc.text, why, err, tc.tripsFor)
		}
	}
	bad := `model: m
tools: {lookup: {}}
guardrails:
  input:
    - {name: a, regex: '(', deny: [x]}
    - {regex: x}
  output:
    - {name: b, deny: []}
    - {name: c, check: 'len(text) >'}
    - {name: c, deny: [y], shout: true}
    - {name: e, deny: [z], on_trip: maybe}
  sideways: []
`
	_, err = flow.ParseAgent([]byte(bad), "agent.yaml")
	for _, w := range []string{"agent.yaml:5:24: guardrail regex: error parsing regexp", "agent.yaml:5:7: guardrail a: give exactly one of",
		"agent.yaml:6:7: a guardrail needs name:", "agent.yaml:8:23: guardrail deny: list at least one phrase", "agent.yaml:9:35: check: unexpected token EOF",
		`agent.yaml:10:7: guardrails: "c" is named twice`, `unknown field "shout" in a guardrail`, `agent.yaml:11:37: guardrail on_trip: "maybe" is neither stop`, `agent.yaml:12:3: unknown field "sideways" in guardrails`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in %v", w, err)
		}
	}
}

// TestParseLLMGuardrails: an llm step takes guardrails: (its prompt and
// reply); on_trip: ask is refused there, located, and guardrails: on
// other kinds of step is refused.
func TestParseLLMGuardrails(t *testing.T) {
	t.Parallel()
	ok := `name: f
steps:
  - id: a
    type: llm
    model: m
    prompt_template: hi
    guardrails:
      input: [{name: cards, regex: '\d{16}'}]
      output: [{name: notes, deny: [internal-only]}]
`
	f, err := flow.Parse([]byte(ok), "flow.yaml", &flow.Options{Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Steps[0]; len(s.Guardrails) != 2 || !s.Guardrails[0].Input || s.Agent != nil {
		t.Fatalf("llm step guardrails %+v (agent %v)", s.Guardrails, s.Agent)
	}
	bad := `name: f
steps:
  - id: a
    type: llm
    model: m
    prompt_template: hi
    for_each: "[1, 2]"
    guardrails:
      output: [{name: notes, deny: [x], on_trip: ask}]
  - id: b
    type: tool
    tool: t
    guardrails: {input: []}
`
	_, err = flow.Parse([]byte(bad), "flow.yaml", &flow.Options{Models: func(string) bool { return true }})
	for _, w := range []string{"flow.yaml:9:16: step a: guardrail notes: on_trip: ask waits for a person on a plain llm step, not under for_each or repeat",
		"flow.yaml:13:5: step b: guardrails belongs to agent and llm steps"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in %v", w, err)
		}
	}
}
