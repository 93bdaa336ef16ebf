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

// TestValueRulesInARun: in a real durable run, an allow rule whose when:
// reads the args lets the model-driven write through (the rule before it
// would park it), and a log-only rule's decision is journaled with the
// call and shown by rein runs show, without stopping anything.
func TestValueRulesInARun(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "gated")
	writeFile(t, filepath.Join(fx.dir, "rein.yaml"), `policy:
  rules:
    - {name: approve-model-writes, provenance: [inferred], effects: [write], verdict: require_approval}
    - {name: notices-are-fine, tools: [record], when: 'args.kind == "notice"', verdict: allow, reason: a notice changes nothing}
    - {name: watch-inferred-to, provenance: {/to: [inferred]}, verdict: block, enforce: false, reason: watching}
tools:
  record:
    description: Appends the step and its idempotency key to calls.log.
    command: ["sh", "-c", "echo \"$REIN_STEP_ID $REIN_IDEMPOTENCY_KEY\" >> calls.log; echo '{\"recorded\": true}'"]
    effect: write
`)
	res := fx.run(exitOK, `{"customer": "c-42"}`)
	if calls := fx.calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "notify") {
		t.Fatalf("calls: %v (the allow rule should let the notice through)", calls)
	}
	code, out, stderr := fx.cli("runs", "show", res.RunID)
	if code != exitOK || !strings.Contains(out, "notify attempt=1 tool record: log-only block (not applied), rule watch-inferred-to: watching (argument /to comes from inferred)") ||
		!strings.Contains(out, "1 log-only rule held (enforce: false)") {
		t.Fatalf("runs show: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = fx.cli("runs", "show", res.RunID, "-o", "json")
	if code != exitOK || !strings.Contains(out, `"log_only"`) {
		t.Errorf("runs show -o json lacks log_only:\n%s", out)
	}
}

// TestExampleRefundPolicy walks examples/refund-policy's README: its
// policy test passes against its own rein.yaml; a large refund waits for
// a person and is sent once when approved; a small one runs; a huge one
// is blocked; the watched rule shows in rein runs show.
func TestExampleRefundPolicy(t *testing.T) {
	outbox := t.TempDir()
	t.Setenv("REIN_OUTBOX", outbox)
	ex := filepath.Join("..", "..", "examples", "refund-policy")
	if code, out, stderr := cli(t, "policy", "test", filepath.Join(ex, "policy_test.yaml")); code != exitOK || !strings.Contains(out, "log-only require_approval (not applied)  watch-medium-refunds") {
		t.Fatalf("policy test: exit %d\n%s\n%s", code, out, stderr)
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	run := func(want int, input string) string {
		t.Helper()
		code, out, stderr := cli(t, "run", ex, "--db", db, "--input-json", input, "-o", "json")
		if code != want {
			t.Fatalf("run %s: exit %d, want %d\n%s\n%s", input, code, want, out, stderr)
		}
		var res durableResult
		decodeOne(t, out, &res)
		return res.RunID
	}
	sent := func() int {
		t.Helper()
		es, err := os.ReadDir(outbox)
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	large := run(exitWaiting, `{"order": "A-1042", "amount": 240, "reason": "arrived broken"}`)
	if n := sent(); n != 0 {
		t.Fatalf("%d refunds sent before the approval", n)
	}
	if code, out, stderr := cli(t, "runs", "approve", large, "refund", "--db", db); code != exitOK || sent() != 1 {
		t.Fatalf("approve: exit %d, %d sent\n%s\n%s", code, sent(), out, stderr)
	}
	code, out, _ := cli(t, "runs", "show", large, "--db", db)
	if code != exitOK || !strings.Contains(out, "log-only require_approval (not applied), rule watch-medium-refunds") {
		t.Errorf("runs show lacks the watched rule:\n%s", out)
	}
	run(exitOK, `{"order": "B-7", "amount": 20, "reason": "late"}`)
	if n := sent(); n != 2 {
		t.Fatalf("%d refunds sent, want 2", n)
	}
	run(exitRunFailed, `{"order": "B-7", "amount": 9000, "reason": "late"}`)
	if n := sent(); n != 2 {
		t.Fatalf("the huge refund was sent (%d)", n)
	}
}
