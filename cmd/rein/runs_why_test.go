package main

import (
	"strings"
	"testing"
)

// TestGatedRunWaitsAndExplains: with rein.yaml policy: {defaults: true}, a
// write driven by a model's output waits for a person, the approval says
// which rule and why, rein runs why shows each argument's origin, and
// approving makes the call.
func TestGatedRunWaitsAndExplains(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "gated")
	res := fx.run(exitWaiting, `{"customer": "c-42"}`)
	if len(fx.calls()) != 0 {
		t.Fatal("the write ran before its approval")
	}
	code, out, stderr := fx.cli("runs", "show", res.RunID)
	if code != exitOK || !strings.Contains(out, "gate:\n  notify attempt=1 tool record: require_approval, rule inferred-drives-effect: ") ||
		!strings.Contains(out, "argument /to comes from inferred") ||
		!strings.Contains(out, "risk tier: 3\n  0 → 2 at intake\n    effect: tool record has effect write (tier 2)\n    premise uncertainty: 1 of 2 arguments driving side effects were written by a model (tier 2)\n  2 → 3 at call notify tool record\n    premise uncertainty: 1 of 2 arguments driving side effects were written by a model and no tool result verified them (tier 3)\n") {
		t.Fatalf("runs show: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = fx.cli("runs", "why", res.RunID, "notify")
	for _, want := range []string{
		"step notify of run " + res.RunID + " calls tool record",
		"/about  user      from {input.customer}",
		"/to     inferred  from {pick.to}",
		"arguments not listed are text of the flow",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("runs why lacks %q: exit %d\n%s\n%s", want, code, out, stderr)
		}
	}
	if code, _, stderr = fx.cli("runs", "why", res.RunID, "pick"); code != exitRunFailed || !strings.Contains(stderr, "step pick of run "+res.RunID+" is of type llm") ||
		!strings.Contains(stderr, "its steps that call tools: notify") {
		t.Errorf("runs why on an llm step: exit %d\n%s", code, stderr)
	}
	if code, out, stderr = fx.cli("runs", "approve", res.RunID, "notify"); code != exitOK {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	if calls := fx.calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "notify") {
		t.Fatalf("calls after the approval: %v", calls)
	}
}

// TestVerifiedRunExplains: the model's recipient is what a read returned,
// so the default gate lets the write run, and rein runs why names the
// tool result that verified it.
func TestVerifiedRunExplains(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "verified")
	res := fx.run(exitOK, `{"customer": "c-42"}`)
	if calls := fx.calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "notify") {
		t.Fatalf("calls: %v", calls)
	}
	code, out, stderr := fx.cli("runs", "why", res.RunID, "notify")
	for _, want := range []string{
		"/to     inferred  from {pick.to}",
		"/to verified by the output of tool lookup_owner (step owner) at /owner",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("runs why lacks %q: exit %d\n%s\n%s", want, code, out, stderr)
		}
	}
}
