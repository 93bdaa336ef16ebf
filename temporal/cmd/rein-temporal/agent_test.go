package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/temporal"
)

// TestAgentUsage: rein agent --temporal checks its command line before it
// dials: a folder without agent.yaml, a missing task, an empty one and a
// missing --temporal are usage errors (exit 2) that say what is wrong.
func TestAgentUsage(t *testing.T) {
	agentDir := filepath.Join("..", "..", "..", "examples", "support-agent")
	flowDir := filepath.Join("..", "..", "testdata", "flows", "approve")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", flowDir, "task", "--temporal", "127.0.0.1:1"}, "holds no agent.yaml"},
		{[]string{"agent", agentDir, "--temporal", "127.0.0.1:1"}, "takes an agent folder and a task"},
		{[]string{"agent", agentDir, "", "--temporal", "127.0.0.1:1"}, "the task is empty"},
		{[]string{"agent", agentDir, "refund order 1042"}, "--temporal HOSTPORT is required"},
	} {
		var out, errs bytes.Buffer
		code := Main(context.Background(), tc.args, &out, &errs)
		if code != exitUsage || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs.String(), exitUsage, tc.want)
		}
	}
}

// TestFoldersAgents: rein worker --temporal serves agent folders as it
// does flow folders, found in a folder of them too.
func TestFoldersAgents(t *testing.T) {
	examples := filepath.Join("..", "..", "..", "examples")
	got := folders([]string{examples})
	if !contains(got, filepath.Join(examples, "support-agent")) || !contains(got, filepath.Join(examples, "resume-screen")) {
		t.Errorf("folders of examples/: %v", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if filepath.Clean(x) == filepath.Clean(s) {
			return true
		}
	}
	return false
}

// TestLiveCalls: rein agent --temporal prints a turn's text once and each
// call once it settles, as a local rein agent does ("  -> tool args ->
// status: observation"), again when its status changed (it waited for a
// person, then ran), never a call only chosen or the final turn (the
// answer is printed after the conversation); a new attempt's turns are
// new.
func TestLiveCalls(t *testing.T) {
	var out bytes.Buffer
	l := &liveCalls{w: &out, shown: map[string]agent.CallStatus{}, said: map[string]bool{}}
	lookup := agent.Call{Index: 1, Tool: "lookup", Args: `{"id":1}`, Status: agent.StatusOK, Observation: `{"total":5}`}
	refund := agent.Call{Index: 2, Tool: "refund", Args: `{"id":1}`, Status: agent.StatusChosen}
	s := &temporal.AgentSession{Step: "agent", Attempt: 1, Turns: []agent.Turn{{N: 1, Text: "Looking it up.", Calls: []agent.Call{lookup, refund}}}}
	l.show(s)
	l.show(s) // a poll that found nothing new
	s.Turns[0].Calls[1].Status, s.Turns[0].Calls[1].Reason = agent.StatusWaiting, "policy asks a person"
	l.show(s)
	s.Turns[0].Calls[1].Status, s.Turns[0].Calls[1].Reason, s.Turns[0].Calls[1].Observation = agent.StatusOK, "", `"refunded"`
	s.Turns = append(s.Turns, agent.Turn{N: 2, Final: true, Text: "Refunded."})
	l.show(s)
	l.show(&temporal.AgentSession{Step: "agent", Attempt: 2, Turns: []agent.Turn{{N: 1, Calls: []agent.Call{lookup}}}})
	want := "Looking it up.\n" +
		"  -> lookup {\"id\":1} -> ok: {\"total\":5}\n" +
		"  -> refund {\"id\":1} -> waiting (policy asks a person)\n" +
		"  -> refund {\"id\":1} -> ok: \"refunded\"\n" +
		"  -> lookup {\"id\":1} -> ok: {\"total\":5}\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
