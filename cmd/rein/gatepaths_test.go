package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// gateMode is one way the gate is configured for TestNoPathSkipsTheGate:
// a rule that names the tool (send, crm.send) and does not depend on
// provenance, so that every path is judged on the gate being asked.
type gateMode struct {
	name    string
	verdict safety.Verdict
	// inFlow puts the rule in the flow's own policy: instead of rein.yaml's.
	inFlow bool
	// durable runs the flow paths with a store (they can wait for a person).
	durable bool
}

func (m gateMode) rule() string {
	if m.verdict == safety.Block {
		return "no-send"
	}
	return "ask-send"
}

func (m gateMode) policy(indent string) string {
	return fmt.Sprintf("%spolicy:\n%s  rules:\n%s    - {name: %s, tools: [send, crm.send], verdict: %s, reason: sends are checked}\n",
		indent, indent, indent, m.rule(), m.verdict)
}

var gateModes = []gateMode{
	{name: "block by rein.yaml", verdict: safety.Block},
	{name: "block by the flow", verdict: safety.Block, inFlow: true},
	{name: "require_approval by the flow, no store", verdict: safety.RequireApproval, inFlow: true},
	{name: "require_approval by rein.yaml, durable", verdict: safety.RequireApproval, durable: true},
}

// gatePath is one path by which rein invokes a tool.
type gatePath struct {
	name string
	// steps are the flow's steps (YAML) and script the scripted model's
	// replies, for the paths that run a flow.
	steps, script string
	// mcp: the flow folder's rein.yaml names the crm MCP server.
	mcp bool
	// waits: a gate's require_approval parks the call for a person when
	// the path has a store (durable), instead of refusing it; ownStore:
	// the path always has one (a workflow's tasks; the agent loop's caller
	// keeps the session).
	waits, ownStore bool
	// noFlow: the path runs no flow (the rule is always rein.yaml's).
	noFlow bool
	// escalates: a call the gate does not allow is escalated to a person
	// whatever the verdict (a saga's compensation: approve makes it once
	// more, settle says it was done by hand); config is added to the
	// folder's rein.yaml.
	escalates bool
	config    string
	// hint is what a refused require_approval tells the user to do.
	hint string
	// run drives the path; nil: the path is not built yet (its row waits).
	run func(t *testing.T, fx *gateFixture) gateSeen
}

// gateSeen is what a path showed.
type gateSeen struct {
	// decisions are the journaled (logged) gate decisions on the send
	// tools, as "verdict rule".
	decisions []string
	// waiting are the messages (reasons) of the calls parked for a person.
	waiting []string
	// refusal holds what the caller was told when the call was refused.
	refusal string
}

const (
	gateInput   = `{"to": "a@example.com", "all": ["a@example.com"]}`
	agentCallsS = "replies:\n  - {step: s, decision: agent, turn: 1, tool_calls: [{name: %s, args: %s}]}\n  - {step: s, decision: agent, turn: 2, raw: done}\n"
	agentStep   = "  - id: s\n    type: agent\n    model: m\n    instructions: Send what you are asked to.\n    prompt_template: \"send to {input.to}\"\n    tools: {%s: }\n"
	planStep    = "  - {id: s, type: plan, model: m, goal: \"send\", tools: [send], max_replans: 0}\n"
	planReply   = "replies:\n  - {step: s, decision: plan, plan: {goal: send, steps: [{id: a, tool: send, args: {to: a@example.com}}]}}\n"
)

// storeHint is in the refusal of a call that could wait in a durable run;
// mcpHint in that of a served call the host's user could not approve.
const (
	storeHint = "durable"
	mcpHint   = "elicitation"
)

