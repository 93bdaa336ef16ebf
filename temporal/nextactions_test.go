package temporal

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
)

// TestNextActionsClosed: the failed run's workflow that closed takes no
// update, so next_actions (asked of the closed workflow) offers no update
// retry: only the retry as a new execution of its workflow id, with the
// command that makes it; a failed run still open (a retry window) offers
// the update retry, with the same command. Neither names the failed step
// as an argument (rein runs retry takes RUN; --from is another retry).
func TestNextActionsClosed(t *testing.T) {
	l := newLedger()
	l.fails["charge"] = failPlan{n: 1, class: fault.Business}
	p := load(t, retryFlow, l.tool("ok", true), l.tool("charge", false), l.tool("audit", false))
	h := newHarness(t, p)
	if st := h.run(map[string]any{}); st.Status != "failed" {
		t.Fatalf("run %+v", st)
	}
	var next []NextAction
	h.query(QueryNextActions, &next)
	if len(next) != 1 {
		t.Fatalf("next_actions of the closed failed run: %+v, want the one retry", next)
	}
	a := next[0]
	if a.Update != "" || a.Action != ActionRetry || a.Step != "charge" || a.Command != "rein runs retry run-1" || !strings.Contains(a.Why, "new execution") {
		t.Errorf("next_actions of the closed failed run: %+v, want no update, the command rein runs retry run-1", a)
	}

	next = nil
	l = newLedger()
	l.fails["charge"] = failPlan{n: 1, class: fault.Business}
	p = load(t, retryFlow, l.tool("ok", true), l.tool("charge", false), l.tool("audit", false))
	open := newHarnessOf(t, p, &Workflow{RetryWindow: 24 * time.Hour})
	open.env.RegisterDelayedCallback(func() { open.query(QueryNextActions, &next) }, time.Hour)
	open.run(map[string]any{})
	if len(next) != 1 || next[0].Update != UpdateRetry || next[0].Command != "rein runs retry run-1" {
		t.Errorf("next_actions of the failed run still open: %+v, want the update retry", next)
	}
}

// TestCommandOf: each action's command line takes the arguments its rein
// command takes.
func TestCommandOf(t *testing.T) {
	for _, c := range []struct {
		a    NextAction
		want string
	}{
		{NextAction{Action: ActionApprove, Step: "pay"}, "rein runs approve R pay"},
		{NextAction{Action: ActionReject, Step: "agent/turn2/call1"}, "rein runs reject R agent/turn2/call1"},
		{NextAction{Action: ActionSettle, Step: "pay"}, "rein runs settle R pay --value JSON"},
		{NextAction{Action: ActionSubmit, Step: "draft"}, "rein runs submit R draft --data JSON"},
		{NextAction{Action: ActionRetry, Step: "charge"}, "rein runs retry R"},
	} {
		if got := commandOf("R", c.a); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.a.Action, c.a.Step, got, c.want)
		}
	}
}
