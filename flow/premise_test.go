package flow_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
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

// A tool declaration's premise: {id, claim, check} (rein.yaml, or a
// flow's tools:) is read into its tool.Spec, its check evaluated over the
// call's output and args; a check that reads anything else, and the
// premise problems a step's has, are located errors.
func TestToolPremise(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`tools:
  lookup:
    command: [./lookup.sh]
    effect: read
    premise: {id: region-known, claim: "a region", check: 'output.region != "" && args.customer != ""'}
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Tools["lookup"].Spec().Premise
	if p == nil || p.ID != "region-known" || p.Claim != "a region" || p.Check != `output.region != "" && args.customer != ""` {
		t.Fatalf("premise %+v", p)
	}
	for _, c := range []struct {
		out, args any
		want      bool
	}{
		{map[string]any{"region": "eu"}, map[string]any{"customer": "ann"}, true},
		{map[string]any{"region": ""}, map[string]any{"customer": "ann"}, false},
		{map[string]any{"region": "eu"}, map[string]any{"customer": ""}, false},
	} {
		if err := tool.CheckPremise(context.Background(), p, "lookup", c.out, c.args); (err == nil) != c.want {
			t.Errorf("output %v args %v: %v, want holds=%v", c.out, c.args, err, c.want)
		}
	}
	for src, want := range map[string]string{
		`{id: r, check: 'input.x == 1'}`:   "rein.yaml:5:30: tool lookup: premise check reads input.x, but a tool's premise is checked on each call and sees only output and args",
		`{id: r}`:                          "rein.yaml:5:5: tool lookup: premise needs id: and check:",
		`[r]`:                              "rein.yaml:5:14: tool lookup: premise must be a mapping",
		`{id: r, check: 'output.a', x: 1}`: `unknown field "x" in premise`,
	} {
		_, err := flow.ParseConfig([]byte("tools:\n  lookup:\n    command: [./lookup.sh]\n    effect: read\n    premise: "+src+"\n"), "rein.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}
