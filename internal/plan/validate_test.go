package plan_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

type problemWant struct{ ptr, msg string }

var validateCases = []struct {
	name      string
	plan      string
	allowed   []string
	maxSteps  int
	completed []plan.StepResult
	want      []problemWant // nil: valid
}{
	{name: "the weather plan", plan: primaryPlan},
	{name: "whole output of a tool without output schema", plan: `{"steps": [{"id": "l", "tool": "lookup"}, {"id": "c", "tool": "lookup", "args": {"x": {"$ref": "l"}}}]}`},
	{name: "list items and nested refs", plan: `{"steps": [{"id": "w", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
		{"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "w.hourly[0].temperature_c"}}},
		{"id": "l", "tool": "lookup", "args": {"deep": [{"at": {"$ref": "w.hourly[3].hour"}}]}}]}`},
	{name: "refs to completed steps", plan: `{"steps": [{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}}]}`,
		completed: []plan.StepResult{{ID: "weather", Tool: "read_backup_weather"}}},
	{name: "a completed step listed again is reused", plan: `{"steps": [{"id": "weather", "tool": "read_backup_weather", "args": {"nonsense": true}},
		{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}}]}`,
		completed: []plan.StepResult{{ID: "weather", Tool: "read_backup_weather"}}},

	{name: "empty plan", plan: `{"goal": "g", "steps": []}`, want: []problemWant{{"/steps", "the plan has no steps"}}},
	{name: "no steps at all", plan: `{"goal": "g"}`, want: []problemWant{{"/steps", "the plan has no steps"}}},
	{name: "duplicate ids", plan: `{"steps": [{"id": "a", "tool": "lookup"}, {"id": "a", "tool": "lookup"}]}`,
		want: []problemWant{{"/steps/1/id", `duplicate step id "a" (/steps/0 has it)`}}},
	{name: "reference to a later step", plan: `{"steps": [{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}},
		{"id": "weather", "tool": "read_backup_weather", "args": {"city": "Tokyo"}}]}`,
		want: []problemWant{{"/steps/0/args/celsius", `$ref "weather.temperature_c" uses step "weather", which comes later (/steps/1)`}}},
	{name: "depends_on a later step", plan: `{"steps": [{"id": "a", "tool": "lookup", "depends_on": ["b"]}, {"id": "b", "tool": "lookup"}]}`,
		want: []problemWant{{"/steps/0/depends_on/0", `depends on step "b", which comes later (/steps/1)`}}},
	{name: "cycle", plan: `{"steps": [{"id": "a", "tool": "lookup", "depends_on": ["b"]}, {"id": "b", "tool": "lookup", "args": {"x": {"$ref": "a"}}}]}`,
		want: []problemWant{{"/steps/0/depends_on/0", "comes later"}, {"/steps/0", "steps form a cycle: a → b → a"}}},
	{name: "depends on itself", plan: `{"steps": [{"id": "a", "tool": "lookup", "depends_on": ["a"]}]}`,
		want: []problemWant{{"/steps/0/depends_on/0", `step "a" depends on itself`}}},
	{name: "unknown dependency", plan: `{"steps": [{"id": "weather", "tool": "lookup"}, {"id": "b", "tool": "lookup", "depends_on": ["wether", "weather", "weather"]}]}`,
		want: []problemWant{{"/steps/1/depends_on/0", `depends on unknown step "wether" (did you mean "weather"?)`}, {"/steps/1/depends_on/2", `depends_on lists "weather" twice`}}},
	{name: "$ref into a missing field", plan: `{"steps": [{"id": "weather", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
		{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature"}}}]}`,
		want: []problemWant{{"/steps/1/args/celsius", `$ref "weather.temperature": weather has no field "temperature": declared fields are city, condition, hourly, temperature_c (did you mean "temperature_c"?) (output of tool read_backup_weather)`}}},
	{name: "$ref below a scalar", plan: `{"steps": [{"id": "w", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
		{"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "w.city.name"}}}]}`,
		want: []problemWant{{"/steps/1/args/celsius", `w.city has no field "name": it is declared as a string`}}},
	{name: "$ref indexes a non-list", plan: `{"steps": [{"id": "w", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
		{"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "w.temperature_c[0]"}}}]}`,
		want: []problemWant{{"/steps/1/args/celsius", `w.temperature_c cannot be indexed with [0]: it is declared as a number`}}},
	{name: "$ref into a tool without output schema", plan: `{"steps": [{"id": "l", "tool": "lookup"}, {"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "l.value"}}}]}`,
		want: []problemWant{{"/steps/1/args/celsius", `tool lookup declares no output schema, so only its whole output can be used ({"$ref": "l"})`}}},
	{name: "$ref of the wrong type", plan: `{"steps": [{"id": "w", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
		{"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "w.condition"}}}]}`,
		want: []problemWant{{"/steps/1/args/celsius", `$ref "w.condition" gives a string, but tool convert_temperature wants a number here`}}},
	{name: "malformed references", plan: `{"steps": [{"id": "a", "tool": "lookup", "args": {"x": {"$ref": 3}, "y": {"$ref": "a..b"}, "z": {"$ref": "a", "also": 1}}}]}`,
		want: []problemWant{{"/steps/0/args/x/$ref", `$ref must be a string "step_id.path", got a number`}, {"/steps/0/args/y", `$ref "a..b" is not a reference`}, {"/steps/0/args/z", `an object with "$ref" is a reference and holds nothing else`}}},
	{name: "args break the input schema", plan: `{"steps": [{"id": "w", "tool": "read_backup_weather", "args": {"town": "Tokyo"}},
		{"id": "c", "tool": "convert_temperature", "args": {"celsius": "18"}}]}`,
		want: []problemWant{{"/steps/0/args", "missing property 'city' (input schema of tool read_backup_weather)"}, {"/steps/0/args", "additional properties 'town' not allowed"}, {"/steps/1/args/celsius", "got string, want number (input schema of tool convert_temperature)"}}},
	{name: "an unknown argument beside a reference", plan: `{"steps": [{"id": "w", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
		{"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "w.temperature_c"}, "kelvin": true}}]}`,
		want: []problemWant{{"/steps/1/args", "additional properties 'kelvin' not allowed"}}},
	{name: "a tool the step does not allow", plan: primaryPlan, allowed: []string{"read_backup_weather", "convert_temperature", "write_brief"},
		want: []problemWant{{"/steps/0/tool", `tool "read_primary_weather" is not allowed in this plan (allowed: convert_temperature, read_backup_weather, write_brief)`}}},
	{name: "unknown tool", plan: `{"steps": [{"id": "a", "tool": "convert_temprature", "args": {"celsius": 1}}, {"id": "b", "tool": ""}]}`,
		want: []problemWant{{"/steps/0/tool", `unknown tool "convert_temprature" (allowed: `}, {"/steps/0/tool", `(did you mean "convert_temperature"?)`}, {"/steps/1/tool", "a step needs a tool"}}},
	{name: "nested execute_plan", plan: `{"steps": [{"id": "inner", "tool": "execute_plan", "args": {"plan": {"steps": []}}}]}`,
		want: []problemWant{{"/steps/0/tool", `tool "execute_plan" runs plans itself and cannot be used inside a plan: plans do not nest`}}},
	{name: "bad ids", plan: `{"steps": [{"id": "", "tool": "lookup"}, {"id": "two words", "tool": "lookup"}]}`,
		want: []problemWant{{"/steps/0/id", "a step needs an id"}, {"/steps/1/id", `step id "two words" must be letters, digits, _ or -`}}},
	{name: "a new step reusing a completed id with another tool", plan: `{"steps": [{"id": "weather", "tool": "read_primary_weather", "args": {"city": "Tokyo"}}]}`,
		completed: []plan.StepResult{{ID: "weather", Tool: "read_backup_weather"}},
		want:      []problemWant{{"/steps/0/id", `step id "weather" already completed with tool read_backup_weather`}}},
	{name: "longer than max_steps", plan: primaryPlan, maxSteps: 2,
		want: []problemWant{{"/steps", "the plan has 3 steps, more than max_steps=2"}}},
	{name: "10,000 steps", plan: manySteps(10000), maxSteps: 20,
		want: []problemWant{{"/steps", "the plan has 10000 steps, more than max_steps=20"}}},
}

