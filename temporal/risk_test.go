package temporal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// agentTierFlow: the agent step's tools include charge, whose cost of
// error is tier 4: when the step starts (stage step) the run goes to tier
// 4, though its agent never calls charge; send, a later tool step whose
// own call is tier 2 at intake, then waits for a person.
const agentTierFlow = `name: agent_tier
inputs: {type: object, properties: {task: {type: string}}}
risk: {costs: {tools: {charge: 4}}}
steps:
  - id: agent
    type: agent
    model: m
    instructions: Look orders up.
    prompt_template: "{input.task}"
    tools: {lookup: , charge: }
  - {id: send, tool: send, args: {to: "{input.task}"}, requires: [agent]}
`

const agentTierScript = `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: lookup, args: {order: "1"}}]}
  - {step: agent, decision: agent, turn: 2, raw: "looked"}
`

func agentTierTools(l *ledger) []tool.Tool {
	return []tool.Tool{l.toolOf(tool.Spec{Name: "lookup", Effect: tool.EffectRead, Idempotent: true}),
		l.toolOf(tool.Spec{Name: "charge", Effect: tool.EffectExternal}), l.tool("send", true)}
}

// localRun runs p on the local engine, durable on SQLite (its calls may
// wait for a person), and returns its result and the risk tier its calls
// were decided at, by tool.
func localRun(t *testing.T, p *project.Project, input any) (*engine.Result, map[string]int) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "local.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := &tierSeen{tiers: map[string]int{}}
	e := wire.Engine(p, engine.Config{Gate: g, Store: st})
	res, err := e.Run(context.Background(), p.Flow, input, &engine.RunOptions{RunID: "local-1"})
	if err != nil {
		t.Fatal(err)
	}
	return res, g.tiers
}

// tierSeen is a gate that allows every call and remembers the tier each
// tool's last call was decided at.
type tierSeen struct{ tiers map[string]int }

func (g *tierSeen) Check(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
	g.tiers[inv.Tool.Name] = inv.Tier
	return safety.Decision{Verdict: safety.Allow}, nil
}

// floorsOf records the tier every activity of h was handed, by activity
// id.
func floorsOf(h *harness) map[string]int {
	floors := map[string]int{}
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in attemptIn
		if args.Get(&in) == nil {
			floors[info.ActivityID] = in.Tier
		}
	})
	return floors
}

// TestTierReachesLaterSteps: the tier an agent step's start raised the
// run to (4: its tools) holds for every later activity of the run, as it
// does for a local run's later calls: send, a tool step after it, waits
// for a person (rule tier-approval) — locally too — and is made once
// approved; every activity after the agent's first is handed tier 4.
func TestTierReachesLaterSteps(t *testing.T) {
	ll := newLedger()
	res, seen := localRun(t, loadAgent(t, agentTierFlow, agentTierScript, agentTierTools(ll)...), map[string]any{"task": "order 1"})
	if res.Status != trace.RunWaiting || res.Steps["send"].Status != trace.StepWaiting || ll.count("send") != 0 || seen["lookup"] != 4 {
		t.Fatalf("local run: %s, send %+v, %d sends, lookup at tier %d; want it waiting on send, lookup decided at tier 4",
			res.Status, res.Steps["send"], ll.count("send"), seen["lookup"])
	}

	l := newLedger()
	p := loadAgent(t, agentTierFlow, agentTierScript, agentTierTools(l)...)
	h := newHarness(t, p)
	floors := floorsOf(h)
	var approve *updated
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "send" || pend[0].Kind != "approval" || !strings.Contains(pend[0].Error, "at risk tier 4") {
			t.Errorf("pending %+v: want send waiting for a person at tier 4", pend)
		}
		if l.count("send") != 0 || l.count("lookup") != 1 {
			t.Errorf("before the approval: send %d, lookup %d calls", l.count("send"), l.count("lookup"))
		}
		approve = h.update(Decision{Step: "send", Action: ActionApprove, By: "ana"})
	}, time.Minute)
	st := h.run(map[string]any{"task": "order 1"})
	if st.Status != "succeeded" || approve == nil || approve.err != nil {
		t.Fatalf("run %+v, approval %+v", st, approve)
	}
	if got := l.keys("send"); len(got) != 1 || got[0] != "run-1/send/1" {
		t.Errorf("send calls %v: once, approved", got)
	}
	if floors["run-1/send/1"] != 4 || floors["run-1/send/1/ask"] != 4 || floors["run-1/agent/1/turn1/call1"] != 4 {
		t.Errorf("floors %v: every activity after the agent's first turn starts at tier 4", floors)
	}
}

