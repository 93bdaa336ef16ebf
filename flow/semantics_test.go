package flow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
)

func TestRequiresDefaults(t *testing.T) {
	t.Parallel()
	f := parse(t, `
name: graph
steps:
  - id: a
    prompt_template: "a"
  - id: b
    prompt_template: "b {a}"
  - id: c
    requires: []
    prompt_template: "c"
  - id: d
    prompt_template: "d {c}"
  - id: e
    requires: [b, d]
    prompt_template: "e {a} {c}"
`)
	tests := []struct {
		id       string
		requires []string
		upstream []string
		down     []string
	}{
		{"a", nil, nil, []string{"b"}},                               // first step: a root
		{"b", []string{"a"}, []string{"a"}, []string{"e"}},           // omitted = previous
		{"c", nil, nil, []string{"d"}},                               // [] = root
		{"d", []string{"c"}, []string{"c"}, []string{"e"}},           // omitted = previous, even after a root
		{"e", []string{"b", "d"}, []string{"a", "b", "c", "d"}, nil}, // transitive
	}
	for _, tt := range tests {
		s := f.StepByID(tt.id)
		if s == nil {
			t.Fatalf("no step %s", tt.id)
		}
		if !equalStrings(s.Requires, tt.requires) {
			t.Errorf("%s.Requires = %v, want %v", tt.id, s.Requires, tt.requires)
		}
		for k, r := range s.Requires {
			if f.Steps[s.RequireIdx[k]].ID != r {
				t.Errorf("%s.RequireIdx[%d] = %d, not %s", tt.id, k, s.RequireIdx[k], r)
			}
		}
		if got := f.Upstream(s); !equalStrings(got, tt.upstream) {
			t.Errorf("%s.Upstream = %v, want %v", tt.id, got, tt.upstream)
		}
		var down []string
		for _, j := range s.Downstream {
			down = append(down, f.Steps[j].ID)
		}
		if !equalStrings(down, tt.down) {
			t.Errorf("%s.Downstream = %v, want %v", tt.id, down, tt.down)
		}
	}
	if !reflect.DeepEqual(f.Order, []int{0, 1, 2, 3, 4}) {
		t.Errorf("Order = %v", f.Order)
	}
}

func TestOrderTopological(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps string
		want  []string
	}{
		{"sequence", `
  - {id: a, prompt_template: "a"}
  - {id: b, prompt_template: "b"}
  - {id: c, prompt_template: "c"}`, []string{"a", "b", "c"}},
		{"listed backwards", `
  - {id: c, requires: [b], prompt_template: "c"}
  - {id: b, requires: [a], prompt_template: "b"}
  - {id: a, requires: [], prompt_template: "a"}`, []string{"a", "b", "c"}},
		{"peers in file order", `
  - {id: z, requires: [], prompt_template: "z"}
  - {id: y, requires: [], prompt_template: "y"}
  - {id: join, requires: [y, z], prompt_template: "j"}
  - {id: x, requires: [], prompt_template: "x"}`, []string{"z", "y", "join", "x"}},
		{"diamond", `
  - {id: d, requires: [b, c], prompt_template: "d"}
  - {id: c, requires: [a], prompt_template: "c"}
  - {id: b, requires: [a], prompt_template: "b"}
  - {id: a, requires: [], prompt_template: "a"}`, []string{"a", "c", "b", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := parse(t, "name: order\nsteps:"+tt.steps+"\n")
			var got []string
			pos := map[string]int{}
			for k, i := range f.Order {
				got = append(got, f.Steps[i].ID)
				pos[f.Steps[i].ID] = k
			}
			if !equalStrings(got, tt.want) {
				t.Errorf("Order = %v, want %v", got, tt.want)
			}
			for _, s := range f.Steps {
				if s.Index != indexOf(f, s) {
					t.Errorf("%s.Index = %d, want its position in Steps", s.ID, s.Index)
				}
				for _, r := range s.Requires {
					if pos[r] >= pos[s.ID] {
						t.Errorf("%s runs before its requirement %s", s.ID, r)
					}
				}
			}
		})
	}
}

func TestWhenStatusOfAndReadsSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		when       string
		prompt     string
		statusOf   []string
		readsSteps bool
	}{
		{"plain when", `a.ok`, "b", nil, false},
		{"status", `steps.a.status == "skipped"`, "b", []string{"a"}, true},
		{"status in braces", `{steps.a.status} != "succeeded"`, "b", []string{"a"}, true},
		{"output only", `steps.a.output.ok`, "b", nil, true},
		{"steps in the prompt", `a.ok`, "{steps.a.status}", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := parse(t, `
name: when
steps:
  - id: a
    prompt_template: "a"
    output_schema: {type: object, properties: {ok: {type: boolean}}}
  - id: b
    when: '`+tt.when+`'
    prompt_template: "`+tt.prompt+`"
`)
			b := f.StepByID("b")
			if got := keys(b.WhenStatusOf); !equalStrings(got, tt.statusOf) {
				t.Errorf("WhenStatusOf = %v, want %v", got, tt.statusOf)
			}
			if f.ReadsSteps != tt.readsSteps {
				t.Errorf("ReadsSteps = %v, want %v", f.ReadsSteps, tt.readsSteps)
			}
		})
	}
}

func TestUndeclaredInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		flow    string
		want    []string
		warning string
	}{
		{"one name", `
name: u
steps:
  - {id: a, prompt_template: "{resume_text}"}`, []string{"resume_text"}, "so {resume_text} is taken as an input field"},
		{"several, sorted, deduplicated", `
name: u
steps:
  - {id: a, prompt_template: "{b_text} {input.a_text} {b_text}", when: "c_flag"}`,
			[]string{"a_text", "b_text", "c_flag"}, "so {a_text}, {b_text}, {c_flag} are taken as input fields"},
		{"declared inputs", `
name: u
inputs: {type: object, properties: {text: {type: string}}}
steps:
  - {id: a, prompt_template: "{text}"}`, nil, ""},
		{"only step outputs", `
name: u
steps:
  - {id: a, prompt_template: "a"}
  - {id: b, prompt_template: "{a}"}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := parse(t, tt.flow)
			if !equalStrings(f.UndeclaredInputs, tt.want) {
				t.Errorf("UndeclaredInputs = %v, want %v", f.UndeclaredInputs, tt.want)
			}
			if tt.warning == "" {
				if len(f.Warnings) != 0 {
					t.Errorf("Warnings = %v, want none", f.Warnings)
				}
				return
			}
			if len(f.Warnings) != 1 || !f.Warnings[0].Warning || !strings.Contains(f.Warnings[0].Message, tt.warning) ||
				f.Warnings[0].Line != 1 || f.Warnings[0].Col != 1 {
				t.Errorf("Warnings = %v, want one at 1:1 containing %q", f.Warnings, tt.warning)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	f := parse(t, `
name: defaults
steps:
  - id: a
    prompt_template: "a"
  - id: fan
    for_each: "[1, 2]"
    prompt_template: "{item}"
`)
	if f.MaxIterations != flow.DefaultMaxIterations || f.Concurrency != flow.DefaultConcurrency || !f.Enabled {
		t.Errorf("flow defaults: MaxIterations %d, Concurrency %d, Enabled %v", f.MaxIterations, f.Concurrency, f.Enabled)
	}
	if f.Budgets != (flow.Budgets{}) {
		t.Errorf("Budgets = %+v, want zero (unlimited)", f.Budgets)
	}
	a := f.Steps[0]
	wantBackoff := flow.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2}
	if a.Backoff != wantBackoff {
		t.Errorf("Backoff = %+v, want %+v", a.Backoff, wantBackoff)
	}
	if a.OnError != flow.Raise || a.Retries != flow.DefaultRetries || a.Timeout != flow.DefaultModelTimeout || a.MaxOutputBytes != 1<<20 || a.Mandatory || a.Type != flow.LLM {
		t.Errorf("step defaults: %+v", a)
	}
	if fan := f.Steps[1]; fan.ForEach == nil || fan.ForEach.Concurrency != flow.DefaultForEachLimit {
		t.Errorf("for_each = %+v, want concurrency %d", fan.ForEach, flow.DefaultForEachLimit)
	}

	set := parse(t, `
name: set
max_iterations: 7
concurrency: 3
budgets: {max_llm_calls: 5, max_tokens: 900, timeout: "2m"}
steps:
  - id: a
    prompt_template: "{item}"
    for_each: "[1]"
    concurrency: 2
    backoff: {initial: 0.5, max: "10s", multiplier: 3}
    max_output_bytes: 512
    mandatory: true
    on_error: retry
    retries: 10
`)
	if set.MaxIterations != 7 || set.Concurrency != 3 || set.Budgets != (flow.Budgets{MaxLLMCalls: 5, MaxTokens: 900, Timeout: 2 * time.Minute}) {
		t.Errorf("flow fields: %d %d %+v", set.MaxIterations, set.Concurrency, set.Budgets)
	}
	s := set.Steps[0]
	if s.Backoff != (flow.Backoff{Initial: 500 * time.Millisecond, Max: 10 * time.Second, Multiplier: 3}) ||
		s.ForEach.Concurrency != 2 || s.MaxOutputBytes != 512 || !s.Mandatory || s.OnError != flow.Retry || s.Retries != 10 {
		t.Errorf("step fields: %+v backoff %+v for_each %+v", s, s.Backoff, s.ForEach)
	}
}

func TestDurations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  time.Duration
		err   string
	}{
		{"30", 30 * time.Second, ""},
		{"1.5", 1500 * time.Millisecond, ""},
		{`"30s"`, 30 * time.Second, ""},
		{`"1m30s"`, 90 * time.Second, ""},
		{`"250ms"`, 250 * time.Millisecond, ""},
		{"0", 0, "timeout must be positive"},
		{"-3", 0, "timeout must be positive"},
		{`"-1s"`, 0, "timeout must be positive"},
		{`"soon"`, 0, `timeout: "soon" is not a duration`},
		{`"30"`, 0, `timeout: "30" is not a duration`},
		{"true", 0, "timeout must be seconds (30) or a duration string"},
		{"[30]", 0, "timeout must be seconds (30) or a duration string"},
		{"1.0e+12", 0, "timeout is out of range"},
		{"-1.0e+300", 0, "timeout is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			src := "name: d\nsteps:\n  - id: a\n    prompt_template: \"a\"\n    timeout: " + tt.value + "\n"
			if tt.err != "" {
				ds := parseErr(t, src)
				wantDiag(t, ds, "5:14", "step a: "+tt.err)
				return
			}
			if got := parse(t, src).Steps[0].Timeout; got != tt.want {
				t.Errorf("Timeout = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSchemaResolution checks the order a schema name resolves in: the
// flow's schemas:, then schemas/<name>.json, then <name>.json beside the
// flow; a name ending in .json is a path.
func TestSchemaResolution(t *testing.T) {
	t.Parallel()
	// Each place declares a different single property, so the resolved
	// schema says where it came from.
	schemaOf := func(prop string) string {
		return `{"type": "object", "properties": {"` + prop + `": {"type": "string"}}, "additionalProperties": false}`
	}
	tests := []struct {
		name   string
		inline bool
		files  map[string]string
		ref    string
		want   string // the property the resolved schema declares
	}{
		{"flow schemas first", true, map[string]string{"schemas/s.json": schemaOf("sub"), "s.json": schemaOf("beside")}, "s", "inline"},
		{"then schemas/", false, map[string]string{"schemas/s.json": schemaOf("sub"), "s.json": schemaOf("beside")}, "s", "sub"},
		{"then beside", false, map[string]string{"s.json": schemaOf("beside")}, "s", "beside"},
		{"a .json path", true, map[string]string{"other/s.json": schemaOf("path"), "schemas/other/s.json.json": schemaOf("sub")}, "other/s.json", "path"},
		{"dotted names", false, map[string]string{"schemas/process.plan.v1.json": schemaOf("sub")}, "process.plan.v1", "sub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, body := range tt.files {
				path := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			src := "name: s\n"
			if tt.inline {
				src += "schemas:\n  s: " + schemaOf("inline") + "\n"
			}
			src += "steps:\n  - id: a\n    prompt_template: \"a\"\n    output_schema: " + tt.ref + "\n" +
				"  - id: b\n    prompt_template: \"{a." + tt.want + "}\"\n"
			path := filepath.Join(dir, "flow.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := flow.Load(path, testOptions())
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			sch := f.Steps[0].OutputSchema
			if err := sch.Validate(map[string]any{tt.want: "x"}); err != nil {
				t.Errorf("resolved schema %s does not declare %q: %v", sch.Name, tt.want, err)
			}
		})
	}
}

func TestToolOutputSchemaFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		read string
		err  string
	}{
		{"declared", "{search.results}", ""},
		{"nested", "{search.results[0].title}", ""},
		{"undeclared", "{search.hits}", `search has no field "hits": its schema declares results`},
		{"steps output", "{steps.search.output.hits}", `search has no field "hits"`},
		{"flow tool declared", "{lookup.rows}", ""},
		{"flow tool undeclared", "{lookup.row}", `lookup has no field "row": its schema declares rows (did you mean "rows"?)`},
		{"no schema: anything goes", "{mail.anything}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := `
name: tools
tools:
  lookup:
    command: [./lookup.sh]
    effect: read
    output_schema: {type: object, properties: {rows: {type: array}}, additionalProperties: false}
steps:
  - {id: search, type: tool, tool: search, requires: []}
  - {id: lookup, tool: lookup, requires: []}
  - {id: mail, tool: send_email, requires: []}
  - id: answer
    requires: [search, lookup, mail]
    prompt_template: "` + tt.read + `"
`
			if tt.err != "" {
				wantDiag(t, parseErr(t, src), "step answer: prompt_template: ", tt.err)
				return
			}
			f := parse(t, src)
			if f.StepByID("search").OutputSchema == nil || f.StepByID("lookup").OutputSchema == nil {
				t.Errorf("tool steps did not take their tool's output_schema")
			}
			if f.StepByID("mail").OutputSchema != nil {
				t.Errorf("mail has an output_schema, its tool declares none")
			}
		})
	}
}

func TestForEachOutputIsList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		read string
		err  string
	}{
		{"{facts}", ""},
		{"{facts[0]}", ""},
		{"{facts[0].name}", ""},
		{"{facts.name}", `facts has no field "name": its schema says it is not an object`},
		{"{facts[0].nmae}", `facts[0] has no field "nmae": its schema declares name (did you mean "name"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.read, func(t *testing.T) {
			t.Parallel()
			src := `
name: fe
schemas:
  fact: {type: object, properties: {name: {type: string}}, additionalProperties: false}
steps:
  - {id: facts, for_each: "[1, 2]", prompt_template: "{item}", output_schema: fact}
  - {id: sum, prompt_template: "` + tt.read + `"}
`
			if tt.err != "" {
				wantDiag(t, parseErr(t, src), "step sum:", tt.err)
				return
			}
			parse(t, src)
		})
	}
}

