//go:build temporalserver

package servertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
)

// agentOfTurns writes and loads an agent flow whose model makes turns-1
// turns of one call each (to ok, with about 300 bytes of arguments; at
// turn pay, if any, to pay, which needs approval) and then answers "done
// after <turns> turns".
func agentOfTurns(t *testing.T, l *ledger, name string, turns, pay int) *project.Project {
	t.Helper()
	var script strings.Builder
	script.WriteString("replies:\n")
	note := strings.Repeat("x", 300)
	for k := 1; k < turns; k++ {
		if k == pay {
			fmt.Fprintf(&script, "  - {step: agent, decision: agent, turn: %d, tool_calls: [{name: pay, args: {amount: 5}}]}\n", k)
			continue
		}
		fmt.Fprintf(&script, "  - {step: agent, decision: agent, turn: %d, tool_calls: [{name: ok, args: {n: %d, note: %q}}]}\n", k, k, note)
	}
	fmt.Fprintf(&script, "  - {step: agent, decision: agent, turn: %d, raw: \"done after %d turns\"}\n", turns, turns)
	flow := fmt.Sprintf(`name: %s
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: agent
    type: agent
    model: m
    instructions: Look everything up, then answer.
    prompt_template: "{input.task}"
    budgets: {max_turns: %d, max_tool_calls: %d}
    tools: {ok: , pay: {approval: required}}
`, name, turns+1, turns+1)
	dir := t.TempDir()
	for file, text := range map[string]string{"flow.yaml": flow, "script.yaml": script.String()} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Load(dir, &project.LoadOptions{Tools: l.tools(false)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// historySize is run id's history: its events and their bytes.
func historySize(t *testing.T, c client.Client, id string) (events, bytes int) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		bytes += proto.Size(ev)
		events++
	}
	return events, bytes
}

// runTurns starts an agent run of p as id, follows it and checks that it
// answered after turns turns, each call made once with its key.
func runTurns(t *testing.T, c client.Client, l *ledger, p *project.Project, id string, turns int) {
	t.Helper()
	if _, err := temporal.StartRun(context.Background(), c, p, map[string]any{"task": "look up"}, temporal.StartOptions{RunID: id, TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	answered(t, c, l, id, turns, 0)
}

// answered follows run id and checks that it answered after turns turns,
// each call made once with its key (pay's at turn pay, if any).
func answered(t *testing.T, c client.Client, l *ledger, id string, turns, pay int) {
	t.Helper()
	st := follow(t, c, id)
	if want := fmt.Sprintf(`"done after %d turns"`, turns); st.Status != "succeeded" || string(st.Outputs["agent"]) != want {
		t.Fatalf("run %s: %s %+v, output %s, want %s", id, st.Status, st.Error, st.Outputs["agent"], want)
	}
	seen := map[string]bool{}
	for _, ln := range append(l.lines("ok"), l.lines("pay")...) {
		if key, _, _ := strings.Cut(ln, " "); strings.HasPrefix(key, id+"/") {
			if seen[key] {
				t.Errorf("call %s made twice", key)
			}
			seen[key] = true
		}
	}
	for k := 1; k < turns; k++ {
		if key := fmt.Sprintf("%s/agent/1/turn%d/call1", id, k); !seen[key] {
			t.Errorf("call %s not made (made: %v)", key, seen)
		}
	}
	if len(seen) != turns-1 {
		t.Errorf("%d calls made, want %d", len(seen), turns-1)
	}
}

// TestAgentHistoryGrowth measures the history of agent runs of 10 and 40
// turns: each unit's input carries the session's last turn (and a digest
// of the rest), so the history grows with the turns, not with their
// square.
func TestAgentHistoryGrowth(t *testing.T) {
	ts := server(t)
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	c := ts.GetDefaultClient()
	p10, p40 := agentOfTurns(t, l, "turns10", 10, 0), agentOfTurns(t, l, "turns40", 40, 0)
	fs := temporal.NewFlows()
	fs.Add(p10)
	fs.Add(p40)
	ts.NewWorkerWithOptions(queue, register(fs), worker.Options{})
	runTurns(t, c, l, p10, "run-turns10", 10)
	runTurns(t, c, l, p40, "run-turns40", 40)
	e10, b10 := historySize(t, c, "run-turns10")
	e40, b40 := historySize(t, c, "run-turns40")
	t.Logf("agent run of 10 turns: %d events, %d bytes; of 40 turns: %d events, %d bytes", e10, b10, e40, b40)
	// linear: 4 times the turns make at most 5 times the bytes (the
	// session whole in every unit made 12 times and more).
	if b40 > 5*b10 {
		t.Errorf("history of 40 turns is %d bytes, %.1f times that of 10 (%d): it grows faster than the turns", b40, float64(b40)/float64(b10), b10)
	}
}

// TestAgentSessionAcrossWorkers: a worker that keeps no session gets each
// unit's from the run's workflow (the query agent-session, through its
// client), and the run ends as it would. Then a run's units land on two
// workers that keep sessions: the first makes them until the run waits for
// an approval and stops; the second, which has never seen the session,
// asks the workflow once, makes the rest, and the run ends right. Every
// unit's input but the first ones carries one turn.
func TestAgentSessionAcrossWorkers(t *testing.T) {
	ts := server(t)
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	c := ts.GetDefaultClient()
	p1, p2 := agentOfTurns(t, l, "forgetful", 12, 0), load(t, "handover", l)
	fs := temporal.NewFlows()
	fs.Add(p1)
	fs.Add(p2)
	var forgetful, first, second counts
	w := ts.NewWorkerWithOptions(queue, sessionWorker(fs, c, -1, &forgetful), worker.Options{})
	runTurns(t, c, l, p1, "run-forgetful", 12)
	if n, q := forgetful.units.Load(), forgetful.queries.Load(); n != 23 || q != 20 {
		t.Errorf("the worker that keeps nothing ran %d units and asked %d times, want 23 (12 turns, 11 calls) and 20 (all but the first three)", n, q)
	}
	checkByReference(t, c, "run-forgetful")
	w.Stop()

	w = ts.NewWorkerWithOptions(queue, sessionWorker(fs, c, 0, &first), worker.Options{})
	ctx := context.Background()
	if _, err := temporal.StartRun(ctx, c, p2, map[string]any{"task": "look up"}, temporal.StartOptions{RunID: "run-handover", TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, "run-handover"); st.Status != "waiting" {
		t.Fatalf("run: %+v", st)
	}
	w.Stop()
	ts.NewWorkerWithOptions(queue, sessionWorker(fs, c, 0, &second), worker.Options{})
	if err := temporal.Decide(ctx, c, "run-handover", temporal.Decision{Step: "agent/turn4/call1", Action: temporal.ActionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	answered(t, c, l, "run-handover", 8, 4)
	t.Logf("handover: the first worker ran %d units and asked %d times, the second %d and %d", first.units.Load(), first.queries.Load(), second.units.Load(), second.queries.Load())
	if first.units.Load() != 8 || first.queries.Load() != 0 || second.units.Load() != 8 || second.queries.Load() != 1 {
		t.Errorf("units (queries): first worker %d (%d), want 8 (0); second %d (%d), want 8 (1)", first.units.Load(), first.queries.Load(), second.units.Load(), second.queries.Load())
	}
	checkByReference(t, c, "run-handover")
	saveHistory(t, c, "run-handover")
}

// checkByReference checks that every agent unit of run id after the first
// was given its session by reference: one turn, the rest by digest.
func checkByReference(t *testing.T, c client.Client, id string) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	units := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a == nil || len(a.GetInput().GetPayloads()) != 1 {
			continue
		}
		var in struct {
			Agent *struct {
				Since  int               `json:"since"`
				Digest string            `json:"digest"`
				Turns  []json.RawMessage `json:"turns"`
			} `json:"agent"`
		}
		if err := json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in); err != nil || in.Agent == nil {
			continue
		}
		units++
		if units > 3 && (in.Agent.Since == 0 || in.Agent.Digest == "" || len(in.Agent.Turns) != 1) {
			t.Errorf("unit %d (%s): since %d, digest %q, %d turns: the session went whole", units, a.GetActivityId(), in.Agent.Since, in.Agent.Digest, len(in.Agent.Turns))
		}
	}
	if units < 14 {
		t.Errorf("%d agent units in the history of %s", units, id)
	}
}

// counts are a worker's activities and its queries agent-session.
type counts struct{ units, queries atomic.Int64 }

// countingClient is a client that counts its queries agent-session.
type countingClient struct {
	client.Client
	n *counts
}

func (c countingClient) QueryWorkflow(ctx context.Context, workflowID, runID, query string, args ...any) (converter.EncodedValue, error) {
	if query == temporal.QueryAgentSession {
		c.n.queries.Add(1)
	}
	return c.Client.QueryWorkflow(ctx, workflowID, runID, query, args...)
}

// sessionWorker registers a worker of fs whose activities keep keep bytes
// of sessions (-1: none) and ask c for the others, counting its
// activities and queries in n.
func sessionWorker(fs *temporal.Flows, c client.Client, keep int64, n *counts) func(worker.Registry) {
	return func(r worker.Registry) {
		a := &temporal.Activities{Flows: fs, Heartbeat: beat, Client: countingClient{Client: c, n: n}, SessionBytes: keep}
		temporal.RegisterWorkflow(r, &temporal.Workflow{Flows: fs, Heartbeat: beat})
		r.RegisterDynamicActivity(func(ctx context.Context, args converter.EncodedValues) (any, error) {
			n.units.Add(1)
			out, err := a.Run(ctx, args)
			return out, err
		}, activity.DynamicRegisterOptions{})
	}
}