func manySteps(n int) string {
	var b strings.Builder
	b.WriteString(`{"goal": "g", "steps": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": "s%d", "tool": "lookup"}`, i)
	}
	b.WriteString("]}")
	return b.String()
}

func TestValidate(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var golden strings.Builder
	for _, tt := range validateCases {
		p := mustParse(t, tt.plan)
		err := plan.Validate(p, w.catalog(t, tt.allowed, tt.maxSteps), tt.completed...)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var ve *plan.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: got %v, want a *ValidationError", tt.name, err)
			continue
		}
		fmt.Fprintf(&golden, "# %s\n", tt.name)
		for _, pr := range ve.Problems {
			fmt.Fprintf(&golden, "%s\n", pr)
		}
	next:
		for _, want := range tt.want {
			for _, pr := range ve.Problems {
				if pr.Pointer == want.ptr && strings.Contains(pr.Message, want.msg) {
					continue next
				}
			}
			t.Errorf("%s: no problem at %s containing %q in\n%s", tt.name, want.ptr, want.msg, err)
		}
		if len(ve.Problems) > len(tt.want) {
			t.Errorf("%s: %d problems, want %d:\n%s", tt.name, len(ve.Problems), len(tt.want), err)
		}
		wantClass := fault.Format
		if strings.Contains(tt.name, "max_steps") || strings.Contains(tt.name, "10,000") {
			wantClass = fault.Budget
			if b := fault.BudgetOf(err); b != "max_steps" {
				t.Errorf("%s: budget %q, want max_steps", tt.name, b)
			}
		}
		if c := fault.ClassOf(err); c != wantClass {
			t.Errorf("%s: class %s, want %s", tt.name, c, wantClass)
		}
	}
	checkGolden(t, "validate.golden", golden.String())
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plan -run %s -update)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs (go test ./plan -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := mustParse(t, `{"steps": [
		{"id": "a", "tool": "nope"},
		{"id": "a", "tool": "execute_plan"},
		{"id": "c", "tool": "convert_temperature", "depends_on": ["z"], "args": {"celsius": {"$ref": "later.x"}}},
		{"id": "later", "tool": "lookup"}]}`)
	err := plan.Validate(p, w.catalog(t, nil, 0))
	var ve *plan.ValidationError
	if !errors.As(err, &ve) {
		t.Fatal(err)
	}
	var ptrs []string
	for _, pr := range ve.Problems {
		ptrs = append(ptrs, pr.Pointer)
	}
	want := "/steps/0/tool /steps/1/id /steps/1/tool /steps/2/depends_on/0 /steps/2/args/celsius"
	if got := strings.Join(ptrs, " "); got != want {
		t.Errorf("pointers %s\nwant %s\n%v", got, want, err)
	}
}

