package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// TestApprovalIsBoundToItsArgs: the pending call names its args' digest
// and who asked; an approval given for other args is refused with a
// policy error naming both digests, and nothing runs.
func TestApprovalIsBoundToItsArgs(t *testing.T) {
	t.Parallel()
	c, _, l, j := approvalSetup(t)
	res, err := l.Run(context.Background(), &agent.Session{Task: "charged twice"})
	if err != nil || len(res.Pending) != 1 {
		t.Fatal(res, err)
	}
	p := res.Pending[0]
	want := value.Digest([]byte(`{"order":"1042"}`))
	if p.ArgsSHA != want || !strings.Contains(p.Rule, "approval: required") {
		t.Fatalf("pending %+v: want args_sha256 %s and the rule", p, want)
	}
	s := j.session("charged twice")
	s.Decisions = map[string]agent.Decision{p.Ref: {Verdict: agent.Approve, ID: "a1", Args: `{"order":"9999"}`}}
	_, err = l.Run(context.Background(), s)
	other := value.Digest([]byte(`{"order":"9999"}`))
	if fault.ClassOf(err) != fault.Policy || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), other) {
		t.Fatalf("err %v: want a policy error naming %s and %s", err, want, other)
	}
	if c.n.Load() != 1 {
		t.Errorf("%d calls: the refund ran on an approval of other args", c.n.Load())
	}
}

// TestApprovalIsUsedOnce: an approved call is journaled dispatched, with
// the approval it used, before it runs. A resume from the journal as it
// stood while the call ran (the process died there) finds it unknown,
// however often it is resumed with the same approval (by id, or a
// decision without one); a new decision runs it again, once.
func TestApprovalIsUsedOnce(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a1", ""} {
		var c counted
		j := &journal{}
		var during *agent.Session // the journal while the refund runs
		refund := c.tool("refund", tool.EffectWrite, false, func(any) (any, error) {
			if during == nil {
				during = j.session("charged twice")
			}
			return "refunded", nil
		})
		m := &turns{replies: []func(*model.Request) *model.Response{
			callsReply(tc("b", "refund", `{"order":"1042"}`)),
			textReply("done"),
			textReply("done"), // the run after the second decision
		}}
		l := newLoop(t, agent.Config{Model: m, Journal: j, RunID: "r", StepID: "agent", Attempt: 1,
			Tools: []agent.Tool{{Tool: refund, Approval: true}}})
		if _, err := l.Run(context.Background(), &agent.Session{Task: "charged twice"}); err != nil {
			t.Fatal(err)
		}
		s := j.session("charged twice")
		s.Decisions = map[string]agent.Decision{"turn1/call1": {Verdict: agent.Approve, ID: id, Args: `{"order":"1042"}`}}
		if _, err := l.Run(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if during == nil || c.n.Load() != 1 {
			t.Fatalf("id %q: the approved refund ran %d times", id, c.n.Load())
		}
		if d := during.Turns[0].Calls[0]; d.Status != agent.StatusChosen || len(d.Consumed) != 1 || d.Consumed[0].ID != id || d.ArgsSHA == "" {
			t.Fatalf("id %q: while it ran the journal held %+v: want it chosen, with the approval used", id, d)
		}
		resume := func(ds map[string]agent.Decision) (*agent.Result, error) {
			again := *during
			again.Turns = append([]agent.Turn(nil), during.Turns...)
			again.Turns[0].Calls = append([]agent.Call(nil), during.Turns[0].Calls...)
			again.Decisions = ds
			return l.Run(context.Background(), &again)
		}
		for range 2 {
			res, err := resume(s.Decisions)
			if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Kind != "unknown" {
				t.Fatalf("id %q: resumed: %+v %v; want the refund unknown", id, res, err)
			}
			if c.n.Load() != 1 {
				t.Fatalf("id %q: the refund ran %d times: its approval counted twice", id, c.n.Load())
			}
		}
		// a person decides anew: it runs again, once.
		res, err := resume(map[string]agent.Decision{"turn1/call1": {Verdict: agent.Approve, ID: "a2", Args: `{"order":"1042"}`}})
		if err != nil || res.Status != agent.StatusAnswered || c.n.Load() != 2 {
			t.Fatalf("id %q: %+v %v, %d runs; want answered after a second run", id, res, err, c.n.Load())
		}
	}
}

// TestApprovedIdempotentCallRunsAgainWithItsKey: an approved call whose
// tool is idempotent, found dispatched without an outcome, runs again with
// the same key under the approval it used (the same execution), without
// asking a person again.
func TestApprovedIdempotentCallRunsAgainWithItsKey(t *testing.T) {
	t.Parallel()
	var c counted
	j := &journal{}
	var during *agent.Session
	reship := c.tool("reship", tool.EffectWrite, true, func(any) (any, error) {
		if during == nil {
			during = j.session("ship it")
		}
		return "shipped", nil
	})
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("b", "reship", `{"order":"1042"}`)),
		textReply("done"),
		textReply("done"),
	}}
	l := newLoop(t, agent.Config{Model: m, Journal: j, RunID: "r", StepID: "agent", Attempt: 1,
		Tools: []agent.Tool{{Tool: reship, Approval: true}}})
	if _, err := l.Run(context.Background(), &agent.Session{Task: "ship it"}); err != nil {
		t.Fatal(err)
	}
	s := j.session("ship it")
	s.Decisions = map[string]agent.Decision{"turn1/call1": {Verdict: agent.Approve, ID: "a1", Args: `{"order":"1042"}`}}
	if _, err := l.Run(context.Background(), s); err != nil || during == nil {
		t.Fatal(err)
	}
	during.Decisions = s.Decisions
	res, err := l.Run(context.Background(), during)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("%+v %v: want it answered, the reship run again unasked", res, err)
	}
	if c.n.Load() != 2 || c.keys[0] != c.keys[1] || c.keys[0] != "r/agent/1/turn1/call1" {
		t.Fatalf("%d runs with keys %v: want two with the same key", c.n.Load(), c.keys)
	}
}