// fanTierFlow: each fans out to the 4 ids list returns, past max_fan_out
// 3: tier 3 once the step starts (stage step), and with no reviewer
// configured its calls wait for a person.
const fanTierFlow = `name: fan_tier
risk: {max_fan_out: 3}
steps:
  - {id: ids, tool: list, args: {}}
  - {id: each, tool: save, for_each: "ids.ids", args: {id: "{item}"}, requires: [ids]}
  - {id: mark, tool: mark, args: {}, requires: [each]}
`

func fanTierTools(l *ledger) []tool.Tool {
	return []tool.Tool{tool.Func(tool.Spec{Name: "list", Effect: tool.EffectRead}, func(context.Context, any) (any, error) {
		return map[string]any{"ids": []any{"a", "b", "c", "d"}}, nil
	}), l.tool("save", true), l.tool("mark", true)}
}

// TestFanOutTierOnTemporal: a for_each step whose items an upstream step
// gave is assessed when it starts, as a local run's: at tier 3 it parks
// for a person before its items (locally it waits too), and mark, after
// it, is handed tier 3 and waits for a person as well.
func TestFanOutTierOnTemporal(t *testing.T) {
	ll := newLedger()
	res, _ := localRun(t, load(t, fanTierFlow, fanTierTools(ll)...), map[string]any{})
	if res.Status != trace.RunWaiting || res.Steps["each"].Status != trace.StepWaiting || ll.count("save") != 0 {
		t.Fatalf("local run: %s, each %+v, %d saves; want it waiting on each", res.Status, res.Steps["each"], ll.count("save"))
	}

	l := newLedger()
	p := load(t, fanTierFlow, fanTierTools(l)...)
	h := newHarness(t, p)
	floors := floorsOf(h)
	var asked []string
	ask := func(step string) {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != step || pend[0].Kind != "approval" || !strings.Contains(pend[0].Error, "risk tier 3") {
			t.Errorf("pending before %s: %+v, want it waiting at risk tier 3", step, pend)
		}
		asked = append(asked, step)
		if d := h.update(Decision{Step: step, Action: ActionApprove, By: "ana"}); d.err != nil {
			t.Errorf("approve %s: %v", step, d.err)
		}
	}
	h.env.RegisterDelayedCallback(func() { ask("each") }, time.Minute)
	h.env.RegisterDelayedCallback(func() { ask("mark") }, 2*time.Minute)
	st := h.run(map[string]any{})
	if st.Status != "succeeded" || strings.Join(asked, ",") != "each,mark" || l.count("save") != 4 || l.count("mark") != 1 {
		t.Fatalf("run %s, asked %v, %d saves, %d marks", st.Status, asked, l.count("save"), l.count("mark"))
	}
	if floors["run-1/mark/1"] != 3 || floors["run-1/each[3]/1"] != 3 {
		t.Errorf("floors %v: the items and mark start at tier 3", floors)
	}
}

