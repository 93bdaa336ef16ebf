package engine_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func defaultGate() *safety.Policy { return &safety.Policy{Rules: safety.DefaultRules()} }

// TestNoPathSkipsThePolicyGate: a value a model wrote reaches a write tool
// along every path a flow has — a tool step, a for_each item, a repeat
// round, a fallback tool, a plan step — and on each the default gate sees
// its inferred provenance and refuses the call (a run without a store
// cannot wait for a person). Values from the input pass on every path.
func TestNoPathSkipsThePolicyGate(t *testing.T) {
	t.Parallel()
	const head = "name: g\nsteps:\n  - {id: draft, type: llm, model: m, prompt_template: \"write\"}\n"
	cases := []struct {
		path, step string
		inferred   string // the step, with args a model wrote
		user       string // the step, with args from the input
		plan       map[string]any
	}{
		{path: "tool step",
			inferred: `  - {id: s, tool: send, args: {to: "{draft}"}}`,
			user:     `  - {id: s, tool: send, args: {to: "{input.to}"}}`},
		{path: "for_each item",
			inferred: `  - {id: s, tool: send, for_each: "[draft]", args: {to: "{item}"}}`,
			user:     `  - {id: s, tool: send, for_each: "input.all", args: {to: "{item}"}}`},
		{path: "repeat round",
			inferred: `  - {id: s, tool: send, args: {to: "{draft}"}, repeat: {until: "true", max: 2}}`,
			user:     `  - {id: s, tool: send, args: {to: "{input.to}"}, repeat: {until: "true", max: 2}}`},
		{path: "fallback tool",
			inferred: `  - {id: s, tool: broken, args: {}, on_error: fallback, fallback: {tool: send, args: {to: "{draft}"}}}`,
			user:     `  - {id: s, tool: broken, args: {}, on_error: fallback, fallback: {tool: send, args: {to: "{input.to}"}}}`},
		{path: "plan step",
			inferred: `  - {id: s, type: plan, model: m, goal: "send", tools: [send], max_replans: 0}`,
			plan:     map[string]any{"goal": "send", "steps": []any{map[string]any{"id": "a", "tool": "send", "args": map[string]any{"to": "x@example.com"}}}}},
		// a plan step whose argument is a $ref to a read tool's output (db),
		// not model text, and whose declaration the lookup confirms.
		{path: "plan step with a $ref",
			user: `  - {id: s, type: plan, model: m, goal: "send", tools: [lookup, send], max_replans: 0}`,
			plan: map[string]any{"goal": "send", "steps": []any{
				map[string]any{"id": "who", "tool": "lookup", "args": map[string]any{"q": "owner"}},
				map[string]any{"id": "a", "tool": "send", "args": map[string]any{"to": map[string]any{"$ref": "who.email"}},
					"declaration": map[string]any{"action": "mail the owner", "facts": []any{
						map[string]any{"claim": "the owner's address", "source": "db", "evidence": "owner@example.com"}}}}}}},
	}
	for _, tc := range cases {
		for _, src := range []string{tc.inferred, tc.user} {
			if src == "" {
				continue
			}
			inferred := src == tc.inferred
			send := newKeyCounter("send", false)
			broken := goTool("broken", func(context.Context, map[string]any) (any, error) { return nil, fault.BusinessErr(errString("down")) })
			lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.EffectRead, Verifies: []string{"email"},
				OutputSchema: []byte(`{"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}`)}, func(context.Context, any) (any, error) {
				return map[string]any{"email": "owner@example.com"}, nil
			})
			fx := newFixture(t, send, broken, lookup)
			replies := []scripted.Reply{{Step: "draft", Output: "x@example.com"}}
			if tc.plan != nil {
				replies = append(replies, scripted.Reply{Step: "s", Decision: "plan", Plan: tc.plan})
			}
			fx.script(replies...)
			e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Gate: defaultGate()})
			res, err := e.Run(context.Background(), fx.parse(head+src+"\n"), map[string]any{"to": "a@example.com", "all": []any{"a@example.com"}}, nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			if !inferred {
				wantStatus(t, res, trace.RunSucceeded)
				if len(send.calls()) == 0 {
					t.Errorf("%s: a value from the input did not reach the tool", tc.path)
				}
				continue
			}
			// a plan step's refusal fails the plan (which may be revised), not the run's class.
			if res.Error == nil || tc.plan == nil && res.Error.Class != fault.Policy || !strings.Contains(res.Error.Error(), "rule inferred-drives-effect") ||
				!strings.Contains(res.Error.Error(), "comes from inferred") {
				t.Errorf("%s: run error %v, want the gate's require_approval by inferred-drives-effect", tc.path, res.Error)
			}
			if n := len(send.calls()); n != 0 {
				t.Errorf("%s: the tool was called %d times past the gate", tc.path, n)
			}
			var journaled bool
			for _, g := range gateDecisions(fx.events.all()) {
				if g.Tool == "send" && g.Decision.Verdict == string(safety.RequireApproval) && strings.HasPrefix(g.Decision.Why, "rule inferred-drives-effect: ") {
					journaled = true
				}
			}
			if !journaled {
				t.Errorf("%s: no call record's gate decision names the rule", tc.path)
			}
		}
	}
}

