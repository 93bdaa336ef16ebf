package flow_test

import (
	"reflect"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// TestArgProvenance follows values through templates, step references
// (steps.<id>.output and <id>), for_each items, fallbacks and the default
// args, at the granularity of the args template's leaves.
func TestArgProvenance(t *testing.T) {
	t.Parallel()
	f := parse(t, `
name: prov
inputs: {type: object, properties: {to: {type: string}, xs: {type: array}}}
steps:
  - {id: found, tool: search, args: {q: "{input.to}"}}
  - {id: draft, prompt_template: "write to {input.to}"}
  - {id: ok, type: approval, message: "send?"}
  - id: send
    tool: send_email
    requires: [found, draft, ok]
    args:
      to: "{input.to}"
      body: "{draft}"
      subject: "re: {found.results[0].title} {steps.draft.output}"
      note: fixed text
      nested: {list: ["{ok.approved}", 3]}
      mixed: "{to} and {steps.found.status}"
    on_error: fallback
    fallback: {tool: send_email, args: {to: "{draft}"}}
  - {id: each, tool: send_email, for_each: "found.results", args: {to: "{item.title}", n: "{index}"}}
  - {id: each_in, tool: send_email, for_each: "input.xs", args: {to: "{item}"}}
  - {id: plain, tool: send_email, requires: [draft, found]}
`)
	specs := func(name string) (tool.Spec, bool) { s, ok := testTools[name]; return s, ok }
	O := func(os ...safety.Origin) []safety.Origin { return os }
	cases := []struct {
		step     string
		fallback bool
		want     safety.Provenance
	}{
		{"send", false, safety.Provenance{
			"/to":            O(safety.OriginUser),
			"/body":          O(safety.OriginInferred),
			"/subject":       O(safety.OriginDB, safety.OriginInferred), // search reads a store
			"/nested/list/0": O(safety.OriginUser),                      // a person's approval
			"/mixed":         O(safety.OriginConstant, safety.OriginUser),
		}},
		{"send", true, safety.Provenance{"/to": O(safety.OriginInferred)}},
		{"each", false, safety.Provenance{"/to": O(safety.OriginDB), "/n": O(safety.OriginConstant)}},
		{"each_in", false, safety.Provenance{"/to": O(safety.OriginUser)}},
		{"plain", false, safety.Provenance{"/draft": O(safety.OriginInferred), "/found": O(safety.OriginDB)}},
		{"found", false, safety.Provenance{"/q": O(safety.OriginUser)}},
	}
	for _, c := range cases {
		got := flow.ArgProvenance(f, f.StepByID(c.step), c.fallback, specs)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("step %s (fallback %v): provenance = %v, want %v", c.step, c.fallback, got, c.want)
		}
	}
	// without declarations a tool's output is tool:<name>.
	got := flow.ArgProvenance(f, f.StepByID("each"), false, nil)
	if want := (safety.Provenance{"/to": O("tool:search"), "/n": O(safety.OriginConstant)}); !reflect.DeepEqual(got, want) {
		t.Errorf("undeclared tools: %v, want %v", got, want)
	}
}
