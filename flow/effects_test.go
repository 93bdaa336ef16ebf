package flow_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

func TestToolEffectDeclarations(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`tools:
  create_customer:
    command: [./create.sh]
    effect: write
    reversibility: compensatable
    compensate: {tool: archive_customer, args: {id: "{output.id}", why: "undo {args.name}"}}
    resources: ["crm:customer/{output.id}"]
    tags: [user-facing, compliance]
  archive_customer:
    command: [./archive.sh]
    effect: write
    input_schema: {type: object, properties: {id: {type: string}, why: {type: string}}, required: [id], additionalProperties: false}
`), "/p/rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := cfg.Tools["create_customer"].Spec()
	if spec.Compensate == nil || spec.Compensate.Tool != "archive_customer" || spec.Compensate.Args.(map[string]any)["id"] != "{output.id}" ||
		len(spec.Resources) != 1 || spec.Resources[0] != "crm:customer/{output.id}" || strings.Join(spec.Tags, ",") != "user-facing,compliance" {
		t.Fatalf("spec = %+v", spec)
	}
	reg := registry(t, cfg.Tools)
	if err := flow.CheckEffects(reg, cfg.Tools, nil); err != nil {
		t.Fatalf("CheckEffects: %v", err)
	}
}

func TestToolEffectDeclarationsRejectBadOnes(t *testing.T) {
	t.Parallel()
	_, err := flow.ParseConfig([]byte(`tools:
  a:
    command: [./a.sh]
    effect: write
    reversibility: reversible
    compensate: {tool: b, args: {id: "{input.id}"}, extra: 1}
    resources: ["crm:{item}"]
    tags: ["no tags"]
  b:
    command: [./b.sh]
    effect: write
    undo: {args: {}}
`), "rein.yaml")
	if err == nil {
		t.Fatal("bad declarations accepted")
	}
	for _, want := range []string{
		`rein.yaml:2:3: tool a: compensate: belongs to a tool with reversibility: compensatable`,
		`rein.yaml:6:39: tool a compensate args/id: {input.id} is not known here`,
		`rein.yaml:6:53: unknown field "extra" in tool a compensate`,
		`rein.yaml:7:22: tool a: resource "crm:{item}": {item} is not known here`,
		`rein.yaml:8:12: tool a: tag "no tags" must start with a letter`,
		`rein.yaml:12:11: tool b: undo needs tool:`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// registry registers a Func tool per declaration.
func registry(t *testing.T, decls map[string]*flow.ToolDecl) *tool.Registry {
	t.Helper()
	reg := &tool.Registry{}
	for _, d := range decls {
		if err := reg.Register(tool.Func(d.Spec(), func(context.Context, any) (any, error) { return nil, nil })); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// TestCheckEffectsRejectsBadCompensations: a compensation must name a
// registered tool, and its args must fit that tool's input schema.
func TestCheckEffectsRejectsBadCompensations(t *testing.T) {
	t.Parallel()
	reg := &tool.Registry{}
	nop := func(context.Context, any) (any, error) { return nil, nil }
	in := json.RawMessage(`{"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}, "required": ["id"], "additionalProperties": false}`)
	for _, s := range []tool.Spec{
		{Name: "archive", InputSchema: in},
		{Name: "create", Reversibility: tool.Compensatable, Compensate: &tool.Compensation{Tool: "archiv", Args: map[string]any{"id": "{output.id}"}}},
		{Name: "update", Reversibility: tool.Reversible, Undo: &tool.Compensation{Tool: "archive", Args: map[string]any{"ident": "{output.id}", "n": "three"}}},
	} {
		if err := reg.Register(tool.Func(s, nop)); err != nil {
			t.Fatal(err)
		}
	}
	err := flow.CheckEffects(reg, nil, nil)
	if err == nil {
		t.Fatal("bad compensations accepted")
	}
	for _, want := range []string{
		`tool create: compensate: tool "archiv" is not registered (did you mean "archive"?)`,
		`tool update: undo: args lack "id", which tool archive requires`,
		`tool update: undo: args have "ident", which tool archive's input does not allow`,
		`tool update: undo: args "n" does not fit tool archive's input`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestConfigPolicyValues: when:, per-argument provenance, allow and
// enforce: false, as rein.yaml writes them.
func TestConfigPolicyValues(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`policy:
  defaults: true
  rules:
    - name: small-refunds
      tools: [refund]
      when: args.amount <= 20 && tool == "refund"
      verdict: allow
    - name: recipient
      provenance: {/to: [inferred, user-mentioned]}
      verdict: require_approval
    - name: watch-big
      when: args.amount > 100
      verdict: block
      enforce: false
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy.Policy()
	refund := tool.Spec{Name: "refund", Effect: tool.EffectExternal}
	check := func(args string, prov safety.Provenance) safety.Decision {
		t.Helper()
		inv := safety.Invocation{Tool: refund, Args: json.RawMessage(args), Provenance: prov}
		d, err := p.Check(context.Background(), &inv)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	inferred := safety.Provenance{"/amount": {safety.OriginInferred}}
	if d := check(`{"amount": 5}`, inferred); d.Verdict != safety.Allow || d.Rule != "small-refunds" {
		t.Errorf("small: %+v", d)
	}
	if d := check(`{"amount": 500}`, inferred); d.Verdict != safety.RequireApproval || d.Rule != "inferred-drives-effect" ||
		len(d.LogOnly) != 1 || d.LogOnly[0].Rule != "watch-big" {
		t.Errorf("big: %+v", d)
	}
	refund = tool.Spec{Name: "draft"}
	if d := check(`{"amount": 50, "to": "x"}`, safety.Provenance{"/to": {safety.OriginUserMentioned}, "/amount": {safety.OriginUser}}); d.Rule != "recipient" {
		t.Errorf("recipient: %+v", d)
	}
	if d := check(`{"amount": 50, "to": "x"}`, safety.Provenance{"/to": {safety.OriginUser}, "/amount": {safety.OriginInferred}}); d.Verdict != safety.Allow {
		t.Errorf("an inferred /amount matched the /to rule: %+v", d)
	}
}

func TestConfigPolicy(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`policy:
  defaults: true
  rules:
    - name: no-model-refunds
      tools: [refund]
      provenance: [inferred]
      verdict: block
      reason: refunds are never computed by a model
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy.Policy()
	if len(p.Rules) != len(safety.DefaultRules())+1 || p.Rules[len(p.Rules)-1].Name != "no-model-refunds" {
		t.Fatalf("rules = %+v", p.Rules)
	}
	inv := safety.Invocation{Tool: tool.Spec{Name: "refund", Effect: tool.EffectExternal}, Provenance: safety.Provenance{"/amount": {safety.OriginInferred}}}
	if d, _ := p.Check(context.Background(), &inv); d.Verdict != safety.Block || d.Rule != "no-model-refunds" {
		t.Errorf("decision = %+v", d)
	}
	_, err = flow.ParseConfig([]byte(`policy:
  defualts: true
  rules:
    - name: a
      effects: [write, wrote]
      provenance: [model]
      verdict: permit
    - {name: b, verdict: block}
    - {name: b, verdict: block}
    - {name: inferred-drives-effect, verdict: block}
    - {tools: [x]}
    - {name: t, min_tier: 7, verdict: block}
    - {name: u, unverified: true, verdict: block}
    - {name: dcl, declaration: [absent], verdict: require_review}
    - {name: w, when: steps.a.output > 1, verdict: block}
    - {name: w2, when: "args.amount >", verdict: block}
    - {name: p, provenance: {to: [inferred], /cc: [], /bcc: [model]}, verdict: block}
    - {name: e, enforced: false, verdict: block}
    - {name: f, amount_over: 100, verdict: block}
`), "rein.yaml")
	if err == nil {
		t.Fatal("bad policy accepted")
	}
	for _, want := range []string{
		`rein.yaml:2:3: unknown field "defualts" in policy (did you mean "defaults"?)`,
		`rein.yaml:5:24: rule a: effect must be none, read, write, external or destructive, not "wrote"`,
		`rein.yaml:6:20: rule a: provenance must be user, user-mentioned, constant, inferred, invalidated, db, tool:<name> or tool:*, not "model"`,
		`rein.yaml:7:16: rule a: verdict must be block, require_approval, require_review or allow, not "permit"`,
		`rein.yaml:9:7: rule "b": the name is taken`,
		`rein.yaml:10:7: rule "inferred-drives-effect": the name is taken`,
		`rein.yaml:11:7: rule 5 needs a name:`,
		`rein.yaml:12:27: rule t: min_tier must be a risk tier from 1 to 4, not 7`,
		`rein.yaml:13:29: rule u: unverified: true narrows a provenance: condition`,
		`rein.yaml:14:33: rule dcl: declaration must be missing, unverified or verified, not "absent"`,
		`rein.yaml:15:23: rule w: when: reads "steps"; a rule's condition reads only args, tool, tier`,
		`rein.yaml:16:37: rule w2: when: unexpected token EOF`,
		`rule p: provenance: "to" must be a JSON pointer like /to`,
		`rule p: provenance /cc: list the origins`,
		`rule p: provenance /bcc: origin must be user, user-mentioned, constant, inferred, invalidated, db, tool:<name> or tool:*, not "model"`,
		`unknown field "enforced" in rule e (did you mean "enforce"?)`,
		`unknown field "amount_over" in rule f (a rule takes name, tools, effects, reversibility, tags, provenance, unverified, declaration, min_tier, when, verdict, reason, enforce)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// A rule may name the origin invalidated (a call that touches a resource
// a remediation marked invalid), in provenance: as a list and per argument, and
// the default rules hold invalidated-resource, which asks a person before
// such a side effect.
func TestPolicyMatchesInvalidatedOrigin(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`policy:
  defaults: true
  rules:
    - {name: no-invalid-refunds, tools: [refund], provenance: [invalidated], verdict: block}
    - {name: note-invalid, tools: [note], provenance: {"": [invalidated]}, verdict: require_review}
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy.Policy()
	flagged := safety.Provenance{"": {safety.OriginInvalidated}}
	for _, c := range []struct {
		tool   string
		effect tool.Effect
		want   safety.Verdict
		rule   string
	}{
		{"refund", tool.EffectExternal, safety.Block, "no-invalid-refunds"},
		{"note", tool.EffectNone, safety.RequireReview, "note-invalid"},
		{"pay", tool.EffectWrite, safety.RequireApproval, safety.InvalidatedRuleName},
		{"read", tool.EffectRead, safety.Allow, ""},
	} {
		inv := safety.Invocation{Tool: tool.Spec{Name: c.tool, Effect: c.effect}, Provenance: flagged}
		if d, err := p.Check(context.Background(), &inv); err != nil || d.Verdict != c.want || d.Rule != c.rule {
			t.Errorf("%s: decision %+v, %v; want %s by %q", c.tool, d, err, c.want, c.rule)
		}
	}
}
