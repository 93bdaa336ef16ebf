package rein_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestImpactOfADeclaredAssumption: a plan step's declaration names an
// assumption (id region-eu); the premise region-eu is found in the
// journal, without the caller passing it: the call that declared it is
// compensated, the plan's later call that used its output undone, the
// independent step kept. A premise that matches nothing is a not_found
// error listing the run's assumptions and steps.
func TestImpactOfADeclaredAssumption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]string{
		"flow.yaml": `name: decl
policy:
  rules:
    - {name: never, tags: [never-used], verdict: block}
steps:
  - {id: pl, type: plan, model: m, goal: "onboard {input.name}", tools: [create, link], max_replans: 0}
  - {id: other, tool: link, args: {customer: "{input.name}", item: "audit"}, requires: []}
`,
		"script.yaml": `replies:
  - step: pl
    decision: plan
    plan:
      goal: onboard ada
      steps:
        - id: a
          tool: create
          args: {name: ada}
          declaration:
            action: create the customer in the EU shard
            facts: [{claim: "the name is ada", source: user, evidence: ada}]
            assumptions: [{id: region-eu, claim: "ada is in the EU", affects: ["/name"]}]
        - id: b
          tool: link
          args: {customer: {$ref: a.id}, item: seat}
          depends_on: [a]
          declaration:
            action: link a seat
            facts: [{claim: "the name is ada", source: user, evidence: ada}]
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obj := json.RawMessage(`{"type": "object"}`)
	tools := []tool.Tool{
		tool.Func(tool.Spec{Name: "create", Effect: tool.EffectWrite, Reversibility: tool.Compensatable, InputSchema: obj,
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}`),
			Compensate:   &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}"}}, Resources: []string{"crm:customer/{output.id}"}},
			func(_ context.Context, args any) (any, error) { return map[string]any{"id": "c-ada"}, nil }),
		tool.Func(tool.Spec{Name: "link", Effect: tool.EffectWrite, Reversibility: tool.Reversible, InputSchema: obj,
			Undo: &tool.Compensation{Tool: "unlink", Args: map[string]any{"customer": "{args.customer}"}}},
			func(_ context.Context, args any) (any, error) { return map[string]any{"ok": true}, nil }),
		tool.Func(tool.Spec{Name: "archive", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) { return nil, nil }),
		tool.Func(tool.Spec{Name: "unlink", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) { return nil, nil }),
	}
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := project.Load(dir, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(&engine.Config{Store: st}).Run(ctx, p, map[string]any{"name": "ada"})
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("run: %v %+v", err, res)
	}
	c, err := loadClient(st, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	im, err := c.Runs().Impact(ctx, res.RunID, "region-eu", nil)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, c := range im.Calls {
		actions[c.Tool+" "+c.StepID] = string(c.Action)
	}
	if im.Source != "assumption" || strings.Join(im.Claims, "") != "ada is in the EU" || len(im.DeclaredBy) != 1 ||
		!strings.HasSuffix(im.DeclaredBy[0], "/pl/1/plan1/a") {
		t.Errorf("impact %+v, want the assumption declared by plan step a", im)
	}
	if actions["create pl"] != "compensate" || actions["link pl"] != "undo" || actions["link other"] != "keep" {
		t.Errorf("actions %v, want create compensated, the plan's link undone, the other link kept", actions)
	}
	_, err = c.Runs().Impact(ctx, res.RunID, "region-us", nil)
	if fault.ClassOf(err) != fault.NotFound || !strings.Contains(err.Error(), "its assumptions: region-eu; its steps: pl, other") {
		t.Errorf("an unknown premise: %v", err)
	}
}
