package flow_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

func TestRiskAndReview(t *testing.T) {
	t.Parallel()
	f := parse(t, `name: r
risk:
  min_tier: 2
  costs: {tools: {send_email: 4}, tags: {money: 3}}
  max_fan_out: 5
  max_resources: 20
  post_check: send_email
review: {model: reviewer, tools: [send_email], steps: [s], min_tier: 2}
steps:
  - {id: s, tool: send_email, args: {to: "{input.to}"}}
`)
	r := f.Risk.Risk
	if r.MinTier != 2 || r.ToolCost["send_email"] != 4 || r.TagCost["money"] != 3 || r.MaxFanOut != 5 || r.MaxResources != 20 || r.PostCheck != "send_email" {
		t.Errorf("risk = %+v", r)
	}
	v := f.Review.Review
	if v.Model != "reviewer" || v.MinTier != 2 || len(v.Tools) != 1 || len(v.Steps) != 1 {
		t.Errorf("review = %+v", v)
	}
	ds := parseErr(t, `name: r
risk:
  min_tier: 5
  costs: {tools: {send_email: 0}, tagz: {}}
  max_fan_out: 0
  post_check: nope
  fan_out: 3
review: {tools: [nope], steps: [zz], min_tier: 9}
steps:
  - {id: s, tool: send_email, args: {to: "{input.to}"}}
`)
	wantDiag(t, ds, "flow.yaml:3:13:", "risk: min_tier must be a risk tier from 1 to 4, not 5")
	wantDiag(t, ds, "flow.yaml:4:31:", "risk costs tools: send_email must be a risk tier from 1 to 4, not 0")
	wantDiag(t, ds, "flow.yaml:4:35:", `unknown field "tagz" in risk costs (did you mean "tags"?)`)
	wantDiag(t, ds, "flow.yaml:5:16:", "risk: max_fan_out must be at least 1, not 0")
	wantDiag(t, ds, "flow.yaml:6:15:", `unknown tool "nope"`)
	wantDiag(t, ds, "flow.yaml:7:3:", `unknown field "fan_out" in risk`)
	wantDiag(t, ds, "flow.yaml:8:1:", "review needs a model:")
	wantDiag(t, ds, "flow.yaml:8:18:", `unknown tool "nope"`)
	wantDiag(t, ds, "flow.yaml:8:33:", `review: steps names "zz", which is not a step of the flow`)
	wantDiag(t, ds, "flow.yaml:8:48:", "review: min_tier must be a risk tier from 1 to 4, not 9")
}

func TestConfigRiskAndReview(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte("risk: {min_tier: 3}\nreview: {model: m}\n"), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Risk.Risk.MinTier != 3 || cfg.Review.Review.Model != "m" {
		t.Errorf("risk %+v review %+v", cfg.Risk, cfg.Review)
	}
	_, err = flow.ParseConfig([]byte("risk: [1]\nreview: {model: m, extra: 1}\n"), "rein.yaml")
	for _, want := range []string{"rein.yaml:1:7: risk must be a mapping", `rein.yaml:2:20: unknown field "extra" in review`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
