package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
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

// TestTenantBudgetAcrossRuns: a worker's flows given a store (Flows.Store,
// rein worker --store) reserve each model call in its ledger under the
// run's tenant, as a local run does: of acme's 250 tokens a day, the first
// run uses 150, and the second's reservation (its prompt's estimate plus
// max_tokens 100) would pass the limit, so its step is refused with a
// budget error naming tokens_per_day, and nothing more is counted.
func TestTenantBudgetAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"rein.yaml": "models:\n  writer: {provider: ollama, model: llama3.2, max_tokens: 100, price: {input_per_mtok: 1, output_per_mtok: 2}}\n" +
			"budgets:\n  tenants:\n    acme: {tokens_per_day: 250}\n",
		"flow.yaml":   "name: summarise\nsteps:\n  - {id: write, type: llm, model: writer, prompt_template: \"Summarise the day\"}\n",
		"script.yaml": "replies:\n  - {step: write, raw: \"done\", tokens: {in: 100, out: 50}}\n  - {step: write, raw: \"done\", tokens: {in: 100, out: 50}}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := project.Load(dir, &project.LoadOptions{Script: filepath.Join(dir, "script.yaml")}) // answers every model name
	if err != nil {
		t.Fatal(err)
	}
	fs := NewFlows()
	fs.Store = st
	fs.Add(p)
	var got []*Status
	for i := range 2 {
		var s testsuite.WorkflowTestSuite
		env := newTestEnv(&s)
		Register(env, &Workflow{Flows: fs}, &Activities{Flows: fs})
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: fmt.Sprintf("run-%d", i+1)})
		in, err := StartInput(p, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		in.Tenant = "acme"
		h := &harness{t: t, env: env, p: p}
		got = append(got, h.runStart(in))
	}
	if got[0].Status != "succeeded" || got[1].Status != "failed" {
		t.Fatalf("statuses %s, %s; want succeeded, failed", got[0].Status, got[1].Status)
	}
	if e := got[1].Error; e == nil || e.Class != "budget" || e.Step != "write" || !strings.Contains(e.Message, "tokens_per_day of tenant acme") {
		t.Errorf("the second run's error: %+v", e)
	}
	spend, err := st.Spend(ctx, store.DayOf(time.Now()), "acme")
	if err != nil || len(spend) != 1 || spend[0].Tokens != 150 || spend[0].Cost != 100+2*50 || spend[0].Open != 0 {
		t.Errorf("acme's spend = %+v, %v; want 150 tokens, 200 micro-units, none open", spend, err)
	}
	if runs, err := st.ListRuns(ctx, &store.ListRunsParams{Limit: 10}); err != nil || len(runs) != 0 {
		t.Errorf("the worker's store holds runs %v (%v): it must hold none", runs, err)
	}
}