// TestScopedNames checks where item/index, previous/iteration and output
// may be read.
func TestScopedNames(t *testing.T) {
	t.Parallel()
	const schema = "{type: object, properties: {ok: {type: boolean}}}"
	tests := []struct {
		name string
		step string
		err  string
	}{
		{"item in for_each", `for_each: "[1]", prompt_template: "{item} {index}"`, ""},
		{"item in for_each args", `for_each: "[1]", tool: send_email, args: {to: "{item}", n: "{index}"}`, ""},
		{"item elsewhere", `prompt_template: "{item}"`, "{item} is defined only in for_each steps"},
		{"index elsewhere", `prompt_template: "n{index}"`, "{index} is defined only in for_each steps"},
		{"item in a repeat", `repeat: {until: "true", max: 2}, prompt_template: "{item}"`, "{item} is defined only in for_each steps"},
		{"previous in repeat", `repeat: {until: "iteration > 1", max: 3}, prompt_template: "{previous} {iteration}"`, ""},
		{"previous elsewhere", `prompt_template: "{previous}"`, "{previous} is defined only in repeat steps"},
		{"iteration in when", `prompt_template: "x", when: "iteration > 1"`, "{iteration} is defined only in repeat steps"},
		{"output in gate", `prompt_template: "x", output_schema: ` + schema + `, gate: "output.ok"`, ""},
		{"own id in gate", `prompt_template: "x", output_schema: ` + schema + `, gate: "s.ok"`, ""},
		{"output in until", `prompt_template: "x", output_schema: ` + schema + `, repeat: {until: "output.ok", max: 2}`, ""},
		{"undeclared output field in gate", `prompt_template: "x", output_schema: ` + schema + `, gate: "output.nope"`, `output has no field "nope"`},
		{"output in prompt", `prompt_template: "{output}"`, "{output} is the step's own output, visible only in gate and repeat.until"},
		{"output in when", `prompt_template: "x", when: "output.ok"`, "{output.ok} is the step's own output"},
		{"own id in prompt", `prompt_template: "{s}"`, "{s} is this step itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "name: scope\nsteps:\n  - {id: s, " + tt.step + "}\n"
			if tt.err != "" {
				wantDiag(t, parseErr(t, src), "step s:", tt.err)
				return
			}
			parse(t, src)
		})
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func indexOf(f *flow.Flow, s *flow.Step) int {
	for i, x := range f.Steps {
		if x == s {
			return i
		}
	}
	return -1
}

// TestSchemaFieldChecks covers how field references are checked against
// an upstream schema: strict where the schema lists its properties, and
// forgiving wherever it leaves room.
func TestSchemaFieldChecks(t *testing.T) {
	t.Parallel()
	many := make([]string, 80)
	for i := range many {
		many[i] = fmt.Sprintf("{properties: {f%d: {type: string}}, additionalProperties: false}", i)
	}
	tests := []struct {
		name   string
		schema string
		read   string
		err    string
	}{
		{"listed", `{type: object, properties: {name: {type: string}}}`, "{a.name}", ""},
		{"not listed", `{type: object, properties: {name: {type: string}}}`, "{a.nmae}", `a has no field "nmae": its schema declares name (did you mean "name"?)`},
		{"no properties", `{type: object}`, "{a.anything.at.all}", ""},
		{"empty schema", `{}`, "{a.x}", ""},
		{"additionalProperties schema", `{type: object, properties: {a: {type: string}}, additionalProperties: {type: object, properties: {v: {type: number}}}}`, "{a.other.v}", ""},
		{"additionalProperties schema, wrong field below", `{type: object, properties: {a: {type: string}}, additionalProperties: {type: object, properties: {v: {type: number}}, additionalProperties: false}}`, "{a.other.w}", `a.other has no field "w"`},
		{"patternProperties", `{type: object, properties: {a: {type: string}}, patternProperties: {"^x": {}}}`, "{a.xyz}", ""},
		{"nested", `{type: object, properties: {p: {type: object, properties: {city: {type: string}}}}}`, "{a.p.cty}", `a.p has no field "cty": its schema declares city`},
		{"scalar has no fields", `{type: object, properties: {n: {type: number}}}`, "{a.n.x}", `a.n has no field "x": its schema says it is not an object`},
		{"list items", `{type: object, properties: {l: {type: array, items: {type: object, properties: {t: {type: string}}}}}}`, "{a.l[3].t}", ""},
		{"list items, wrong field", `{type: object, properties: {l: {type: array, items: {type: object, properties: {t: {type: string}}}}}}`, "{a.l[3].u}", `a.l[3] has no field "u"`},
		{"index into an object", `{type: object, properties: {o: {type: object}}}`, "{a.o[0]}", "a.o is not declared as a list by its schema"},
		{"prefixItems", `{type: object, properties: {l: {type: array, prefixItems: [{type: object, properties: {t: {type: string}}}]}}}`, "{a.l[0].u}", `a.l[0] has no field "u"`},
		{"local $ref", `{$defs: {c: {type: object, properties: {name: {type: string}}}}, $ref: "#/$defs/c"}`, "{a.name}", ""},
		{"local $ref, wrong field", `{$defs: {c: {type: object, properties: {name: {type: string}}}}, $ref: "#/$defs/c"}`, "{a.nmae}", `a has no field "nmae": its schema declares name`},
		{"nested $ref, wrong field", `{type: object, properties: {p: {$ref: "#/$defs/p"}}, $defs: {p: {type: object, properties: {city: {type: string}}}}}`, "{a.p.cty}", `a.p has no field "cty": its schema declares city`},
		{"recursive $ref", `{type: object, properties: {next: {$ref: "#"}, v: {type: number}}}`, "{a.next.next.v}", ""},
		{"recursive $ref, wrong field", `{type: object, properties: {next: {$ref: "#"}, v: {type: number}}}`, "{a.next.next.w}", `a.next.next has no field "w"`},
		{"$ref by $id is accepted", `{$defs: {c: {$id: "urn:rein:c", type: object, properties: {n: {type: string}}, additionalProperties: false}}, $ref: "urn:rein:c"}`, "{a.whatever}", ""},
		{"allOf", `{type: object, allOf: [{properties: {name: {type: string}}}, {properties: {age: {type: integer}}}]}`, "{a.age}", ""},
		{"allOf, wrong field", `{type: object, allOf: [{properties: {name: {type: string}}}, {properties: {age: {type: integer}}}]}`, "{a.agee}", `a has no field "agee": its schema declares age, name`},
		{"anyOf with an open branch", `{anyOf: [{properties: {name: {type: string}}}, {type: object}]}`, "{a.x}", ""},
		{"self $ref only", `{$ref: "#"}`, "{a.x}", ""},
		{"too many branches to follow", "{anyOf: [" + strings.Join(many, ", ") + "]}", "{a.f79}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "name: fields\nsteps:\n  - id: a\n    prompt_template: \"a\"\n    output_schema: " + tt.schema +
				"\n  - id: b\n    prompt_template: \"" + tt.read + "\"\n"
			if tt.err != "" {
				wantDiag(t, parseErr(t, src), "7:23", "step b: prompt_template: "+tt.read+": "+tt.err)
				return
			}
			parse(t, src)
		})
	}
}

