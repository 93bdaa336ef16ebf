package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

// FuzzParse checks that Parse never panics and that every failure is a
// *flow.Error whose diagnostics are located (line and column from 1).
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("testdata", "design", "*", "flow.yaml"))
	for _, path := range append(seeds, more...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"name: x\nsteps:\n  - {id: a, prompt_template: \"{item}\", for_each: \"[1]\"}\n",
		"name: x\nsteps:\n  - {id: a, tool: search, args: {q: [\"{input.q}\", {n: \"{index}\"}]}}\n",
		"name: x\nsteps:\n  - {id: a, prompt_template: a, repeat: {until: \"output.ok\", max: 3}, gate: \"previous == nil\"}\n",
		"name: x\nsteps:\n  - {id: a, prompt_template: a, on_error: fallback, fallback: {model: m, prompt_template: \"{a}\"}}\n",
		"name: x\ninputs: {type: object, properties: {t: {$ref: \"#/$defs/t\"}}, $defs: {t: {type: string}}}\nsteps:\n  - {id: a, prompt_template: \"{t} {input.t.x}\"}\n",
		"? [a]\n: b\n",
		"name: x\nsteps:\n  - ? {id: a}\n",
		"--- \n...\n---\nname: y\n",
		"name: x\nsteps:\n  - {id: a, type: llm, prompt_template: a, guardrails: {input: [{name: c, regex: '\\d', on_trip: ask}], output: [{name: d, judge: j}]}}\n  - {id: b, tool: t, guardrails: {}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := flow.Parse(data, "", testOptions())
		if err == nil {
			if fl == nil {
				t.Fatal("Parse returned neither a flow nor an error")
			}
			return
		}
		var fe *flow.Error
		if !errors.As(err, &fe) {
			t.Fatalf("error is %T, not *flow.Error: %v", err, err)
		}
		if len(fe.Diagnostics) == 0 {
			t.Fatal("*flow.Error without diagnostics")
		}
		for _, d := range fe.Diagnostics {
			if d.Line < 1 || d.Col < 1 {
				t.Fatalf("diagnostic not located: %+v", d)
			}
		}
	})
}

// FuzzParseConfig checks that ParseConfig (rein.yaml: tools and their
// premises, models and their prices, budgets)
// never panics and that every failure is located.
func FuzzParseConfig(f *testing.F) {
	addExampleSeeds(f, "rein.yaml")
	for _, s := range []string{
		"",
		"models:\n  default: {provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY, timeout: 20s}\n",
		"models:\n  a: {model: x, structured: xml, max_tokens: -1}\n",
		"tools:\n  t: {command: [\"./t.sh\"], effect: read, input_schema: {type: object}}\n",
		"tools:\n  t: {command: [\"./t.sh\"], effect: read, premise: {id: p, claim: c, check: 'output.a != \"\" && args.b'}}\n",
		"tools:\n  t: {command: [x], effect: read, premise: {id: p, check: 'input.a || steps.x'}}\n",
		"models: [1, 2]\ntools: 3\n",
		"models:\n  m: {provider: openai, model: x, price: {input_per_mtok: 3, output_per_mtok: 15, currency: USD}}\nbudgets:\n  default: {tokens_per_day: 1000, cost_per_day: 5}\n  tenants: {acme: {tokens_per_day: 10}}\n",
		"budgets: {tenants: {\"a b\": 1}, default: [1], x: 2}\nmodels: {m: {provider: openai, model: x, price: {currency: usd}}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := flow.ParseConfig(data, filepath.Join("testdata", "rein.yaml"))
		requireLocated(t, "ParseConfig", cfg != nil, err)
	})
}

// FuzzParseAgent checks that ParseAgent (agent.yaml: model, tools, agent
// tools, handoffs, budgets, context, guardrails) never panics and that every failure is located.
func FuzzParseAgent(f *testing.F) {
	addExampleSeeds(f, "agent.yaml")
	addExampleSeeds(f, filepath.Join("*", "agent.yaml"))
	for _, s := range []string{
		"",
		"model: m\ntools: {b: {agent: b}}\nhandoffs: [x, {agent: y, history: last_user}]\n",
		"model: m\nhandoffs: {agent: y}\n",
		"model: m\nhandoffs: [{history: all}, \"\", [a], {agent: z, history: some, extra: 1}]\n",
		"model: m\ntools: {b: {agent: \"\", approval: required, command: x}}\n",
		"model: m\ntools: {lookup: {}}\ncontext: {max_tokens: 800, strategy: summarize, prompt: Keep ids.}\n",
		"model: m\ntools: [a, b]\ncontext: {max_tokens: -1, strategy: x, prompt: 3}\n",
		"model: m\ncontext: [1]\nbudgets: {max_turns: 0}\n",
		"model: m\nguardrails:\n  input:\n    - {name: cards, regex: '\\d{16}'}\n  output:\n    - {name: d, deny: [x]}\n    - {name: s, schema: {type: object}}\n    - {name: c, check: 'len(text) < 9'}\n",
		"model: m\nguardrails: {input: [{regex: '('}, 3], side: []}\n",
		"model: m\nguardrails:\n  input:\n    - {name: a, regex: x, on_trip: ask}\n  output:\n    - {name: b, deny: [y], on_trip: stop}\n    - {name: c, check: 'true', on_trip: maybe}\n    - {name: d, judge: j, on_trip: [ask]}\n",
	} {
		f.Add([]byte(s))
	}
	// handoffs and agent tools name folders relative to the file: x holds
	// an agent, so entries naming it resolve.
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "x"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x", flow.AgentFile), []byte("model: m\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := flow.ParseAgent(data, filepath.Join(dir, flow.AgentFile))
		requireLocated(t, "ParseAgent", a != nil, err)
	})
}

