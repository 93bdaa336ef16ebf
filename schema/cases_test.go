package schema

import (
	"os"
	"testing"

	"github.com/reinhq/rein/flow"
)

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// head is a flow's first lines; cases append steps to it.
const head = "name: x\nsteps:\n"

// TestFlowCases checks flows against flow.v1.json. Where loader is set, the
// flow is self-contained and flow.Parse must agree with the schema, so the
// two cannot drift apart unnoticed.
func TestFlowCases(t *testing.T) {
	t.Parallel()
	sch := compile(t, "flow.v1.json", Flow())
	tests := []struct {
		name   string
		yaml   string
		ok     bool
		loader bool
	}{
		// good
		{"minimal", head + "  - { id: a, tool: t }\n", true, true},
		{"agent step", head + "  - { id: a, type: agent, model: m, prompt_template: \"{input.task}\", instructions: i, concurrency: 2,\n" +
			"      tools: { look: , pay: { approval: required } }, budgets: { max_turns: 3, timeout: 1m }, max_observation_bytes: 100 }\n", true, true},
		{"agent step with tools as a list", head + "  - { id: a, type: agent, model: m, prompt_template: t, tools: [look, pay] }\n", true, true},
		{"agent step without tools", head + "  - { id: a, type: agent, model: m, prompt_template: t }\n", false, true},
		{"agent step with a bad approval", head + "  - { id: a, type: agent, model: m, prompt_template: t, tools: { pay: { approval: yes } } }\n", false, true},
		{"id only, no name", "id: x.v1\nsteps:\n  - { id: a, tool: t }\n", true, true},
		{"duration string", head + "  - { id: a, tool: t, timeout: 1m30s }\n", true, true},
		{"fractional seconds", head + "  - { id: a, tool: t, timeout: 1.5 }\n", true, true},
		{"flow fields", "name: x\nid: y\nversion: 2\ndescription: d\nschema: s.v1\nenabled: false\nidempotency: input_hash\n" +
			"max_iterations: 50\nconcurrency: 2\nbudgets: { max_llm_calls: 3, max_tokens: 1000, timeout: 5m }\n" +
			"inputs: { type: object, properties: { q: { type: string } } }\nschemas: { out: { type: object } }\n" +
			"tools:\n  t: { command: [./t.sh], effect: read }\nsteps:\n  - { id: a, tool: t, output_schema: out, args: { q: \"{input.q}\" } }\n", true, true},
		{"fallback tool with args", head + "  - { id: a, tool: t, on_error: fallback, fallback: { tool: u, args: { x: 1 } } }\n", true, true},
		{"fallback model with prompt", head + "  - { id: a, model: m, prompt_template: p, on_error: fallback, fallback: { model: n, prompt_template: q } }\n", true, true},
		{"fallback value", head + "  - { id: a, tool: t, on_error: fallback, fallback: { value: { ok: false } } }\n", true, true},
		{"on_error escalate", head + "  - { id: a, tool: t, on_error: escalate }\n", true, true},
		{"loops", head + "  - { id: a, model: m, prompt_template: \"{item}\", for_each: \"[1, 2]\", concurrency: 2 }\n" +
			"  - id: b\n    model: m\n    prompt_template: p\n    repeat: { until: \"iteration >= 1\", max: 3 }\n" +
			"    backoff: { initial: 1s, max: 10s, multiplier: 3 }\n    retries: 2\n    gate: \"true\"\n    max_output_bytes: 10\n    mandatory: true\n", true, true},
		{"every step type", head + "  - { id: a, type: approval }\n  - { id: b, type: flow, description: d }\n  - { id: c, skill: s }\n", true, false},
		// bad
		{"unknown step field retires", head + "  - { id: a, tool: t, retires: 2 }\n", false, true},
		{"on_error explode", head + "  - { id: a, tool: t, on_error: explode }\n", false, true},
		{"timeout list", head + "  - { id: a, tool: t, timeout: [1] }\n", false, true},
		{"timeout words", head + "  - { id: a, tool: t, timeout: 30 seconds }\n", false, true},
		{"timeout zero", head + "  - { id: a, tool: t, timeout: 0 }\n", false, true},
		{"unknown flow field", head[:8] + "max_iteration: 3\n" + head[8:] + "  - { id: a, tool: t }\n", false, true},
		{"no name or id", "steps:\n  - { id: a, tool: t }\n", false, true},
		{"no steps", "name: x\n", false, true},
		{"empty steps", "name: x\nsteps: []\n", false, true},
		{"step without id", head + "  - { tool: t }\n", false, true},
		{"reserved id", head + "  - { id: input, tool: t }\n", false, true},
		{"id with a space", head + "  - { id: a b, tool: t }\n", false, true},
		{"unknown type", head + "  - { id: a, type: banana, tool: t }\n", false, true},
		{"requires a string", head + "  - { id: a, tool: t }\n  - { id: b, tool: t, requires: a }\n", false, true},
		{"retries too many", head + "  - { id: a, tool: t, retries: 11 }\n", false, true},
		{"fallback two kinds", head + "  - { id: a, tool: t, on_error: fallback, fallback: { value: 1, tool: u } }\n", false, true},
		{"fallback no kind", head + "  - { id: a, tool: t, on_error: fallback, fallback: {} }\n", false, true},
		{"fallback args without tool", head + "  - { id: a, tool: t, on_error: fallback, fallback: { model: m, args: {} } }\n", false, true},
		{"fallback unknown field", head + "  - { id: a, tool: t, on_error: fallback, fallback: { tool: u, retries: 1 } }\n", false, true},
		{"repeat without max", head + "  - { id: a, tool: t, repeat: { until: \"true\" } }\n", false, true},
		{"repeat without until", head + "  - { id: a, tool: t, repeat: { max: 3 } }\n", false, true},
		{"repeat too long", head + "  - { id: a, tool: t, repeat: { until: \"true\", max: 101 } }\n", false, true},
		{"concurrency without for_each", head + "  - { id: a, tool: t, concurrency: 2 }\n", false, true},
		{"skip on a mandatory step", head + "  - { id: a, tool: t, mandatory: true, on_error: skip }\n", false, true},
		{"llm without prompt", head + "  - { id: a, type: llm, model: m }\n", false, true},
		{"tool step without tool", head + "  - { id: a, type: tool }\n", false, true},
		{"budgets unknown field", "name: x\nbudgets: { max_calls: 3 }\nsteps:\n  - { id: a, tool: t }\n", false, true},
		{"backoff unknown field", head + "  - { id: a, tool: t, backoff: { start: 1s } }\n", false, true},
		{"backoff multiplier too big", head + "  - { id: a, tool: t, backoff: { multiplier: 11 } }\n", false, true},
		{"bad idempotency", "name: x\nidempotency: always\nsteps:\n  - { id: a, tool: t }\n", false, true},
		{"max_iterations zero", "name: x\nmax_iterations: 0\nsteps:\n  - { id: a, tool: t }\n", false, true},
		{"tool without command", "name: x\ntools:\n  t: { effect: read }\nsteps:\n  - { id: a, tool: t }\n", false, true},
		{"tool bad effect", "name: x\ntools:\n  t: { command: x, effect: boom }\nsteps:\n  - { id: a, tool: t }\n", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := yamlValue([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(v)
			if got := err == nil; got != tc.ok {
				t.Errorf("schema valid = %v, want %v (%v)\n%s", got, tc.ok, err, tc.yaml)
			}
			if !tc.loader {
				return
			}
			_, lerr := flow.Parse([]byte(tc.yaml), "testdata/case.yaml", loaderOptions)
			if got := lerr == nil; got != tc.ok {
				t.Errorf("the loader disagrees with the schema: Parse ok = %v, want %v (%v)\n%s", got, tc.ok, lerr, tc.yaml)
			}
		})
	}
}
