package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyTest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "policy_test.yaml")
	src := `defaults: true
rules:
  - {name: no-model-refunds, tools: [refund], provenance: [inferred], verdict: block, reason: refunds are never computed by a model}
cases:
  - name: model refund
    tool: {name: refund, effect: external, tags: [money]}
    provenance: {/amount: [inferred], /customer: [db]}
    expect: block
  - name: user email
    tool: {name: send_email, effect: external}
    provenance: {/to: [user], /body: ["tool:render"]}
    expect: allow
  - name: approved model email
    tool: {name: send_email, effect: external}
    provenance: {/to: [inferred]}
    approved: true
    expect: allow
  - name: model email a lookup verified
    tool: {name: send_email, effect: external}
    provenance: {/to: [inferred]}
    verified: [/to]
    expect: allow
  - name: agent email without declaration
    tool: {name: send_email, effect: external}
    provenance: {/to: [user]}
    declaration: missing
    expect: require_review
  - name: agent email declared
    tool: {name: send_email, effect: external}
    provenance: {/to: [user]}
    declaration: verified
    expect: allow
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "policy", "test", file)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{
		"model refund                     refund      block           no-model-refunds        refunds are never computed by a model (argument /amount comes from inferred)",
		"user email                       send_email  allow           -",
		"agent email without declaration  send_email  require_review  undeclared-side-effect  a side effect a model chose needs a declaration whose facts the run confirms (the model declared nothing for this call; tool send_email has effect external)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// a wrong expectation fails the command and says which case.
	if err := os.WriteFile(file, []byte(strings.Replace(src, "expect: block", "expect: allow", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = cli(t, "policy", "test", file)
	if code != exitRunFailed || !strings.Contains(out, "block (want allow)") || !strings.Contains(stderr, "1 of 6 cases got another verdict than expected: model refund") {
		t.Errorf("exit %d, out %s, stderr %s", code, out, stderr)
	}
	// a bad file: located problems, nothing decided.
	if err := os.WriteFile(file, []byte("cases:\n  - {tool: {name: x, effect: explode}, provenance: {to: [model]}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, "policy", "test", file)
	if code != exitUsage || !strings.Contains(stderr, `policy_test.yaml:2:30: case 1: effect must be none, read, write, external or destructive, not "explode"`) ||
		!strings.Contains(stderr, `case 1: provenance key "to" must be a JSON pointer`) {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// TestPlanRunHonoursThePolicy: rein plan run passes every plan step
// through the rein.yaml policy: an argument the planner wrote is inferred,
// verified when a field an earlier step's tool verifies (verifies:) holds
// it; a $ref carries its tool's origin.
func TestPlanRunHonoursThePolicy(t *testing.T) {
	t.Parallel()
	dir := planDir(t)
	cfg := filepath.Join(dir, "rein.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	policy := "policy:\n  rules:\n    - {name: no-model-briefs, tools: [write_brief], provenance: [inferred], unverified: true, verdict: block, reason: briefs quote tool results only}\n"
	if err := os.WriteFile(cfg, append(b, policy...), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := cli(t, "plan", "run", filepath.Join(dir, "good.json")); code != exitOK {
		t.Fatalf("a plan whose brief reads only tool results: exit %d\n%s%s", code, out, stderr)
	}
	typed := `{"goal": "brief", "steps": [
   {"id": "weather", "tool": "read_weather", "args": {"city": "Tokyo"}},
   {"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}},
   {"id": "brief", "tool": "write_brief", "args": {"city": "Tokyo", "fahrenheit": {"$ref": "convert.fahrenheit"}}}]}`
	plan := filepath.Join(dir, "typed.json")
	if err := os.WriteFile(plan, []byte(typed), 0o600); err != nil {
		t.Fatal(err)
	}
	// Tokyo is what read_weather returned in its city field, which it
	// verifies: the literal is verified.
	if code, out, stderr := cli(t, "plan", "run", plan); code != exitOK {
		t.Fatalf("a brief with a city the weather read returned: exit %d\n%s%s", code, out, stderr)
	}
	if err := os.WriteFile(plan, []byte(strings.Replace(typed, `"city": "Tokyo", "fahrenheit"`, `"city": "Osaka", "fahrenheit"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "plan", "run", plan)
	if code != exitRunFailed || !strings.Contains(out+stderr, "policy gate: block on tool write_brief by rule no-model-briefs: briefs quote tool results only (argument /city comes from inferred; no tool result of this run confirms it)") {
		t.Fatalf("a brief with a city the planner wrote: exit %d\n%s%s", code, out, stderr)
	}
}