// FuzzParsePolicyTest checks that a policy test file (rules with when:,
// per-argument provenance, cases with args) never panics and that every
// failure is located.
func FuzzParsePolicyTest(f *testing.F) {
	addExampleSeeds(f, "policy_test.yaml")
	for _, s := range []string{
		"rules:\n  - {name: a, when: args.amount > 1, verdict: allow}\ncases:\n  - {tool: {name: x}, args: {amount: 2}, expect: allow}\n",
		"rules:\n  - {name: a, provenance: {/to: [inferred]}, enforce: false, verdict: block}\ncases: [{tool: x}]\n",
		"from: [a, b]\ncases: []\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pt, err := flow.ParsePolicyTest(data, filepath.Join("testdata", "policy_test.yaml"))
		requireLocated(t, "ParsePolicyTest", pt != nil, err)
	})
}

// requireLocated fails unless a parse gave a result (got) or a *flow.Error
// whose every diagnostic has a line and column.
func requireLocated(t *testing.T, parse string, got bool, err error) {
	t.Helper()
	if err == nil {
		if !got {
			t.Fatalf("%s returned neither a result nor an error", parse)
		}
		return
	}
	var fe *flow.Error
	if !errors.As(err, &fe) {
		t.Fatalf("%s: error is %T, not *flow.Error: %v", parse, err, err)
	}
	for _, d := range fe.Diagnostics {
		if d.Line < 1 || d.Col < 1 {
			t.Fatalf("%s: diagnostic not located: %+v", parse, d)
		}
	}
}

// addExampleSeeds adds every examples/*/name file as a seed.
func addExampleSeeds(f *testing.F, name string) {
	seeds, _ := filepath.Glob(filepath.Join("..", "examples", "*", name))
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzGuardrails checks the guardrail specs of an llm step (regex, deny
// list, schema, check) with arbitrary patterns, phrases and texts: the
// flow's parse never panics and every failure is located; a guardrail
// that parses trips exactly when its rule says (a regex when it matches,
// a deny list when the text holds a phrase, case insensitive, its reason
// quoting the phrase), and a schema or check guardrail decides any text
// without panicking.
func FuzzGuardrails(f *testing.F) {
	f.Add(`\d{4} \d{4}`, "internal-only", `{"type": "object"}`, "len(text) < 9", "card 4111 1111 internal-ONLY")
	f.Add("(", "", "[]", "text ==", "")
	f.Add(`(?i)secret`, "  ", `{"required": ["ok"]}`, "value.ok == true", `{"ok": true}`)
	f.Add(strings.Repeat("a", flow.MaxGuardrailPattern+1), "x", "{", "len(", "\xff\xfe")
	f.Fuzz(func(t *testing.T, pattern, phrase, schema, check, text string) {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		src := "name: g\nsteps:\n  - id: a\n    type: llm\n    prompt_template: hi\n    guardrails:\n      input:\n" +
			"        - {name: r, regex: " + q(pattern) + "}\n" +
			"        - {name: d, deny: [" + q(phrase) + "]}\n" +
			"        - {name: s, schema: " + q(schema) + "}\n" +
			"        - {name: c, check: " + q(check) + "}\n"
		fl, err := flow.Parse([]byte(src), "flow.yaml", testOptions())
		if err != nil {
			var fe *flow.Error
			if !errors.As(err, &fe) || len(fe.Diagnostics) == 0 {
				t.Fatalf("error is not a located *flow.Error: %v", err)
			}
			for _, d := range fe.Diagnostics {
				if d.Line < 1 || d.Col < 1 {
					t.Fatalf("diagnostic not located: %+v", d)
				}
			}
			return
		}
		ctx := context.Background()
		for _, g := range fl.Steps[0].Guardrails {
			why, err := g.Trips(ctx, text, nil)
			switch g.Kind() {
			case "regex":
				if err != nil || (why != "") != g.Regex.MatchString(text) {
					t.Fatalf("regex %q on %q: %q, %v", pattern, text, why, err)
				}
			case "deny":
				holds := strings.Contains(strings.ToLower(text), strings.ToLower(phrase))
				if err != nil || (why != "") != holds || holds && !strings.Contains(why, strconv.Quote(phrase)) {
					t.Fatalf("deny %q on %q: %q, %v", phrase, text, why, err)
				}
			case "schema", "check":
			default:
				t.Fatalf("guardrail %s has no kind", g.Name)
			}
		}
	})
}
