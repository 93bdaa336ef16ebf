package temporal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

const agentFlow = `name: support
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: agent
    type: agent
    model: m
    instructions: Help with orders.
    prompt_template: "{input.task}"
    tools: {lookup: , refund: {approval: required}}
  - {id: after, tool: lookup, args: {answer: "{agent}"}}
`

const agentScript = `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: lookup, args: {order: "1"}}, {name: lookup, args: {order: "2"}}]}
  - {step: agent, decision: agent, turn: 2, tool_calls: [{name: refund, args: {order: "1", amount: 5}}]}
  - {step: agent, decision: agent, turn: 3, contains: "rejected by a person", raw: "no refund"}
  - {step: agent, decision: agent, turn: 3, raw: "refunded"}
`

// loadAgent writes an agent flow and its model's script to a folder and
// loads it with tools.
func loadAgent(t *testing.T, flowYAML, script string, tools ...tool.Tool) *project.Project {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"flow.yaml": flowYAML, "script.yaml": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Load(dir, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

// lossy runs p in the test environment with activities that lose their
// worker, once each, after the activity of a type in lose did its work:
// the workflow sees a heartbeat timeout, as when a worker dies after its
// call took effect and before it said so.
func lossy(t *testing.T, p *project.Project, lose ...string) (*harness, *sync.Map) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := newTestEnv(&s)
	fs := NewFlows()
	fs.Add(p)
	a := &Activities{Flows: fs}
	RegisterWorkflow(env, &Workflow{Flows: fs})
	var seen sync.Map // activity types run, with how often
	var mu sync.Mutex // activities of one type may run at once (for_each items)
	env.RegisterDynamicActivity(func(ctx context.Context, args converter.EncodedValues) (*attemptOut, error) {
		name := activity.GetInfo(ctx).ActivityType.Name
		n, _ := seen.LoadOrStore(name, new(int))
		mu.Lock()
		*n.(*int)++
		first := *n.(*int) == 1
		mu.Unlock()
		out, err := a.Run(ctx, args)
		for _, l := range lose {
			if l == name && first {
				return nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
			}
		}
		return out, err
	}, activity.DynamicRegisterOptions{})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
	return &harness{t: t, env: env, p: p}, &seen
}

// TestAgentTurns: an agent step runs turn by turn, each model turn and each
// tool call an activity; a call that needs approval parks the run on
// agent/turn2/call1, an update approves it, and it runs once with its
// idempotency key; the step after the agent gets its answer.
func TestAgentTurns(t *testing.T) {
	l := newLedger()
	p := loadAgent(t, agentFlow, agentScript, l.tool("lookup", true), l.tool("refund", false))
	h := newHarness(t, p)
	var early, bad, approve *updated
	h.env.RegisterDelayedCallback(func() {
		var st Status
		h.query(QueryStatus, &st)
		var pend []Pending
		h.query(QueryPending, &pend)
		if st.Status != "waiting" || len(pend) != 1 || pend[0].Step != "agent/turn2/call1" || pend[0].Kind != "approval" {
			t.Errorf("status %s, pending %+v", st.Status, pend)
		}
		if l.count("refund") != 0 || l.count("lookup") != 2 {
			t.Errorf("before the approval: refund %d, lookup %d calls", l.count("refund"), l.count("lookup"))
		}
		var next []NextAction
		h.query(QueryNextActions, &next)
		if len(next) != 2 || next[0].Args.Step != "agent/turn2/call1" || next[0].Action != ActionApprove || next[1].Action != ActionReject {
			t.Errorf("next_actions %+v", next)
		}
		early = h.update(Decision{Step: "agent", Action: ActionApprove})
		bad = h.update(Decision{Step: "agent/turn2/call1", Action: ActionSettle, Output: []byte(`{}`)})
		approve = h.update(Decision{Step: "agent/turn2/call1", Action: ActionApprove, By: "ana"})
	}, time.Minute)
	st := h.run(map[string]any{"task": "refund order 1"})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if early == nil || early.err == nil || !strings.Contains(early.err.Error(), "waits for no decision") {
		t.Errorf("a decision on the step, not its call: %+v", early)
	}
	if bad == nil || bad.err == nil || !strings.Contains(bad.err.Error(), "waits for approval") {
		t.Errorf("settle of a call that waits for approval: %+v", bad)
	}
	if approve == nil || approve.err != nil {
		t.Errorf("approve: %+v", approve)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/agent/1/turn2/call1" {
		t.Errorf("refund calls %v", got)
	}
	if got := l.keys("lookup"); len(got) != 3 || got[0] != "run-1/after/1" || got[1] != "run-1/agent/1/turn1/call1" || got[2] != "run-1/agent/1/turn1/call2" {
		t.Errorf("lookup calls %v", got)
	}
	if got := string(st.Outputs["agent"]); got != `"refunded"` {
		t.Errorf("agent output %s", got)
	}
}

// TestAgentReject: a rejected call does not run; the model is told so and
// answers.
func TestAgentReject(t *testing.T) {
	l := newLedger()
	p := loadAgent(t, agentFlow, agentScript, l.tool("lookup", true), l.tool("refund", false))
	h := newHarness(t, p)
	h.env.RegisterDelayedCallback(func() {
		h.update(Decision{Step: "agent/turn2/call1", Action: ActionReject, Comment: "too much"})
	}, time.Minute)
	st := h.run(map[string]any{"task": "refund order 1"})
	if st.Status != "succeeded" || string(st.Outputs["agent"]) != `"no refund"` || l.count("refund") != 0 {
		t.Fatalf("run: %+v, agent %s, refund %d calls", st, st.Outputs["agent"], l.count("refund"))
	}
}

const checkFlow = `name: doubt
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: agent
    type: agent
    model: m
    prompt_template: "{input.task}"
    tools: {refund: }
  - {id: charge, tool: charge, args: {n: 1}, requires: [agent]}
`

const checkScript = `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: refund, args: {order: "1"}}]}
  - {step: agent, decision: agent, turn: 2, raw: "done"}
`

// checked is l's tool name, not idempotent, with a check: that finds its
// calls by idempotency key in the ledger (happened, with the output
// {"found": key}) and counts how often it was asked.
func checked(l *ledger, name string, asked *int) tool.Tool {
	return tool.WithCheck(l.tool(name, false), func(_ context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		*asked++
		for _, k := range l.calls[name] {
			if k == req.IdempotencyKey {
				return tool.CheckResult{Happened: true, Output: map[string]any{"found": k}}, nil
			}
		}
		return tool.CheckResult{}, nil
	})
}

// TestLostCallCheck: the worker of an agent's call that is not safe to
// repeat, and the worker of a tool step's, are lost after the calls took
// effect: each is reconciled by its tool's check: (which finds it by its
// key) instead of running again or waiting for a person, and each call
// ran once.
func TestLostCallCheck(t *testing.T) {
	l := newLedger()
	var refundAsked, chargeAsked int
	p := loadAgent(t, checkFlow, checkScript, checked(l, "refund", &refundAsked), checked(l, "charge", &chargeAsked))
	h, seen := lossy(t, p, "call:refund", "tool:charge")
	st := h.run(map[string]any{"task": "refund order 1"})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/agent/1/turn1/call1" || refundAsked != 1 {
		t.Errorf("refund calls %v, checks %d", got, refundAsked)
	}
	if got := l.keys("charge"); len(got) != 1 || got[0] != "run-1/charge/1" || chargeAsked != 1 {
		t.Errorf("charge calls %v, checks %d", got, chargeAsked)
	}
	if got := output(t, st, "charge"); got["found"] != "run-1/charge/1" {
		t.Errorf("charge output %v, want the check's", got)
	}
	if n, ok := seen.Load("check:charge"); !ok || *n.(*int) != 1 {
		t.Errorf("check activities: %v", n)
	}
	if string(st.Outputs["agent"]) != `"done"` {
		t.Errorf("agent output %s", st.Outputs["agent"])
	}
}

