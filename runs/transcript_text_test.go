package runs

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
)

// TestClip: one line, at most n bytes, never half a rune.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"two\nlines", 20, "two lines"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is 2 bytes: byte 2 is inside it
		{"日本語", 4, "日…"},
	} {
		if got := Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestWriteTranscript: each turn with its tokens and the text it wrote
// beside its calls, each call with args, status, observation and why it
// waits, a person's decision under the call it decided, a plan run's
// steps, then the answer.
func TestWriteTranscript(t *testing.T) {
	turns := []agent.Turn{
		{N: 1, Text: "Checking.", Usage: model.Usage{In: 10, Out: 2}, Calls: []agent.Call{
			{Index: 1, Tool: "refund", Args: `{"id":1}`, Status: agent.StatusOK, Observation: `"done"`},
			{Index: 2, Tool: "execute_plan", Args: `{}`, Status: agent.StatusOK, PlanRun: &agent.PlanRun{Status: "succeeded", Executed: 1, MaxSteps: 5,
				Steps: []agent.PlanRunStep{{ID: "a", Tool: "lookup", Status: "succeeded"}}}},
		}},
		{N: 2, Final: true, Text: "Refunded.", Usage: model.Usage{In: 20, Out: 3}},
	}
	var b strings.Builder
	WriteTranscript(&b, "  ", turns, map[string]agent.Decision{agent.Ref(1, 1): {Verdict: agent.Approve, Comment: "ok by me"}})
	want := `  turn 1 (tokens 10/2): Checking.
    call 1 refund {"id":1} -> ok: "done"
      decided: approve (ok by me)
    call 2 execute_plan {} -> ok
      plan succeeded: 1 of max_steps 5 tool calls
        a lookup -> succeeded
  turn 2 (tokens 20/3): answer Refunded.
`
	if b.String() != want {
		t.Errorf("wrote\n%s\nwant\n%s", b.String(), want)
	}
}
