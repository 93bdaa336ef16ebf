package temporal

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
)

// three llm steps, one after the other, each a scripted model call that
// reports 30 tokens in and 10 out.
const spendFlow = `name: spend
budgets: {%s}
steps:
  - {id: a, type: llm, model: m, prompt_template: "one"}
  - {id: b, type: llm, model: m, prompt_template: "two {a}"}
  - {id: c, type: llm, model: m, prompt_template: "three {b}"}
`

const spendScript = `replies:
  - {step: a, raw: "A", tokens: {in: 30, out: 10}}
  - {step: b, raw: "B", tokens: {in: 30, out: 10}}
  - {step: c, raw: "C", tokens: {in: 30, out: 10}}
`

// an agent of two turns (a tool call, then its answer) after an llm step.
const spendAgentFlow = `name: spend_agent
budgets: {max_llm_calls: 2}
steps:
  - {id: a, type: llm, model: m, prompt_template: "one"}
  - id: clerk
    type: agent
    model: m
    prompt_template: "look it up: {a}"
    tools: {lookup: }
`

const spendAgentScript = `replies:
  - {step: a, raw: "A"}
  - {step: clerk, turn: 1, tool_calls: [{name: lookup, args: {order: "1"}}]}
  - {step: clerk, turn: 2, raw: "found"}
`

// TestBudgetsAcrossActivities: max_llm_calls and max_tokens are charged to
// the run across activities (each llm step, an agent's turns): the call
// past the limit is refused, and the run fails as the same flow run by
// the local engine fails — same status, class, step, budget and message.
func TestBudgetsAcrossActivities(t *testing.T) {
	cases := []struct {
		name, flow, script string
		step, budget       string
	}{
		{"max_llm_calls", strings.Replace(spendFlow, "%s", "max_llm_calls: 2", 1), spendScript, "c", "max_llm_calls"},
		{"max_tokens", strings.Replace(spendFlow, "%s", "max_tokens: 100", 1), spendScript, "c", "max_tokens"},
		{"agent turn", spendAgentFlow, spendAgentScript, "clerk", "max_llm_calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger()
			p := loadAgent(t, tc.flow, tc.script, l.tool("lookup", true))
			st := newHarness(t, p).run(map[string]any{})
			if st.Status != "failed" || st.Error == nil || st.Error.Class != "budget" || st.Error.Step != tc.step || !strings.Contains(st.Error.Message, tc.budget) {
				t.Fatalf("Temporal run: %s %+v", st.Status, st.Error)
			}
			ll := newLedger()
			lp := loadAgent(t, tc.flow, tc.script, ll.tool("lookup", true))
			res, err := wire.Engine(lp, engine.Config{}).Run(context.Background(), lp.Flow, map[string]any{}, &engine.RunOptions{RunID: "run-1"})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Status) != st.Status || res.Error == nil || string(res.Error.Class) != st.Error.Class || res.Error.Step != st.Error.Step ||
				res.Error.Budget != tc.budget || res.Error.Message != st.Error.Message {
				t.Errorf("local run %s %+v, Temporal %s %+v", res.Status, res.Error, st.Status, st.Error)
			}
			for _, s := range st.Steps {
				if lr := res.Steps[s.ID]; string(lr.Status) != s.Status {
					t.Errorf("step %s: local %s, Temporal %s", s.ID, lr.Status, s.Status)
				}
			}
			if l.count("lookup") != ll.count("lookup") {
				t.Errorf("lookup ran %d times on Temporal, %d locally", l.count("lookup"), ll.count("lookup"))
			}
		})
	}
}