// TestLostCallNoCheck: a lost call whose tool has no check: waits for a
// person as unknown; approving it runs it again, once, with its key.
func TestLostCallNoCheck(t *testing.T) {
	l := newLedger()
	p := loadAgent(t, checkFlow, checkScript, l.tool("refund", false), l.tool("charge", true))
	h, _ := lossy(t, p, "call:refund")
	var approve *updated
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "agent/turn1/call1" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "neither idempotent nor read-only") {
			t.Errorf("pending %+v", pend)
		}
		approve = h.update(Decision{Step: "agent/turn1/call1", Action: ActionApprove})
	}, time.Minute)
	st := h.run(map[string]any{"task": "refund order 1"})
	if st.Status != "succeeded" || approve == nil || approve.err != nil {
		t.Fatalf("run: %+v %+v, approve %+v", st, st.Error, approve)
	}
	if got := l.keys("refund"); len(got) != 2 || got[0] != got[1] || got[0] != "run-1/agent/1/turn1/call1" {
		t.Errorf("refund calls %v: once lost, once approved, with one key", got)
	}
}

// TestLostStepCheckNotHappened: a tool step whose worker was lost before
// its call took effect: its check: says so, and since nobody approved the
// call the step waits for a person as unknown, told what the check found;
// approving it makes the call (attempt 2), once.
func TestLostStepCheckNotHappened(t *testing.T) {
	l := newLedger()
	var asked int
	never := tool.WithCheck(l.tool("charge", false), func(context.Context, tool.CheckRequest) (tool.CheckResult, error) {
		asked++
		return tool.CheckResult{}, nil
	})
	p := load(t, "name: one\nsteps:\n  - {id: charge, tool: charge, args: {n: 1}}\n", never)
	h, _ := lossy(t, p, "tool:charge")
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "charge" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "did not take effect") {
			t.Errorf("pending %+v", pend)
		}
		h.update(Decision{Step: "charge", Action: ActionApprove})
	}, time.Minute)
	st := h.run(map[string]any{})
	if st.Status != "succeeded" || asked != 1 {
		t.Fatalf("run: %+v %+v, checks %d", st, st.Error, asked)
	}
	// the lost call (which the test's wrapper let run) and the approved one.
	if got := l.keys("charge"); len(got) != 2 || got[0] != "run-1/charge/1" || got[1] != "run-1/charge/2" {
		t.Errorf("charge calls %v", got)
	}
}
