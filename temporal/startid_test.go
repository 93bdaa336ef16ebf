package temporal

import (
	"errors"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
)

// TestStartID: a flow's idempotency: keys its Temporal run as it keys a
// local start: the same input (in any key order) is the same workflow
// id, another input or session another; a session policy without a
// session is ErrSessionRequired; --run-id wins; no policy, no id (a new
// UUIDv7 at the start).
func TestStartID(t *testing.T) {
	const steps = "steps:\n  - {id: a, type: tool, tool: t}\n"
	byInput := load(t, "name: keyed\nidempotency: input_hash\n"+steps, newLedger().tool("t", true))
	bySession := load(t, "name: keyed\nidempotency: session_workflow_input_hash\n"+steps, newLedger().tool("t", true))
	plain := load(t, "name: keyed\n"+steps, newLedger().tool("t", true))

	id := func(p *project.Project, input any, o StartOptions) string {
		t.Helper()
		id, _, err := StartID(p, input, o)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := id(byInput, map[string]any{"x": 1, "y": "z"}, StartOptions{})
	if a == "" || a != id(byInput, map[string]any{"y": "z", "x": 1.0}, StartOptions{}) {
		t.Errorf("the same input: ids %q and another", a)
	}
	if a == id(byInput, map[string]any{"x": 2, "y": "z"}, StartOptions{}) {
		t.Error("another input has the same id")
	}
	if got := id(byInput, map[string]any{"x": 1}, StartOptions{RunID: "mine"}); got != "mine" {
		t.Errorf("--run-id: %q", got)
	}
	if got := id(plain, map[string]any{"x": 1}, StartOptions{}); got != "" {
		t.Errorf("no idempotency: %q, want none (a new run)", got)
	}
	if _, _, err := StartID(bySession, map[string]any{"x": 1}, StartOptions{}); !errors.Is(err, engine.ErrSessionRequired) {
		t.Errorf("a session policy without a session: %v", err)
	}
	s1 := id(bySession, map[string]any{"x": 1}, StartOptions{Session: "s1"})
	if s1 == id(bySession, map[string]any{"x": 1}, StartOptions{Session: "s2"}) || s1 != id(bySession, map[string]any{"x": 1}, StartOptions{Session: "s1"}) {
		t.Error("sessions do not key the run")
	}
}