// The compensations of a saga pass the gate too: a gate that blocks the
// compensating tool sees the call (with the provenance of the call it
// takes back: inferred here), the tool is never called, and the saga
// escalates it to a person instead.
func TestNoPathSkipsThePolicyGateCompensations(t *testing.T) {
	t.Parallel()
	archived := newKeyCounter("archive", false)
	fx := newFixture(t, crmTool(), archived, goTool("broken", func(context.Context, map[string]any) (any, error) {
		return nil, fault.BusinessErr(errString("down"))
	}))
	fx.script(scripted.Reply{Step: "draft", Output: "x"})
	gate := &safety.Policy{Rules: []safety.Rule{{Name: "no-archive", Tools: []string{"archive"}, Provenance: []safety.Origin{safety.OriginInferred},
		Verdict: safety.Block, Reason: "archiving is done by hand"}}}
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: openSQLite(t), Owner: "p", Gate: gate})
	f := fx.parse(`name: g
on_failure: compensate
steps:
  - {id: draft, type: llm, model: m, prompt_template: "write"}
  - {id: s, tool: create, args: {to: "{draft}"}}
  - {id: fail, tool: broken, args: {}}
`)
	res, err := e.Run(context.Background(), f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if n := len(archived.calls()); n != 0 {
		t.Errorf("the compensation reached its tool %d times past the gate", n)
	}
	if len(res.Pending) != 1 || res.Pending[0].StepID != "s/1/compensate" || res.Pending[0].Kind != store.KindEscalation ||
		!strings.Contains(res.Pending[0].Message, "by rule no-archive") {
		t.Fatalf("pending %+v, want the compensation escalated with the gate's reason", res.Pending)
	}
	var decided bool
	for _, g := range gateDecisions(fx.events.all()) {
		decided = decided || g.Tool == "archive" && g.Decision.Verdict == string(safety.Block)
	}
	if !decided {
		t.Error("no gate decision recorded for the compensation")
	}
	// the journal replays: the saga parks the run, not a step.
	var evs []*trace.Event
	for _, ev := range fx.events.all() {
		evs = append(evs, &ev)
	}
	got, err := replayJournal(f, evs)
	if err != nil || got.Run != trace.RunWaiting || got.Steps["s"].Status != trace.StepSucceeded || len(got.Pending) != 0 {
		t.Errorf("replay: %v %+v", err, got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestGateApprovalParksTheStep: in a durable run a require_approval of
// the gate on a tool step parks it for a person, as approval: required
// does; the approval names the rule and its reason and records the args;
// approving makes that call, rejecting fails the step.
func TestGateApprovalParksTheStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, decision := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected} {
		send, log := newKeyCounter("send", false), newKeyCounter("log", false)
		fx := newFixture(t, send, log)
		fx.script(scripted.Reply{Step: "draft", Output: "x@example.com"})
		st := openSQLite(t)
		e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: st, Owner: "p1", Gate: defaultGate()})
		f := fx.parse(`name: parked
steps:
  - {id: draft, type: llm, model: m, prompt_template: "write"}
  - {id: note, tool: log, args: {to: "{input.to}"}, requires: []}
  - {id: send_it, tool: send, args: {to: "{draft}", cc: "{input.to}"}, requires: [draft]}
`)
		res, err := e.Run(ctx, f, map[string]any{"to": "a@example.com"}, &engine.RunOptions{RunID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res, trace.RunWaiting)
		if len(res.Pending) != 1 || len(send.calls()) != 0 || len(log.calls()) != 1 {
			t.Fatalf("pending %+v, send %d, log %d calls: want only send_it waiting, before its call", res.Pending, len(send.calls()), len(log.calls()))
		}
		a := res.Pending[0]
		if a.StepID != "send_it" || a.Kind != store.KindApproval || !strings.HasPrefix(string(a.Args), `{"cc":"a@example.com","to":`) ||
			!strings.Contains(a.Message, "rule inferred-drives-effect") || !strings.Contains(a.Message, "argument /to comes from inferred") {
			t.Fatalf("approval %+v", a)
		}
		if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "send_it", Status: decision}); err != nil {
			t.Fatal(err)
		}
		if res, err = e.Resume(ctx, f, "r"); err != nil {
			t.Fatal(err)
		}
		if decision == store.ApprovalRejected {
			wantStatus(t, res, trace.RunFailed)
			if len(send.calls()) != 0 {
				t.Fatal("a rejected call was made")
			}
			continue
		}
		wantStatus(t, res, trace.RunSucceeded)
		if len(send.calls()) != 1 {
			t.Fatalf("send called %d times after the approval, want 1", len(send.calls()))
		}
		var verdicts []string
		for _, g := range gateDecisions(fx.events.all()) {
			if g.StepID == "send_it" {
				verdicts = append(verdicts, g.Decision.Verdict)
			}
		}
		if strings.Join(verdicts, ",") != "require_approval,allow" {
			t.Errorf("gate decisions on send_it: %v, want require_approval then allow (approved)", verdicts)
		}
	}
}