// A skip propagates along explicit requires and reads of a step's output,
// never along the implicit order of a plain list.
func TestSkipFrom(t *testing.T) {
	t.Parallel()
	f := parse(t, `
name: skips
steps:
  - {id: a, tool: send_email, args: {}}
  - {id: ok, type: approval}
  - {id: b, tool: send_email, args: {}}
  - {id: c, tool: send_email}
  - {id: reads, tool: send_email, args: {x: "{b}"}}
  - {id: ns, tool: send_email, args: {}, when: "steps.c.output != null"}
  - {id: needs, tool: send_email, requires: [a, ok], args: {}}
  - {id: status, tool: send_email, requires: [b], args: {x: "{b}"}, when: "steps.b.status == 'skipped'"}
`)
	tests := []struct {
		id       string
		implicit bool
		from     []string
	}{
		{"a", false, nil},
		{"ok", true, nil},
		{"b", true, nil},
		{"c", true, nil}, // default args are not a read
		{"reads", true, []string{"b"}},
		{"ns", true, []string{"c"}},
		{"needs", false, []string{"a"}}, // a skipped approval means none was needed
		{"status", false, nil},
	}
	for _, tt := range tests {
		s := f.StepByID(tt.id)
		var from []string
		for _, j := range s.SkipFrom {
			from = append(from, f.Steps[j].ID)
		}
		if s.ImplicitOrder != tt.implicit || !equalStrings(from, tt.from) {
			t.Errorf("step %s: ImplicitOrder %v, SkipFrom %v; want %v, %v", tt.id, s.ImplicitOrder, from, tt.implicit, tt.from)
		}
	}
}