// TestTaintReachesLaterSteps: look's read touches a resource an earlier
// run invalidated, which taints its output (origin db) for the rest of
// the run, as a local run's one invoke.Invalid does: amend, a later step
// whose argument comes from it, waits for a person (rule
// invalidated-resource) though it touches no resource itself, and
// rejected never makes its call.
func TestTaintReachesLaterSteps(t *testing.T) {
	l := newLedger()
	p := load(t, `name: taint
steps:
  - {id: look, tool: peek, args: {order: "1042"}}
  - {id: amend, tool: amend, args: {n: "{look.n}"}, requires: [look]}
`, l.toolOf(tool.Spec{Name: "peek", Effect: tool.EffectRead, Idempotent: true, Resources: []string{"bank:payment/{args.order}"}}),
		l.toolOf(tool.Spec{Name: "amend", Effect: tool.EffectWrite, Idempotent: true}))
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Invalidate(ctx, []*store.Invalidation{{Tenant: "acme", Resource: "bank:payment/1042", RunID: "run-0", CallKey: "run-0/pay/1",
		Premise: "saga", Reason: "frozen"}}); err != nil {
		t.Fatal(err)
	}
	fs := NewFlows()
	fs.Store = st
	fs.Add(p)
	var s testsuite.WorkflowTestSuite
	env := newTestEnv(&s)
	Register(env, &Workflow{Flows: fs}, &Activities{Flows: fs})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
	h := &harness{t: t, env: env, p: p}
	var handed []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in attemptIn
		if args.Get(&in) == nil && len(in.Tainted) > 0 {
			handed = append(handed, info.ActivityID+"="+string(in.Tainted[0].Origin))
		}
	})
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	in.Tenant = "acme"
	var reject *updated
	env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "amend" || pend[0].Kind != "approval" || !strings.Contains(pend[0].Error, "invalidated-resource") ||
			!strings.Contains(pend[0].Error, "run run-0") {
			t.Errorf("pending %+v: want amend waiting for a person (rule invalidated-resource, naming run-0)", pend)
		}
		reject = h.update(Decision{Step: "amend", Action: ActionReject, By: "ana"})
	}, time.Minute)
	res := h.runStart(in)
	if reject == nil || reject.err != nil || res.Status != "failed" || l.count("peek") != 1 || l.count("amend") != 0 {
		t.Fatalf("rejected %+v; run %s, %d peeks, %d amends; want it failed, amend never made", reject, res.Status, l.count("peek"), l.count("amend"))
	}
	if strings.Join(handed, ",") != "run-1/amend/1/ask=db" {
		t.Errorf("activities handed the taint: %v, want amend's gate (origin db)", handed)
	}
}

// TestEvidenceOfSettledSteps: an activity's gate sees the outputs of the
// run's settled tool steps as its evidence, as a resumed local run's does
// (engine restoreEvidence): the reviewer of send's call (tier 3) is shown
// what look returned, and its reply (scripted only for a request that
// holds it) lets the call through without a person.
func TestEvidenceOfSettledSteps(t *testing.T) {
	l := newLedger()
	verdict := `{step: send, decision: review, contains: "fact-7731", output: {verdicts: [{claim: "calling tool send with these args is what the user's input asks for, and the args are supported by the input and the tool results", supported: true, evidence: "facts says fact-7731"}]}}`
	p := loadAgent(t, `name: evidence
risk: {min_tier: 3}
review: {model: m}
steps:
  - {id: look, tool: facts, args: {}}
  - {id: send, tool: send, args: {to: "x"}, requires: [look]}
`, "replies:\n  - "+verdict+"\n  - "+verdict+"\n",
		tool.Func(tool.Spec{Name: "facts", Effect: tool.EffectRead}, func(context.Context, any) (any, error) {
			return map[string]any{"fact": "fact-7731"}, nil
		}), l.tool("send", true))
	h := newHarness(t, p)
	var pend []Pending
	h.env.RegisterDelayedCallback(func() {
		h.query(QueryPending, &pend)
		if len(pend) > 0 {
			h.update(Decision{Step: pend[0].Step, Action: ActionReject, By: "ana"})
		}
	}, time.Minute)
	st := h.run(map[string]any{})
	if st.Status != "succeeded" || len(pend) != 0 || l.count("send") != 1 {
		t.Fatalf("run %s, pending %+v, %d sends: want send let through by the reviewer, who saw look's output", st.Status, pend, l.count("send"))
	}
}
