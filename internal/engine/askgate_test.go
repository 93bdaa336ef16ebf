package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine"
)

const askGateFlow = `name: ask
inputs: {type: object}
policy:
  rules:
    - {name: large, tools: [pay], when: "args.amount > 100", verdict: require_approval, reason: above 100 needs a person}
steps:
  - {id: one, tool: pay, args: {amount: "{input.amount}"}}
  - {id: each, tool: pay, for_each: input.items, args: {amount: "{item}"}}
`

// TestAskGate: AskGate decides as the runner's gatePark does, from a
// settled view: a call the policy requires approval of parks (the message
// names the rule, Args records the call; a for_each step's, every item's);
// approved with those args the step runs approved, with other args it is
// asked about again; a call the gate allows does not park. No tool runs.
func TestAskGate(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("pay", 0, nil))
	e := engine.New(engine.Config{Tools: fx.tools, Sink: fx.events})
	f := fx.parse(askGateFlow)
	ctx := context.Background()
	ask := func(amount float64, step int, approved bool, args string) engine.GateAsk {
		t.Helper()
		s := &engine.Settled{Input: map[string]any{"amount": amount, "items": []any{3.0, amount}}}
		var recorded []byte
		if args != "" {
			recorded = []byte(args)
		}
		g, err := e.AskGate(ctx, f, s, engine.AttemptRequest{RunID: "r", Step: step, Attempt: 1, Item: -1, Approved: approved}, recorded)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := ask(250, 0, false, "")
	if !g.Park || g.Approved || string(g.Args) != `{"amount":250}` || !strings.Contains(g.Message, "rule large: above 100 needs a person") {
		t.Errorf("a call above 100: %+v (args %s)", g, g.Args)
	}
	if g := ask(250, 0, true, `{"amount":250}`); g.Park || !g.Approved {
		t.Errorf("approved with its args: %+v", g)
	}
	if g := ask(300, 0, true, `{"amount":250}`); !g.Park || g.Approved || string(g.Args) != `{"amount":300}` {
		t.Errorf("approved with other args: %+v (args %s)", g, g.Args)
	}
	if g := ask(50, 0, false, ""); g.Park || g.Approved {
		t.Errorf("a call the gate allows: %+v", g)
	}
	g = ask(400, 1, false, "")
	if !g.Park || string(g.Args) != `[{"amount":3},{"amount":400}]` || !strings.Contains(g.Message, "approval of 1 of them") {
		t.Errorf("a for_each step: %+v (args %s)", g, g.Args)
	}
	if g := ask(400, 1, true, `[{"amount":3},{"amount":400}]`); g.Park || !g.Approved {
		t.Errorf("a for_each step approved: %+v", g)
	}
	if c.Calls() != 0 {
		t.Errorf("asking the gate called the tool %d times", c.Calls())
	}
}