func TestOnErrorEscalate(t *testing.T) {
	t.Parallel()
	f := parse(t, "name: e\nsteps:\n  - {id: a, tool: send_email, args: {}, on_error: escalate}\n")
	if got := f.StepByID("a").OnError; got != flow.Escalate {
		t.Fatalf("on_error = %q, want escalate", got)
	}
	wantDiag(t, parseErr(t, "name: e\nsteps:\n  - {id: a, tool: send_email, args: {}, on_error: escalte}\n"),
		"step a: on_error must be raise, skip, fallback, retry or escalate", `(did you mean "escalate"?)`)
}

// message, a route's text and a plan's goal are templates like the others:
// their references are checked, and a skip propagates along them.
func TestMessageTextGoalReferences(t *testing.T) {
	t.Parallel()
	f := parse(t, `
name: m
steps:
  - {id: a, tool: send_email, args: {}}
  - {id: ok, type: approval, message: "send {a}?"}
  - {id: r, type: route, text: "{ok.comment}", routes: [{name: x, description: X, rules: [{prefix: "x"}]}], fallback_route: x}
`)
	for id, want := range map[string]int{"ok": 0, "r": 1} {
		if s := f.StepByID(id); len(s.SkipFrom) != 1 || s.SkipFrom[0] != want {
			t.Errorf("step %s: SkipFrom %v, want [%d]", id, s.SkipFrom, want)
		}
	}
	wantDiag(t, parseErr(t, "name: m\nsteps:\n  - {id: a, tool: send_email, args: {}}\n  - {id: ok, type: approval, requires: [], message: \"send {a}?\"}\n"),
		"step ok: message: {a} names step a, which is not upstream of this step")
}
