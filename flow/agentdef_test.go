package flow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
)

func TestParseAgent(t *testing.T) {
	t.Parallel()
	src := `name: support
model: gpt-4o-mini
instructions: Help customers with orders.
tools:
  lookup_order:
  issue_refund: {approval: required}
  list_charges:
    command: [./tools/charges.sh]
    effect: read
    approval: none
budgets: {max_turns: 8, max_tool_calls: 12, max_tokens: 20000, timeout: 2m}
max_observation_bytes: 2048
output_schema:
  type: object
  required: [answer]
  properties: {answer: {type: string}}
`
	a, err := flow.ParseAgent([]byte(src), "agents/support/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a.Model != "gpt-4o-mini" || len(a.Tools) != 3 || a.OutputSchema == nil || a.MaxObservationBytes != 2048 {
		t.Fatalf("%+v", a)
	}
	if a.Tools[0].Name != "lookup_order" || a.Tools[0].Decl != nil || a.Tools[0].Approval {
		t.Errorf("tools[0] %+v", a.Tools[0])
	}
	if !a.Tools[1].Approval || a.Tools[2].Decl == nil || a.Tools[2].Decl.Dir != "agents/support" {
		t.Errorf("tools %+v %+v", a.Tools[1], a.Tools[2])
	}
	if a.Budgets != (flow.AgentBudgets{MaxTurns: 8, MaxToolCalls: 12, MaxTokens: 20000, Timeout: 2 * time.Minute}) {
		t.Errorf("budgets %+v", a.Budgets)
	}
}

