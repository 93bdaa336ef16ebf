package flow_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

// TestSubmissionSteps: skill: makes a submit step, adapter: a source step;
// what does not belong to them is a located diagnostic.
func TestSubmissionSteps(t *testing.T) {
	t.Parallel()
	f, err := flow.Parse([]byte("name: w\nsteps:\n  - {id: a, skill: parse}\n  - {id: b, adapter: assigner.v2, skill: assign}\n"), "", testOptions())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.Steps[0].Type != flow.Submit || f.Steps[1].Type != flow.Source || f.Steps[1].Adapter != "assigner.v2" {
		t.Errorf("types = %s %s", f.Steps[0].Type, f.Steps[1].Type)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"name: w\nsteps:\n  - {id: a, type: source}\n", "3:19: step a: a source step needs adapter: NAME"},
		{"name: w\nsteps:\n  - {id: a, type: tool, tool: t, adapter: x}\n", "3:34: step a: adapter: belongs to source steps"},
		{"name: w\nsteps:\n  - {id: a, skill: s, prompt_template: hi}\n", "3:23: step a: a submit step waits for an agent's output; prompt_template does not belong to it"},
	} {
		_, err := flow.Parse([]byte(tc.yaml), "", testOptions())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