// TestGateApprovalParksForEachItems: in a durable run, the gate's
// require_approval on the items of a for_each tool step parks the step
// once, recording every item's args in order; approving makes exactly
// those calls, rejecting fails the step without any.
func TestGateApprovalParksForEachItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ask := &safety.Policy{Rules: []safety.Rule{{Name: "ask-send", Tools: []string{"send"}, Verdict: safety.RequireApproval, Reason: "sends are checked"}}}
	for _, decision := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected} {
		send := newKeyCounter("send", false)
		fx := newFixture(t, send)
		st := openSQLite(t)
		e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: st, Owner: "p1", Gate: ask})
		f := fx.parse("name: items\nsteps:\n  - {id: s, tool: send, for_each: \"input.all\", args: {to: \"{item}\"}}\n")
		res, err := e.Run(ctx, f, map[string]any{"all": []any{"a@example.com", "b@example.com"}}, &engine.RunOptions{RunID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res, trace.RunWaiting)
		if len(res.Pending) != 1 || len(send.calls()) != 0 {
			t.Fatalf("pending %+v, %d calls: want the step waiting before any call", res.Pending, len(send.calls()))
		}
		a := res.Pending[0]
		if a.StepID != "s" || string(a.Args) != `[{"to":"a@example.com"},{"to":"b@example.com"}]` ||
			!strings.Contains(a.Message, "for each of its 2 items") || !strings.Contains(a.Message, "rule ask-send: sends are checked") {
			t.Fatalf("approval %+v", a)
		}
		if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "s", Status: decision}); err != nil {
			t.Fatal(err)
		}
		if res, err = e.Resume(ctx, f, "r"); err != nil {
			t.Fatal(err)
		}
		if decision == store.ApprovalRejected {
			wantStatus(t, res, trace.RunFailed)
			if len(send.calls()) != 0 {
				t.Fatal("a rejected call was made")
			}
			continue
		}
		wantStatus(t, res, trace.RunSucceeded)
		calls := send.calls()
		slices.Sort(calls)
		if got := strings.Join(calls, " "); got != "r/s[0]/1 r/s[1]/1" {
			t.Errorf("calls after the approval: %s, want each item once", got)
		}
	}
}

