package plan_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/plan"
)

func TestParseAcceptsTheIssueExample(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"goal": "…", "steps": [{"id": "weather", "tool": "read_primary_weather", "depends_on": [], "args": {"city": "Tokyo"}},
		{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}}]}`)
	want := &plan.Plan{Goal: "…", Steps: []plan.Step{
		{ID: "weather", Tool: "read_primary_weather", DependsOn: []string{}, Args: map[string]any{"city": "Tokyo"}},
		{ID: "convert", Tool: "convert_temperature", Args: map[string]any{"celsius": map[string]any{"$ref": "weather.temperature_c"}}},
	}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %#v\nwant %#v", p, want)
	}
	again := mustParse(t, string(p.JSON()))
	if !reflect.DeepEqual(again.Steps[1], p.Steps[1]) || again.Goal != p.Goal {
		t.Fatalf("round trip changed the plan: %s", p.JSON())
	}
}

func TestParseNullMeansAbsent(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"goal": null, "steps": [{"id": "a", "tool": "t", "depends_on": null, "args": null}]}`)
	if p.Goal != "" || p.Steps[0].DependsOn != nil || p.Steps[0].Args != nil {
		t.Fatalf("got %#v", p)
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	deep := `{"steps": [{"id": "a", "tool": "t", "args": {"x": ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}]}`
	huge := `{"goal": "` + strings.Repeat("x", plan.MaxBytes) + `", "steps": []}`
	tests := []struct {
		name, in string
		ptrs     []string // the problems' pointers, in order
		msg      string   // a part of the message
	}{
		{"empty", "  ", []string{""}, "plan is empty"},
		{"prose", "Here is the plan: first read the weather.", []string{""}, `invalid character 'H' looking for beginning of value at byte offset 0: "Here is`},
		{"prose after the plan", `{"steps": []} I hope this helps!`, []string{""}, `extra data after the plan at byte offset 14: "I hope`},
		{"two values", `{"steps": []}{"steps": []}`, []string{""}, "send one JSON value only"},
		{"truncated", `{"goal": "g", "steps": [{"id": "weather", "tool": "read_primary_weather", "args": {"city": "Tok`, []string{"/steps/0/args/city"}, "the JSON ends early (truncated?)"},
		{"truncated after a comma", `{"goal": "g", "steps": [{"id": "a",`, []string{"/steps/0"}, "ends early"},
		{"a list", `[{"id": "a"}]`, []string{""}, "got a list (wrap the steps"},
		{"a string", `"plan"`, []string{""}, "got a string"},
		{"extra top field", `{"goal": "g", "steps": [], "reasoning": "because"}`, []string{"/reasoning"}, `unknown field "reasoning" (known: goal, steps)`},
		{"extra step field", `{"steps": [{"id": "a", "tool": "t", "why": "x", "description": "y"}]}`, []string{"/steps/0/why", "/steps/0/description"}, `unknown field "why" in a step (known: id, tool, depends_on, args, declaration)`},
		{"duplicate key", `{"steps": [{"id": "a", "id": "b", "tool": "t"}]}`, []string{"/steps/0/id"}, `duplicate key "id"`},
		{"wrong types", `{"goal": 1, "steps": [{"id": 7, "tool": ["t"], "depends_on": "a", "args": [1]}]}`,
			[]string{"/goal", "/steps/0/id", "/steps/0/tool", "/steps/0/depends_on", "/steps/0/args"}, "must be a string, got a number"},
		{"steps not a list", `{"steps": {"a": {}}}`, []string{"/steps"}, "steps must be a list of step objects, got an object"},
		{"step not an object", `{"steps": ["read the weather"]}`, []string{"/steps/0"}, "a step must be an object"},
		{"depends_on entry", `{"steps": [{"id": "a", "tool": "t", "depends_on": ["x", 2]}]}`, []string{"/steps/0/depends_on/1"}, "a step id must be a string, got a number"},
		{"deeply nested", deep, []string{"/steps/0/args/x" + strings.Repeat("/0", 28)}, "nested deeper than 32 levels"},
		{"too big", huge, []string{""}, "more than the 1048576 bytes a plan may be"},
		{"bad escape", `{"goal": "\x"}`, []string{"/goal"}, "invalid character 'x' in string escape code"},
		{"escaped pointer", `{"steps": [{"id": "a", "tool": "t", "a/b~c": 1}]}`, []string{"/steps/0/a~1b~0c"}, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := plan.Parse([]byte(tt.in))
			var pe *plan.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, %v; want a *ParseError", p, err)
			}
			var ptrs []string
			for _, pr := range pe.Problems {
				ptrs = append(ptrs, pr.Pointer)
			}
			if !reflect.DeepEqual(ptrs, tt.ptrs) {
				t.Errorf("pointers %q, want %q (%v)", ptrs, tt.ptrs, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}
