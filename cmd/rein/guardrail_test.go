package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardrailShownByRunsWhy: examples/support-chat's input guardrail
// stops a message holding a card number before any model call, and rein
// runs why names the guardrail, its side and why, without the number.
func TestGuardrailShownByRunsWhy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "chat", "../../examples/support-chat", "--session", "g", "--db", db, "--message", "My card is 4111 1111 1111 1111")
	if code != exitRunFailed || !strings.Contains(stderr+out, "input guardrail no_card_numbers tripped") {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "runs", "why", "last", "agent", "--db", db)
	if code != exitOK || !strings.Contains(out, "was stopped by a guardrail: agent: input guardrail no_card_numbers tripped on the task") ||
		strings.Contains(out, "4111") {
		t.Fatalf("runs why: exit %d\n%s\n%s", code, out, stderr)
	}
}