// TestFlowPolicyJoinsTheEngineGate: a flow's own policy: rules apply to
// its calls besides the engine's gate — on tool steps and plan steps —
// and the most severe decision wins.
func TestFlowPolicyJoinsTheEngineGate(t *testing.T) {
	t.Parallel()
	for _, engineGate := range []safety.Gate{nil, defaultGate()} {
		send := newKeyCounter("send", false)
		fx := newFixture(t, send)
		fx.script(scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "send", "steps": []any{
			map[string]any{"id": "a", "tool": "send", "args": map[string]any{"to": "x@example.com"}}}}})
		e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Gate: engineGate})
		f := fx.parse(`name: own
policy:
  rules:
    - {name: no-send-to-input, tools: [send], provenance: [user], verdict: block, reason: the input never names a recipient}
steps:
  - {id: s, tool: send, args: {to: "{input.to}"}}
`)
		res, err := e.Run(context.Background(), f, map[string]any{"to": "a@example.com"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantErrorClass(t, res, fault.Policy, "policy gate: block on tool send by rule no-send-to-input: the input never names a recipient (argument /to comes from user)")
		if len(send.calls()) != 0 {
			t.Fatal("the flow's rule did not stop the call")
		}
		// the flow's rules reach plan steps; the engine's default rules
		// still apply where they are on (a planner's value is inferred).
		f = fx.parse(`name: own_plan
policy:
  rules:
    - {name: review-sends, tools: [send], verdict: require_review}
steps:
  - {id: pl, type: plan, model: m, goal: "send", tools: [send], max_replans: 0}
`)
		res, err = e.Run(context.Background(), f, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// a rule's require_review on a call a model chose without a
		// declaration: the model declares and verifies first.
		want := "require_review on tool send by rule review-sends: it carries no declaration"
		if engineGate != nil {
			want = "require_approval on tool send by rule inferred-drives-effect"
		}
		if res.Error == nil || !strings.Contains(res.Error.Error(), want) || len(send.calls()) != 0 {
			t.Errorf("engine gate %v: run error %v, want %q", engineGate != nil, res.Error, want)
		}
	}
}

// TestFlowPolicyReachesAgentSteps: a flow's own policy: rules decide an
// agent step's calls and the steps of its execute_plan, besides the
// engine's gate (here none): each is refused, journaled with the rule,
// and the agent is told.
func TestFlowPolicyReachesAgentSteps(t *testing.T) {
	t.Parallel()
	send := newKeyCounter("send", false)
	fx := newFixture(t, send)
	fx.script(
		scripted.Reply{Step: "ag", Turn: 1, ToolCalls: []model.ToolCall{{Name: "send", Args: `{"to":"a@example.com"}`}}},
		scripted.Reply{Step: "ag", Turn: 2, ToolCalls: []model.ToolCall{{Name: "execute_plan",
			Args: `{"objective":"send","steps":[{"id":"a","tool":"send","args":{"to":"a@example.com"}}]}`}}},
		scripted.Reply{Step: "ag", Turn: 3, Output: "gave up"})
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events})
	f := fx.parse(`name: own_agent
policy:
  rules:
    - {name: no-agent-sends, tools: [send], verdict: block, reason: agents do not send}
steps:
  - {id: ag, type: agent, model: m, prompt_template: "send", tools: {send: }}
`)
	res, err := e.Run(context.Background(), f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if len(send.calls()) != 0 {
		t.Fatalf("send was called %d times past the flow's rule", len(send.calls()))
	}
	var decided []string
	for _, g := range gateDecisions(fx.events.all()) {
		if g.Tool == "send" {
			decided = append(decided, g.PlanStep+" "+g.Decision.Verdict+" "+g.Decision.Why)
		}
	}
	if len(decided) != 2 || decided[0] != " block rule no-agent-sends: agents do not send" || !strings.HasSuffix(decided[1], " block rule no-agent-sends: agents do not send") {
		t.Errorf("gate decisions on send: %q, want the agent's call and its plan step blocked by no-agent-sends", decided)
	}
}

// TestApprovalIsForTheRecordedCall: an approval covers the call it
// recorded; when the args to be sent are not those (here the record was
// changed behind the run's back), the step is asked about again and the
// tool is not called.
func TestApprovalIsForTheRecordedCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gate safety.Gate
		step string
	}{
		{"gate", defaultGate(), `{id: send_it, tool: send, args: {to: "{draft}"}}`},
		{"approval: required", nil, `{id: send_it, tool: send, approval: required, args: {to: "{draft}"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) { approvalIsForTheRecordedCall(t, tc.gate, tc.step) })
	}
}

func approvalIsForTheRecordedCall(t *testing.T, gate safety.Gate, step string) {
	ctx := context.Background()
	send := newKeyCounter("send", false)
	fx := newFixture(t, send)
	fx.script(scripted.Reply{Step: "draft", Output: "x@example.com"})
	path := filepath.Join(t.TempDir(), "rein.db")
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Store: st, Owner: "p1", Gate: gate})
	f := fx.parse("name: exact\nsteps:\n  - {id: draft, type: llm, model: m, prompt_template: \"write\"}\n  - " + step + "\n")
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE approvals SET args = ? WHERE run_id = 'r' AND step_id = 'send_it'`, []byte(`{"to":"someone-else@example.com"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "send_it", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Resume(ctx, f, "r"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(send.calls()) != 0 || len(res.Pending) != 1 || res.Pending[0].StepID != "send_it" || strings.Contains(string(res.Pending[0].Args), "someone-else") {
		t.Fatalf("send %d calls, pending %+v: want the step asked about again with its real args", len(send.calls()), res.Pending)
	}
}