func TestCatalogRejects(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tests := []struct {
		name string
		cfg  plan.CatalogConfig
		msg  string
	}{
		{"allowed unknown", plan.CatalogConfig{Tools: w.specs, Allowed: []string{"teleport"}}, `allowed tool "teleport" is not among the tools`},
		{"allowed meta tool", plan.CatalogConfig{Tools: w.specs, Allowed: []string{"execute_plan"}}, "plans do not nest"},
		{"duplicate", plan.CatalogConfig{Tools: append(w.specs, w.specs[0])}, `tool "read_primary_weather" is listed twice`},
		{"bad schema", plan.CatalogConfig{Tools: append(w.specs[:0:0], w.specs[0], func() (s specT) { s = w.specs[1]; s.Name = "x"; s.InputSchema = []byte(`{"type": 5}`); return }())}, "tool x: schema x input_schema is not a valid JSON Schema"},
	}
	for _, tt := range tests {
		_, err := plan.NewCatalog(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.msg)
		}
	}
	c := w.catalog(t, nil, 0)
	if _, err := c.Restrict([]string{"lookup"}, 0); err != nil {
		t.Error(err)
	}
	narrow, _ := c.Restrict([]string{"lookup"}, 0)
	if _, err := narrow.Restrict([]string{"write_brief"}, 0); err == nil || !strings.Contains(err.Error(), "not allowed here") {
		t.Errorf("widening a catalog: %v", err)
	}
	if r, _ := c.Restrict(nil, 500); r.MaxSteps() != plan.DefaultMaxSteps {
		t.Errorf("Restrict loosened max steps to %d", r.MaxSteps())
	}
	if got := strings.Join(c.Allowed(), ","); strings.Contains(got, plan.MetaTool) {
		t.Errorf("the meta tool is allowed by default: %s", got)
	}
}

type specT = tool.Spec
