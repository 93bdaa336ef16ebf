package flow_test

import (
	"fmt"
	"strings"
	"testing"
)

// premise: {id, claim, check} is read and compiled; its problems are
// located: a missing check or id, a bad id, an unknown field, an
// expression that does not compile.
func TestPremise(t *testing.T) {
	t.Parallel()
	step := "name: p\nsteps:\n  - {id: look, type: llm, prompt_template: x, premise: %s}\n"
	f := parse(t, fmt.Sprintf(step, `{id: region-known, claim: "a region", check: 'output.region != ""'}`))
	if p := f.Steps[0].Premise; p == nil || p.ID != "region-known" || p.Claim != "a region" || p.Check.Source() != `output.region != ""` {
		t.Fatalf("premise %+v", p)
	}
	for src, want := range map[string]string{
		`{id: r}`:                                  "flow.yaml:3:47: step look: premise needs id: and check:",
		`{id: "9 x", check: 'output.a'}`:           `flow.yaml:3:61: step look: premise id "9 x" must start with a letter`,
		`{id: r, check: 'output.a', when: 'true'}`: `flow.yaml:3:83: step look: unknown field "when" in premise`,
		`{id: r, check: 'output.a ==='}`:           "step look: check:",
		`[r]`:                                      "step look: premise must be a mapping",
	} {
		ds := parseErr(t, fmt.Sprintf(step, src))
		var all []string
		for _, d := range ds {
			all = append(all, d.String())
		}
		if !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("%s: %v, want %q", src, all, want)
		}
	}
}