// gatePaths is every path that invokes a tool.
var gatePaths = []gatePath{
	{name: "flow: tool step", steps: `  - {id: s, tool: send, args: {to: "{input.to}"}}` + "\n", waits: true, hint: storeHint, run: runGateFlow},
	{name: "flow: for_each item", steps: `  - {id: s, tool: send, for_each: "input.all", args: {to: "{item}"}}` + "\n", waits: true, hint: storeHint, run: runGateFlow},
	{name: "flow: repeat round", steps: `  - {id: s, tool: send, args: {to: "{input.to}"}, repeat: {until: "true", max: 2}}` + "\n", hint: "approval: required", run: runGateFlow},
	{name: "flow: fallback tool", steps: `  - {id: s, tool: broken, args: {}, retries: 0, on_error: fallback, fallback: {tool: send, args: {to: "{input.to}"}}}` + "\n", hint: storeHint, run: runGateFlow},
	{name: "flow: plan step", steps: planStep, script: planReply, waits: true, hint: storeHint, run: runGateFlow},
	{name: "flow: agent step's call (rein agent)", steps: fmt.Sprintf(agentStep, "send"), script: fmt.Sprintf(agentCallsS, "send", `{to: a@example.com}`),
		waits: true, hint: storeHint, run: runGateFlow},
	{name: "flow: agent step's execute_plan", steps: fmt.Sprintf(agentStep, "send") + "    execute_plan: {allow_external: true}\n",
		script: fmt.Sprintf(agentCallsS, "execute_plan", `{objective: send, steps: [{id: a, tool: send, args: {to: a@example.com}}]}`), waits: true, hint: storeHint, run: runGateFlow},
	{name: "flow: MCP server's tool (rein.yaml mcp:)", steps: `  - {id: s, tool: crm.send, args: {to: "{input.to}"}}` + "\n", mcp: true, waits: true, hint: storeHint, run: runGateFlow},
	{name: "flow: MCP server's tool called by an agent", steps: fmt.Sprintf(agentStep, "crm.send"), script: fmt.Sprintf(agentCallsS, "crm.send", `{to: a@example.com}`),
		mcp: true, waits: true, hint: storeHint, run: runGateFlow},
	{name: "agent.New loop", waits: true, ownStore: true, run: runGateAgentLoop},
	{name: "workflow adapter (submit_from_source)", steps: "  - {id: s, adapter: send, skill: send-it, requires: []}\n", ownStore: true, hint: "action submit", run: runGateAdapter},
	{name: "rein plan run", noFlow: true, hint: storeHint, run: runGatePlanRun},
	{name: "rein mcp: a served tool", hint: mcpHint, run: runGateMCP("send", nil, nil)},
	{name: "rein mcp: a served MCP server's tool", mcp: true, hint: mcpHint, run: runGateMCP("crm.send", nil, nil)},
	// the start's input is the host's model's: the host's user approves it, then the flow's gate decides its step.
	{name: "rein mcp: <name>_workflow start (tool step)", steps: `  - {id: s, tool: send, args: {to: "{input.to}"}}` + "\n", waits: true, ownStore: true,
		run: runGateMCP("gated_workflow", answering("accept", nil), []map[string]any{{"action": "start", "input": map[string]any{"to": "a@example.com"}}})},
	{name: "rein mcp: <name>_workflow submit_from_source (adapter)", steps: "  - {id: s, adapter: send, skill: send-it, requires: []}\n", ownStore: true, hint: "action submit",
		run: runGateMCP("gated_workflow", nil, []map[string]any{{"action": "start", "input": map[string]any{}}, {"action": "submit_from_source", "step_id": "s"}})},
	{name: "compensation (on_failure: compensate)", steps: sagaSteps, config: sagaTools, waits: true, ownStore: true, escalates: true, run: runGateSaga},
}

// The saga's flow: create's call succeeds, broken fails the run, and the
// saga takes create's call back with its compensation, a call of send.
const (
	sagaSteps = "  - {id: c, tool: create, args: {to: \"{input.to}\"}}\n  - {id: s, tool: broken, args: {}, retries: 0}\non_failure: compensate\n"
	sagaTools = `  create: {command: ["sh", "-c", "cat > /dev/null; echo '{\"id\": \"c1\"}'"], effect: write, reversibility: compensatable,
    compensate: {tool: send, args: {to: "{args.to}", about: "{output.id}"}}}
`
)