func TestParseAgentRejects(t *testing.T) {
	t.Parallel()
	src := `model: gpt-4o-mini
instructons: typo
tools:
  refund: {approval: maybe}
  lookup: {effect: read}
  bad name: {}
  crm.find: {command: [./x], approval: required}
budgets: {max_turns: 0, max_calls: 3}
`
	_, err := flow.ParseAgent([]byte(src), "agent.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`agent.yaml:2:1: unknown field "instructons" in agent.yaml`,
		`agent.yaml:4:22: tool refund: approval must be required or none, not "maybe"`,
		`agent.yaml:5:12: tool lookup: effect belongs to an exec tool declaration, which needs command:`,
		`agent.yaml:6:3: tool name "bad name"`,
		`agent.yaml:7:14: tool crm.find is a tool of the MCP server crm (rein.yaml mcp:); it takes only approval: here`,
		`agent.yaml:8:22: budgets: max_turns must be at least 1`,
		`agent.yaml:8:25: unknown field "max_calls" in budgets`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if _, err := flow.ParseAgent([]byte("instructions: x\n"), "agent.yaml"); err == nil || !strings.Contains(err.Error(), "agent.yaml:1:1: agent.yaml needs model:") {
		t.Errorf("no model: %v", err)
	}
}

func TestAgentStep(t *testing.T) {
	t.Parallel()
	opts := &flow.Options{
		Tools: func(name string) (tool.Spec, bool) {
			return tool.Spec{Name: name}, name == "lookup" || name == "refund" || name == "crm.find_customer"
		},
		Models: func(string) bool { return true },
	}
	src := `name: f
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: support
    type: agent
    model: m
    instructions: be kind
    prompt_template: "{input.task}"
    tools: {lookup: , refund: {approval: required}, crm.find_customer: {approval: required}}
    budgets: {max_turns: 4}
    concurrency: 2
`
	f, err := flow.Parse([]byte(src), "f.yaml", opts)
	if err != nil {
		t.Fatal(err)
	}
	a := f.Steps[0].Agent
	if a == nil || a.Model != "m" || a.Instructions != "be kind" || len(a.Tools) != 3 || !a.Tools[1].Approval ||
		a.Tools[2].Name != "crm.find_customer" || !a.Tools[2].Approval ||
		a.Budgets.MaxTurns != 4 || a.Concurrency != 2 {
		t.Fatalf("agent %+v", a)
	}
	bad := `name: f
steps:
  - id: support
    type: agent
    model: m
    tools: {lookp: }
    args: {x: 1}
  - id: t
    tool: lookup
    instructions: no
`
	_, err = flow.Parse([]byte(bad), "f.yaml", opts)
	for _, want := range []string{
		`f.yaml:4:11: step support: an agent step needs a prompt_template`,
		`f.yaml:6:13: step support: unknown tool "lookp"`,
		`f.yaml:7:5: step support: args does not belong to an agent step`,
		`f.yaml:10:5: step t: instructions belongs to agent steps (type: agent)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}

func TestParseAgentExecutePlan(t *testing.T) {
	t.Parallel()
	base := "model: m\ntools: {lookup: {}}\n"
	for src, want := range map[string]flow.AgentPlan{
		"":                                 {},
		"execute_plan: false\n":            {Disabled: true},
		"execute_plan: {enabled: false}\n": {Disabled: true},
		"execute_plan: {max_steps: 4, allow_external: true}\n": {MaxSteps: 4, AllowExternal: true},
	} {
		a, err := flow.ParseAgent([]byte(base+src), "agent.yaml")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if a.ExecutePlan != want {
			t.Errorf("%q: %+v, want %+v", src, a.ExecutePlan, want)
		}
	}
	_, err := flow.ParseAgent([]byte(base+"execute_plan: {max_steps: 0, allow: true}\n"), "agent.yaml")
	for _, w := range []string{"agent.yaml:3:27: execute_plan: max_steps must be at least 1", `agent.yaml:3:30: unknown field "allow" in execute_plan`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in %v", w, err)
		}
	}
	if _, err := flow.ParseAgent([]byte(base+"execute_plan: yes please\n"), "agent.yaml"); err == nil || !strings.Contains(err.Error(), "execute_plan must be true or false") {
		t.Errorf("a string: %v", err)
	}
}

// TestAgentToolsList: tools: may list tool names (no options), in
// agent.yaml and in a type: agent step alike; a list entry that is not a
// name, or a name listed twice, is a located error.
func TestAgentToolsList(t *testing.T) {
	t.Parallel()
	a, err := flow.ParseAgent([]byte("model: m\ntools: [lookup_order, crm.find_customer]\n"), "agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Tools) != 2 || a.Tools[0].Name != "lookup_order" || a.Tools[1].Name != "crm.find_customer" || a.Tools[1].Approval ||
		a.Tools[0].Pos != (flow.Pos{Line: 2, Col: 9}) {
		t.Fatalf("tools %+v", a.Tools)
	}
	opts := &flow.Options{
		Tools: func(name string) (tool.Spec, bool) {
			return tool.Spec{Name: name}, name == "lookup" || name == "refund"
		},
		Models: func(string) bool { return true },
	}
	f, err := flow.Parse([]byte(`name: f
steps:
  - {id: s, tools: [lookup, refund], type: agent, model: m, prompt_template: go}
`), "f.yaml", opts)
	if err != nil {
		t.Fatal(err)
	}
	if ag := f.Steps[0].Agent; ag == nil || len(ag.Tools) != 2 || ag.Tools[0].Name != "lookup" || ag.Tools[1].Name != "refund" || f.Steps[0].PlanSpec != nil {
		t.Fatalf("agent %+v, plan %+v", ag, f.Steps[0].PlanSpec)
	}
	_, err = flow.Parse([]byte(`name: f
steps:
  - {id: s, type: agent, model: m, prompt_template: go, tools: [lookp, lookup, lookup, {refund: {approval: required}}, "bad name"]}
`), "f.yaml", opts)
	for _, want := range []string{
		`f.yaml:3:65: step s: unknown tool "lookp"`,
		`f.yaml:3:80: tool lookup is listed twice in tools:`,
		`f.yaml:3:88: tools: a list holds tool names, not a mapping; to give a tool approval: required or workflow:, write tools: as a mapping`,
		`f.yaml:3:120: tool name "bad name" must start with a letter`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}

// TestAgentRetries: an agent's retries and backoff (of its model calls)
// are an llm step's: agent.yaml checks them where they are written, with
// the same messages, and an agent step without retries: gets the default.
func TestAgentRetries(t *testing.T) {
	t.Parallel()
	src := "model: m\ntools: {}\nretries: 11\nbackoff: {initial: 1s, maxx: 2s}\n"
	_, err := flow.ParseAgent([]byte(src), "agent.yaml")
	for _, want := range []string{
		`agent.yaml:3:10: retries must be between 0 and 10, not 11`,
		`agent.yaml:4:24: unknown field "maxx" in backoff (did you mean "max"?)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if _, err := flow.ParseAgent([]byte("model: m\ntools: {}\nretries: 3\nbackoff: {initial: 1s}\n"), "agent.yaml"); err != nil {
		t.Errorf("retries and backoff refused: %v", err)
	}
	opts := &flow.Options{Tools: func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true }, Models: func(string) bool { return true }}
	for src, want := range map[string]int{
		"name: f\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: go, tools: {x: }}\n":             flow.DefaultRetries,
		"name: f\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: go, tools: {x: }, retries: 0}\n": 0,
	} {
		f, err := flow.Parse([]byte(src), "f.yaml", opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Steps[0].Retries; got != want {
			t.Errorf("%s: retries %d, want %d", src, got, want)
		}
	}
}

// TestParseAgentContext: context: sets the context budget, trim by
// default; its problems are located in agent.yaml.
func TestParseAgentContext(t *testing.T) {
	t.Parallel()
	base := "model: m\ntools: {lookup: {}}\n"
	for src, want := range map[string]flow.AgentContext{
		"":                             {},
		"context: {max_tokens: 800}\n": {MaxTokens: 800, Strategy: "trim"},
		"context: {max_tokens: 800, strategy: summarize, prompt: Keep ids.}\n": {MaxTokens: 800, Strategy: "summarize", Prompt: "Keep ids."},
	} {
		a, err := flow.ParseAgent([]byte(base+src), "agent.yaml")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if a.Context != want {
			t.Errorf("%q: %+v, want %+v", src, a.Context, want)
		}
	}
	_, err := flow.ParseAgent([]byte(base+"context: {max_tokens: 0, strategy: shrink, prompt: x, keep: 2}\n"), "agent.yaml")
	for _, w := range []string{"agent.yaml:3:23: context: max_tokens must be at least 1", `agent.yaml:3:36: context: strategy must be trim`,
		`agent.yaml:3:44: context: prompt is the summary request's`, `agent.yaml:3:55: unknown field "keep" in context`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in %v", w, err)
		}
	}
	if _, err := flow.ParseAgent([]byte(base+"context: {strategy: trim}\n"), "agent.yaml"); err == nil || !strings.Contains(err.Error(), "agent.yaml:3:10: context needs max_tokens") {
		t.Errorf("no max_tokens: %v", err)
	}
	if _, err := flow.ParseAgent([]byte(base+"context: 800\n"), "agent.yaml"); err == nil || !strings.Contains(err.Error(), "context must be a mapping") {
		t.Errorf("a number: %v", err)
	}
}

// response_hook: goes beside workflow: only, takes append_result only, and
// is refused, located, on an agent whose answer is a JSON value.
func TestAgentResponseHook(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := flow.ParseAgent([]byte("model: m\ntools:\n  p_workflow: {workflow: .,  response_hook: append_result}\n"), dir+"/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a.Tools[0].ResponseHook != flow.ResponseHookAppend {
		t.Errorf("hook %q", a.Tools[0].ResponseHook)
	}
	for src, want := range map[string]string{
		"model: m\ntools:\n  p_workflow: {workflow: ., response_hook: prepend}\n":                                      `agent.yaml:3:44: tool p_workflow: response_hook must be append_result`,
		"model: m\ntools:\n  lookup: {response_hook: append_result}\n":                                                 `agent.yaml:3:12: tool lookup: response_hook belongs to an exec tool declaration`,
		"model: m\noutput_schema: {type: object}\ntools:\n  p_workflow: {workflow: ., response_hook: append_result}\n": `agent.yaml:4:3: tool p_workflow: response_hook: append_result appends text to the final answer, and the agent has output_schema`,
	} {
		_, err := flow.ParseAgent([]byte(src), dir+"/agent.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}
