package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyTestFromAProject: a policy test decides with the rules of a
// real project (examples/refund's rein.yaml and flow.yaml) instead of
// retyping them, names its tools, reads args with when:, and prints what
// log-only rules would have done.
func TestPolicyTestFromAProject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	project := filepath.Join(dir, "shop")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(project, "rein.yaml"), `tools:
  send_refund:
    command: ["./send.sh"]
    effect: external
    reversibility: irreversible
    tags: [money]
policy:
  defaults: true
  rules:
    - {name: small-refunds, tools: [send_refund], when: "args.amount <= 20", verdict: allow, reason: small refunds need nobody}
    - {name: watch-huge, tools: [send_refund], when: "args.amount > 5000", verdict: block, enforce: false}
`)
	writeFile(t, filepath.Join(project, "flow.yaml"), `name: shop
policy:
  rules:
    - {name: no-inferred-customer, tools: [send_refund], provenance: {/customer: [inferred]}, verdict: block}
steps:
  - {id: x, type: tool, tool: send_refund}
`)
	file := filepath.Join(dir, "cases.yaml")
	writeFile(t, file, `from: shop
cases:
  - name: small
    tool: send_refund
    args: {customer: c1, amount: 10}
    provenance: {/amount: [inferred], /customer: [user]}
    expect: allow
  - name: huge
    tool: send_refund
    args: {customer: c1, amount: 9000}
    provenance: {/amount: [user], /customer: [user]}
    expect: require_approval
  - name: inferred customer
    tool: send_refund
    args: {customer: c9, amount: 10}
    provenance: {/customer: [inferred]}
    expect: block
`)
	code, out, stderr := cli(t, "policy", "test", file)
	if code != exitOK {
		t.Fatalf("exit %d, out %s, stderr %s", code, out, stderr)
	}
	for _, want := range []string{
		"small-refunds ",
		"small refunds need nobody (when: args.amount <= 20)",
		"money-or-compliance",
		"log-only block (not applied)  watch-huge",
		"no-inferred-customer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// --from works the same from the command line; a tool no source
	// declares is a usage error naming the case.
	writeFile(t, file, `cases:
  - {name: small, tool: send_refund, args: {amount: 10}, provenance: {/amount: [inferred]}, expect: allow}
  - {name: lost, tool: nowhere, expect: allow}
`)
	code, _, stderr = cli(t, "policy", "test", file, "--from", project)
	if code != exitUsage || !strings.Contains(stderr, "lost (tool nowhere)") {
		t.Errorf("unknown tool: exit %d, stderr %s", code, stderr)
	}
	code, _, stderr = cli(t, "policy", "test", file, "--from", filepath.Join(dir, "missing"))
	if code != exitUsage || !strings.Contains(stderr, "--from") {
		t.Errorf("missing source: exit %d, stderr %s", code, stderr)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