// TestNoPathSkipsTheGate: on every path that invokes a tool — a flow's
// tool step, for_each item, repeat round, fallback, plan step, agent
// call and execute_plan step, an MCP server's tool from a step and from
// an agent, the agent loop, a workflow's adapter, rein plan run, what
// rein mcp serves, and a saga's compensation — a rule of rein.yaml's or
// of the flow's policy: is asked, its decision is journaled (for rein
// mcp's own tools: logged) naming the rule, and the tool is not called. A
// require_approval parks the call where the path can wait for a person (a
// durable run), and elsewhere refuses it saying what to do; a
// compensation the gate does not allow is escalated to a person.
func TestNoPathSkipsTheGate(t *testing.T) {
	t.Parallel()
	for _, path := range gatePaths {
		t.Run(path.name, func(t *testing.T) {
			if path.run == nil {
				t.Skip("this path is not built yet: give it a run func when it is")
			}
			t.Parallel()
			for _, mode := range gateModes {
				fx := newGateFixture(t, path, mode)
				seen := path.run(t, fx)
				fx.check(t, path, mode, seen)
			}
		})
	}
}

// gateFixture is one path's flow folder under one mode.
type gateFixture struct {
	dir, sent string
	mode      gateMode
	path      gatePath
}

func newGateFixture(t *testing.T, path gatePath, mode gateMode) *gateFixture {
	t.Helper()
	dir := t.TempDir()
	fx := &gateFixture{dir: dir, sent: filepath.Join(dir, "sent.log"), mode: mode, path: path}
	send := fmt.Sprintf(`["sh", "-c", "cat >> \"$0\"; echo '{\"sent\": true}'", %q]`, fx.sent)
	cfg := fmt.Sprintf(`tools:
  send: {command: %s, effect: external}
  broken: {command: ["sh", "-c", "echo down >&2; exit 1"], effect: none}
%sadapters:
  send: {command: %s, effect: external}
`, send, path.config, send)
	if path.mcp {
		bin, err := crmServer()
		if err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("mcp:\n  crm: {command: [%q], env: {CRM_SENT: %q}, tools: {send: {effect: external}}}\n", bin, fx.sent)
	}
	if !mode.inFlow || path.noFlow {
		cfg += mode.policy("")
	}
	steps := path.steps
	if steps == "" {
		steps = "  - {id: s, tool: send, args: {to: \"{input.to}\"}}\n"
	}
	flowText := "name: gated\ninputs: {type: object}\n" + "steps:\n" + steps
	if mode.inFlow {
		flowText += mode.policy("")
	}
	files := map[string]string{"rein.yaml": cfg, "flow.yaml": flowText}
	if path.script != "" {
		files["script.yaml"] = path.script
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

// check holds every path to the same contract.
func (fx *gateFixture) check(t *testing.T, path gatePath, mode gateMode, seen gateSeen) {
	t.Helper()
	rule := mode.rule()
	if data, err := os.ReadFile(fx.sent); err == nil && len(data) > 0 {
		t.Errorf("%s: the tool was called past the gate: %s", mode.name, data)
	}
	want := string(mode.verdict) + " " + rule
	if !containsString(seen.decisions, want) {
		t.Errorf("%s: gate decisions %q, want %q journaled", mode.name, seen.decisions, want)
	}
	parks := mode.verdict == safety.RequireApproval && path.waits && (mode.durable || path.ownStore)
	switch {
	case path.escalates:
		if len(seen.waiting) == 0 || !strings.Contains(strings.Join(seen.waiting, "\n"), "rule "+rule) {
			t.Errorf("%s: waiting %q, want the call escalated to a person, naming rule %s", mode.name, seen.waiting, rule)
		}
	case parks:
		if len(seen.waiting) == 0 || !strings.Contains(strings.Join(seen.waiting, "\n"), "rule "+rule) {
			t.Errorf("%s: waiting %q (refusal %q), want the call parked for a person, naming rule %s", mode.name, seen.waiting, seen.refusal, rule)
		}
	default:
		if len(seen.waiting) != 0 {
			t.Errorf("%s: %q wait for a person; want the call refused", mode.name, seen.waiting)
		}
		if !strings.Contains(seen.refusal, "rule "+rule) {
			t.Errorf("%s: refusal %q does not name rule %s", mode.name, seen.refusal, rule)
		}
		if mode.verdict == safety.RequireApproval && !strings.Contains(seen.refusal, path.hint) {
			t.Errorf("%s: refusal %q does not say what to do (%q)", mode.name, seen.refusal, path.hint)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gateEvents collects a run's events.
type gateEvents struct {
	mu  sync.Mutex
	evs []*trace.Event
}

func (g *gateEvents) Emit(_ context.Context, ev *trace.Event) {
	g.mu.Lock()
	g.evs = append(g.evs, ev)
	g.mu.Unlock()
}

// seenIn reads a run's journal: its gate decisions on the send tools, and
// what its agent calls and plan steps were told.
func seenIn(evs []*trace.Event) gateSeen {
	var s gateSeen
	for _, g := range journal.GateDecisions(evs) {
		if g.Tool == "send" || g.Tool == "crm.send" {
			rule, _, _ := strings.Cut(strings.TrimPrefix(g.Decision.Why, "rule "), ":")
			s.decisions = append(s.decisions, g.Decision.Verdict+" "+rule)
		}
	}
	for _, ev := range evs {
		switch {
		case ev.Kind == trace.CallRecorded && ev.Call != nil && ev.Call.Agent != nil: // what the agent was told
			s.refusal += ev.Call.Agent.Observation + "\n"
		case ev.Error != "":
			s.refusal += ev.Error + "\n"
		}
	}
	return s
}

// runGateFlow runs the flow folder (with a SQLite store when the mode is
// durable).
func runGateFlow(t *testing.T, fx *gateFixture) gateSeen {
	ctx := context.Background()
	p, err := project.Load(fx.dir, nil)
	if err != nil && fx.path.mcp && strings.Contains(err.Error(), `tool name "crm.send" must start with a letter`) {
		// the row runs once an agent can offer an MCP server's tool.
		t.Skip("an agent cannot offer an MCP server's tool yet: ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	events := &gateEvents{}
	cfg := rein.Config{Sink: events}
	if fx.mode.durable {
		st, err := store.Open(ctx, filepath.Join(fx.dir, "rein.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		cfg.Store = st
	}
	var input any
	_ = json.Unmarshal([]byte(gateInput), &input)
	c, err := rein.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, p, input)
	if err != nil {
		t.Fatalf("%s: %v", fx.mode.name, err)
	}
	seen := seenIn(events.evs)
	if res.Error != nil {
		seen.refusal += res.Error.Error()
	}
	for _, a := range res.Pending {
		seen.waiting = append(seen.waiting, a.Message)
	}
	return seen
}

// runGateSaga runs the flow folder with a SQLite store (a saga needs
// one, whatever the mode): the run fails, and its compensation meets
// the gate.
func runGateSaga(t *testing.T, fx *gateFixture) gateSeen {
	ctx := context.Background()
	p, err := project.Load(fx.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, err := store.Open(ctx, filepath.Join(fx.dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events := &gateEvents{}
	var input any
	_ = json.Unmarshal([]byte(gateInput), &input)
	c, err := rein.Open(ctx, rein.Config{Sink: events, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, p, input)
	if err != nil {
		t.Fatalf("%s: %v", fx.mode.name, err)
	}
	if res.Status != trace.RunWaiting || res.Error == nil || res.Error.Step != "s" {
		t.Errorf("%s: run %s (%v), want it failed at s and waiting on its compensation", fx.mode.name, res.Status, res.Error)
	}
	seen := seenIn(events.evs)
	for _, a := range res.Pending {
		if a.Kind != store.KindEscalation || a.StepID != "c/1/compensate" || a.Tool != "send" {
			t.Errorf("%s: pending %+v, want the escalation of c's compensation", fx.mode.name, a)
		}
		seen.waiting = append(seen.waiting, a.Message)
	}
	if fx.mode.verdict == safety.RequireApproval && len(res.Pending) == 1 {
		approveSagaCall(t, fx, st, res.RunID)
	}
	return seen
}

// approveSagaCall: a person's approval of the escalation the gate's
// require_approval raised makes exactly the compensation it recorded,
// once, and the run ends failed, as it had. It leaves no trace of that
// call for check, which holds the call to the gate before the decision.
func approveSagaCall(t *testing.T, fx *gateFixture, st store.Store, runID string) {
	ctx := context.Background()
	if data, err := os.ReadFile(fx.sent); err == nil && len(data) > 0 {
		t.Fatalf("%s: the compensation was made before a person decided: %s", fx.mode.name, data)
	}
	c, err := rein.Open(ctx, rein.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decide(ctx, runID, "c/1/compensate", rein.Decision{Status: store.ApprovalApproved}, &rein.DecideOptions{Resume: true})
	if err != nil {
		t.Fatalf("%s: approve the compensation: %v", fx.mode.name, err)
	}
	if out.Result == nil || out.Result.Status != trace.RunFailed || len(out.Result.Pending) != 0 {
		t.Errorf("%s: after the approval: %+v, want the run failed, nothing waiting", fx.mode.name, out.Result)
	}
	data, _ := os.ReadFile(fx.sent)
	if got := string(data); got != `{"about":"c1","to":"a@example.com"}`+"\n" {
		t.Errorf("%s: after the approval send got %q, want the recorded compensation once", fx.mode.name, got)
	}
	if err := os.Remove(fx.sent); err != nil {
		t.Fatal(err)
	}
}

// runGateAgentLoop runs the agent loop itself (package agent) with the
// gate in its pipeline.
func runGateAgentLoop(t *testing.T, fx *gateFixture) gateSeen {
	ctx := context.Background()
	pol := &safety.Policy{Rules: []safety.Rule{{Name: fx.mode.rule(), Tools: []string{"send"}, Verdict: fx.mode.verdict, Reason: "sends are checked"}}}
	send := tool.Func(tool.Spec{Name: "send", Effect: tool.EffectExternal}, func(context.Context, any) (any, error) {
		return nil, os.WriteFile(fx.sent, []byte("sent\n"), 0o644)
	})
	m := scripted.New([]scripted.Reply{
		{Step: "s", Turn: 1, ToolCalls: []model.ToolCall{{Name: "send", Args: `{"to":"a@example.com"}`}}},
		{Step: "s", Turn: 2, Output: "done"},
	})
	rec := &gateRecorder{}
	l, err := agent.New(agent.Config{Model: m, ModelName: "m", Tools: []agent.Tool{{Tool: send}}, Pipeline: &invoke.Pipeline{Gate: pol},
		Recorder: rec, RunID: "r", StepID: "s", Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	sess := &agent.Session{Task: "send to a@example.com"}
	res, err := l.Run(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	seen := gateSeen{decisions: rec.decisions}
	for _, p := range res.Pending {
		seen.waiting = append(seen.waiting, p.Reason)
	}
	for _, turn := range sess.Turns {
		for _, c := range turn.Calls {
			seen.refusal += c.Observation + "\n"
		}
	}
	return seen
}

// gateRecorder keeps the gate decisions an invoke.Recorder is given.
type gateRecorder struct {
	mu        sync.Mutex
	decisions []string
}

func (r *gateRecorder) GateDecided(_ invoke.Position, _ *safety.Invocation, d safety.Decision) {
	r.mu.Lock()
	r.decisions = append(r.decisions, string(d.Verdict)+" "+d.Rule)
	r.mu.Unlock()
}

func (*gateRecorder) Called(invoke.Record) {}

// runGateAdapter starts a task of the workflow and asks for its source
// step's output from the adapter (package bridge).
func runGateAdapter(t *testing.T, fx *gateFixture) gateSeen {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(fx.dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := workflowtool.New(fx.dir, &workflowtool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.Handle(ctx, []byte(`{"action": "start", "input": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	var seen gateSeen
	_, err = w.Handle(ctx, []byte(fmt.Sprintf(`{"action": "submit_from_source", "task_id": %q, "step_id": "s"}`, a.TaskID)))
	var be *workflowtool.Error
	if !errors.As(err, &be) {
		t.Fatalf("%s: submit_from_source: %v, want the adapter refused", fx.mode.name, err)
	}
	seen.refusal = be.Message
	evs, err := st.Events(ctx, a.TaskID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	j := seenIn(evs)
	seen.decisions = j.decisions
	return seen
}

// runGateMCP serves the flow folder with `rein mcp` (the real binary)
// and makes the calls of name, an MCP host's calls; the workflow tool's
// calls get the task id of the first one's answer. The decisions are
// read from rein mcp's stderr and, for a workflow's task, its journal.
func runGateMCP(name string, copts *sdk.ClientOptions, calls []map[string]any) func(t *testing.T, fx *gateFixture) gateSeen {
	return func(t *testing.T, fx *gateFixture) gateSeen {
		db := filepath.Join(fx.dir, "rein.db")
		m := serveMCPWith(t, db, copts, fx.dir)
		if calls == nil {
			calls = []map[string]any{{"to": "a@example.com"}}
		}
		var seen gateSeen
		var task string
		for _, args := range calls {
			if task != "" {
				args["task_id"] = task
			}
			text, isErr := m.call(name, args)
			var answer struct {
				TaskID  string          `json:"task_id"`
				Status  string          `json:"status"`
				Message string          `json:"message"`
				Failure json.RawMessage `json:"failure"`
			}
			_ = json.Unmarshal([]byte(text), &answer)
			if task == "" {
				task = answer.TaskID
			}
			if isErr {
				seen.refusal += answer.Message + "\n"
			}
			seen.refusal += string(answer.Failure)
		}
		seen.decisions = loggedDecisions(m.stop(), "rein mcp")
		if task != "" {
			st, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			evs, err := st.Events(context.Background(), task, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			j := seenIn(evs)
			seen.decisions = append(seen.decisions, j.decisions...)
			approvals, err := st.Approvals(context.Background(), &store.ListApprovalsParams{RunID: task})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range approvals {
				if a.Status == store.ApprovalPending && a.Kind == store.KindApproval {
					seen.waiting = append(seen.waiting, a.Message)
				}
			}
		}
		return seen
	}
}

// crmServer builds the test MCP server (tool/mcp/testdata/server), a
// real program on the go-sdk's server API, once.
var crmServer = sync.OnceValues(func() (string, error) {
	bin, err := reinBinary() // its folder is removed with the test binary's
	if err != nil {
		return "", err
	}
	out := filepath.Join(filepath.Dir(bin), "crm")
	if b, err := exec.Command("go", "build", "-o", out, "../../tool/mcp/testdata/server").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, b)
	}
	return out, nil
})

// loggedDecisions reads the gate decisions a command logged (gateLog).
func loggedDecisions(stderr, cmd string) []string {
	var out []string
	prefix := cmd + ": policy gate: "
	for _, line := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		verdict, rest, _ := strings.Cut(rest, " on tool ")
		_, rule, _ := strings.Cut(rest, " by rule ")
		rule, _, _ = strings.Cut(rule, ":")
		out = append(out, verdict+" "+rule)
	}
	return out
}

// runGatePlanRun runs a plan that sends with rein plan run (the real
// binary) against the folder's rein.yaml.
func runGatePlanRun(t *testing.T, fx *gateFixture) gateSeen {
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	planText := `{"goal": "send", "steps": [{"id": "a", "tool": "send", "args": {"to": "a@example.com"}}]}`
	if err := os.WriteFile(filepath.Join(fx.dir, "plan.json"), []byte(planText), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "plan", "run", "plan.json", "-o", "json")
	cmd.Dir = fx.dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Errorf("%s: rein plan run succeeded: %s", fx.mode.name, stdout.String())
	}
	return gateSeen{decisions: loggedDecisions(stderr.String(), "rein plan run"), refusal: stdout.String()}
}

// TestMCPWorkflowToolMeetsTheGate: a rule naming a workflow tool decides
// rein mcp's calls of it, as it would an agent's.
func TestMCPWorkflowToolMeetsTheGate(t *testing.T) {
	t.Parallel()
	m := serveFolder(t, t.TempDir(), map[string]string{
		"rein.yaml": "policy:\n  rules:\n    - {name: no-tasks, tools: [gated_workflow], verdict: block, reason: not over MCP}\n",
		"flow.yaml": "name: gated\nsteps:\n  - {id: s, skill: write-it}\n",
	})
	text, isErr := m.call("gated_workflow", map[string]any{"action": "start", "input": map[string]any{}})
	stderr := m.stop()
	if !isErr || !strings.Contains(text, `"error_type":"policy"`) || !strings.Contains(text, "by rule no-tasks: not over MCP") {
		t.Errorf("start: error %v, %s", isErr, text)
	}
	if got := loggedDecisions(stderr, "rein mcp"); strings.Join(got, ",") != "block no-tasks" {
		t.Errorf("logged decisions %q\n%s", got, stderr)
	}
}
