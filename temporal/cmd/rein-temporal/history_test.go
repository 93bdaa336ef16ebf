package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/temporal"
)

// TestEffectsUsage: rein runs effects --temporal refuses a wrong command
// line with exit 2 and what to give, before dialling anything.
func TestEffectsUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		errHas string
	}{
		{[]string{"runs", "effects", "--temporal", "h:1"}, "rein runs effects --temporal takes RUN"},
		{[]string{"runs", "effects", "r1", "r2", "--temporal", "h:1"}, "takes RUN"},
		{[]string{"runs", "effects", "r1", "--temporal", "h:1", "-o", "dot"}, "-o dot: give text or json"},
		{[]string{"runs", "effects", "r1"}, "--temporal HOSTPORT is required"},
		{[]string{"runs", "effects", "r1", "--temporal", "h:1", "--from", "x"}, "flag provided but not defined: -from"},
		{[]string{"runs", "why", "r1", "--temporal", "h:1"}, "effects, trace and prune do"},
		{[]string{"runs", "trace", "--temporal", "h:1"}, "rein runs trace --temporal takes RUN"},
		{[]string{"runs", "trace", "r1", "--temporal", "h:1", "--jsonl"}, "flag provided but not defined: -jsonl"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.errHas) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), exitUsage, c.errHas)
		}
		if out.Len() != 0 {
			t.Errorf("%q: stdout %q, want none", c.args, out.String())
		}
	}
}

// TestWriteEffectsAndSessions: the text of rein runs effects and of a
// transcript: each call's key, tool, effect, status and saga state, a call
// whose tool is not known yet as ?, the remediations; each turn, its calls
// with their status and the person's decision, the answer.
func TestWriteEffectsAndSessions(t *testing.T) {
	v := &temporal.EffectsView{RunID: "r", Flow: "saga", Status: "failed", Calls: []temporal.EffectCall{
		{EffectCall: runs.EffectCall{Effect: journal.Effect{StepID: "take", Key: "r/take/1", Attempt: 1, Tool: "charge", Effect: "external", Reversibility: "compensatable", Outcome: "ok",
			Compensation: &journal.Compensation{Kind: "compensate", Tool: "refund", Args: []byte(`{"amount":5}`)}}, State: "done"}, Status: temporal.CallSucceeded, Activity: "tool:take"},
		{EffectCall: runs.EffectCall{Effect: journal.Effect{StepID: "ship", Key: "r/ship/1", Attempt: 2}}, Status: temporal.CallDispatched, Activity: "tool:ship"},
	}, Remediations: []journal.Remediation{{Key: "r/take/1", Action: "compensate", Tool: "charge", Status: "failed", Error: "declined"}}}
	var b bytes.Buffer
	writeEffects(&b, v)
	for _, want := range []string{"run r (saga, failed): 2 calls with an effect\n", "r/take/1 charge external compensatable succeeded [done]\n",
		"  step take, attempt 1, activity tool:take\n", `  compensate: refund {"amount":5}`, "r/ship/1 ? ? dispatched\n",
		"remediations:\n  r/take/1 compensate charge: failed\n    error: declined\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	writeSessions(&b, []temporal.AgentSession{{Step: "agent", Attempt: 1, Turns: []agent.Turn{
		{N: 1, Calls: []agent.Call{{Index: 1, Tool: "pay", Args: `{"n":5}`, Status: agent.StatusOK, Observation: `{"paid":5}`}}},
		{N: 2, Text: "paid 5", Final: true},
	}, Decisions: map[string]agent.Decision{"turn1/call1": {Verdict: agent.Approve, Comment: "fine"}}}})
	want := "transcript of agent:\n  turn 1 (tokens 0/0)\n    call 1 pay {\"n\":5} -> ok: {\"paid\":5}\n      decided: approve (fine)\n  turn 2 (tokens 0/0): answer paid 5\n"
	if b.String() != want {
		t.Errorf("transcript\n%s\nwant\n%s", b.String(), want)
	}
}
