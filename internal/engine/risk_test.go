package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// tierGate is an engine gate that allows every call and remembers the
// tier each one was decided at.
type tierGate struct {
	mu    sync.Mutex
	tiers map[string]int
}

func (g *tierGate) Check(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tiers == nil {
		g.tiers = map[string]int{}
	}
	g.tiers[inv.Tool.Name] = inv.Tier
	return safety.Decision{Verdict: safety.Allow}, nil
}

// tierChanges returns the run's risk_tier events, decoded.
func tierChanges(t *testing.T, events []trace.Event) []journal.TierChange {
	t.Helper()
	var out []journal.TierChange
	for _, ev := range events {
		if ev.Kind == trace.RiskTier {
			c, err := journal.DecodeTierChange(ev.Data)
			if err != nil {
				t.Fatalf("risk_tier data %q: %v", ev.Data, err)
			}
			out = append(out, *c)
		}
	}
	return out
}

func actionClaim(toolName string) string {
	return fmt.Sprintf("calling tool %s with these args is what the user's input asks for, and the args are supported by the input and the tool results", toolName)
}

func verdicts(supported bool, evidence string, claims ...string) map[string]any {
	vs := make([]any, len(claims))
	for i, c := range claims {
		vs[i] = map[string]any{"claim": c, "supported": supported, "evidence": evidence}
	}
	return map[string]any{"verdicts": vs}
}

func readTool(name string, out any) tool.Tool {
	return tool.Func(tool.Spec{Name: name, Effect: tool.EffectRead}, func(context.Context, any) (any, error) { return out, nil })
}

// TestRiskTierAssessedAndRaised: the tier is assessed at intake from the
// flow's tool steps, raised once a plan is known (before its first step
// runs), never lowered by the read that follows; each change is journaled
// with its stage and reasons, and every call's Invocation carries the
// tier at its time.
func TestRiskTierAssessedAndRaised(t *testing.T) {
	t.Parallel()
	save := newKeyCounter("save", false)
	purge := &keyCounter{spec: tool.Spec{Name: "purge", Effect: tool.EffectDestructive}}
	fx := newFixture(t, save, purge, readTool("lookup", map[string]any{"ok": true}))
	fx.script(
		scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "purge", "steps": []any{
			map[string]any{"id": "p", "tool": "purge", "args": map[string]any{"id": "1"}}}}},
		scripted.Reply{Step: "pl", Decision: "review", Output: verdicts(true, "the input asks for it", actionClaim("purge"))},
	)
	gate := &tierGate{}
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Gate: gate,
		Review: &safety.ReviewConfig{Model: "rev"}})
	f := fx.parse(`name: tiers
steps:
  - {id: save, tool: save, args: {id: "{input.id}"}}
  - {id: pl, type: plan, model: m, goal: "purge {input.id}", tools: [purge], max_replans: 0}
  - {id: look, tool: lookup, args: {q: "x"}}
`)
	res, err := e.Run(context.Background(), f, map[string]any{"id": "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	changes := tierChanges(t, fx.events.all())
	if len(changes) != 2 {
		t.Fatalf("tier changes %+v, want intake then plan", changes)
	}
	if c := changes[0]; c.Stage != "intake" || c.Tier != 2 || c.From != 0 || !strings.Contains(strings.Join(c.Reasons, "\n"), "effect: tool save has effect write (tier 2)") {
		t.Errorf("intake %+v", c)
	}
	if c := changes[1]; c.Stage != "plan" || c.Tier != 3 || c.From != 2 || !strings.Contains(strings.Join(c.Reasons, "\n"), "effect: tool purge is destructive (tier 3)") {
		t.Errorf("plan %+v", c)
	}
	if gate.tiers["save"] != 2 || gate.tiers["purge"] != 3 || gate.tiers["lookup"] != 3 {
		t.Errorf("tiers the gate saw: %v, want save 2, purge 3, lookup 3 (never lowered)", gate.tiers)
	}
	for _, ev := range fx.events.all() {
		if ev.Kind == trace.RiskTier && ev.StepID == "pl" && ev.Decision == "tier 3" {
			return
		}
	}
	t.Error("the plan's raise does not name its step and tier in the event")
}

// TestRiskTierControls runs one side-effect step at each tier and checks
// the controls it gets: 1 and 2 none beyond the rules, 3 the reviewer
// (supported → runs; unsupported → parks for a person, naming the
// claim), 4 a person's approval and the post-check.
func TestRiskTierControls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const flowText = `name: ctl
risk: {min_tier: %d, post_check: verify}
review: {model: rev}
steps:
  - {id: look, tool: lookup, args: {q: "{input.q}"}}
  - {id: save, tool: save, args: {id: "{input.q}"}}
`
	cases := []struct {
		name    string
		tier    int
		review  map[string]any // the reviewer's answer; nil: not asked
		status  trace.RunStatus
		saves   int
		message string // of the pending approval
	}{
		{name: "tier 1 (floor below the write)", tier: 1, status: trace.RunSucceeded, saves: 1},
		{name: "tier 2", tier: 2, status: trace.RunSucceeded, saves: 1},
		{name: "tier 3, claims supported", tier: 3, review: verdicts(true, "input q=7", actionClaim("save")), status: trace.RunSucceeded, saves: 1},
		{name: "tier 3, a claim unsupported", tier: 3, review: verdicts(false, "nothing says to save 7", actionClaim("save")), status: trace.RunWaiting,
			message: `rule reviewer: the reviewer found claims unsupported: "` + actionClaim("save") + `" (nothing says to save 7)`},
		{name: "tier 4", tier: 4, review: verdicts(true, "input q=7", actionClaim("save")), status: trace.RunWaiting,
			message: "rule tier-approval: at risk tier 4 a person approves every side-effect call"},
	}
	for _, tc := range cases {
		save := newKeyCounter("save", false)
		var checked []any
		verify := tool.Func(tool.Spec{Name: "verify", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
			checked = append(checked, args)
			return map[string]any{"ok": false, "reason": "the record is not there"}, nil
		})
		fx := newFixture(t, save, verify, readTool("lookup", map[string]any{"found": "7"}))
		rev := &recordingModel{}
		if tc.review != nil {
			rev.m = scripted.New([]scripted.Reply{{Step: "save", Decision: "review", Output: tc.review}})
		}
		fx.models.Register("rev", rev)
		st := openSQLite(t)
		e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: st, Owner: "p"})
		f := fx.parse(fmt.Sprintf(flowText, tc.tier))
		res, err := e.Run(ctx, f, map[string]any{"q": "7"}, &engine.RunOptions{RunID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != tc.status || len(save.calls()) != tc.saves {
			t.Fatalf("%s: status %s (%v), %d saves; want %s, %d", tc.name, res.Status, res.Error, len(save.calls()), tc.status, tc.saves)
		}
		if (tc.review != nil) != (len(rev.requests()) == 1) {
			t.Errorf("%s: reviewer asked %d times", tc.name, len(rev.requests()))
		}
		if tc.message != "" {
			if len(res.Pending) != 1 || res.Pending[0].StepID != "save" || !strings.Contains(res.Pending[0].Message, tc.message) {
				t.Fatalf("%s: pending %+v, want save waiting with %q", tc.name, res.Pending, tc.message)
			}
		}
		if tc.review != nil {
			var seen bool
			for _, ev := range fx.events.all() {
				if ev.Kind == trace.ReviewDone && ev.StepID == "save" && ev.Tool == "save" {
					r, err := journal.DecodeReview(ev.Data)
					if err != nil || len(r.Claims) != 1 || r.Claims[0].Claim != actionClaim("save") || r.Verdict != ev.Decision {
						t.Errorf("%s: review record %+v (%v)", tc.name, r, err)
					}
					seen = true
				}
			}
			if !seen {
				t.Errorf("%s: no review event", tc.name)
			}
		}
		if tc.tier != 4 {
			continue
		}
		// approved: the call is made, then the post-check, which fails the run.
		if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "save", Status: store.ApprovalApproved}); err != nil {
			t.Fatal(err)
		}
		if res, err = e.Resume(ctx, f, "r"); err != nil {
			t.Fatal(err)
		}
		if len(save.calls()) != 1 || len(checked) != 1 {
			t.Fatalf("after approval: %d saves, %d post-checks", len(save.calls()), len(checked))
		}
		if a := checked[0].(map[string]any); a["tool"] != "save" || a["args"].(map[string]any)["id"] != "7" || a["output"] == nil {
			t.Errorf("post-check args %v", a)
		}
		wantErrorClass(t, res, fault.Policy, "tool save had its effect, and its post-check failed: post-check verify: the record is not there")
	}
}

// recordingModel answers through m and keeps every request it received.
type recordingModel struct {
	mu   sync.Mutex
	m    model.Model
	reqs []*model.Request
}

func (r *recordingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	r.mu.Lock()
	c := *req
	c.Messages = append([]model.Message(nil), req.Messages...)
	r.reqs = append(r.reqs, &c)
	m := r.m
	r.mu.Unlock()
	if m == nil {
		return nil, fault.Errorf(fault.Business, "no reviewer answer scripted")
	}
	return m.Generate(ctx, req)
}

func (r *recordingModel) requests() []*model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs
}

func (r *recordingModel) text() string {
	var b strings.Builder
	for _, q := range r.requests() {
		for _, m := range q.Messages {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestReviewerSeesOnlyTheEvidence: the request the reviewer's model
// received holds the user's input, the recorded tool results and the
// pending action, and none of the planner's prompt or plan text.
func TestReviewerSeesOnlyTheEvidence(t *testing.T) {
	t.Parallel()
	save := newKeyCounter("save", false)
	fx := newFixture(t, save, readTool("lookup", map[string]any{"email": "ann@example.com"}))
	fx.script(scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "PLANNER-GOAL-REASONING", "steps": []any{
		map[string]any{"id": "p", "tool": "save", "args": map[string]any{"id": "ann-42"}}}}})
	rev := &recordingModel{m: scripted.New([]scripted.Reply{{Step: "pl", Decision: "review", Output: verdicts(true, "input", actionClaim("save"))}})}
	fx.models.Register("rev", rev)
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events,
		Risk: &safety.RiskConfig{MinTier: 3}, Review: &safety.ReviewConfig{Model: "rev"}})
	f := fx.parse(`name: iso
steps:
  - {id: look, tool: lookup, args: {q: "{input.customer}"}}
  - {id: pl, type: plan, model: m, goal: "PLANNER-PROMPT-7 onboard {input.customer}", tools: [save], max_replans: 0}
`)
	res, err := e.Run(context.Background(), f, map[string]any{"customer": "Ann Example"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if len(rev.requests()) != 1 || rev.requests()[0].Decision != "review" {
		t.Fatalf("reviewer requests %+v", rev.requests())
	}
	got := rev.text()
	for _, want := range []string{"Ann Example", "ann@example.com", `"tool": "save"`, "ann-42", actionClaim("save")} {
		if !strings.Contains(got, want) {
			t.Errorf("the reviewer did not see %q:\n%s", want, got)
		}
	}
	for _, never := range []string{"PLANNER-PROMPT-7", "PLANNER-GOAL-REASONING"} {
		if strings.Contains(got, never) {
			t.Errorf("the reviewer saw the planner's %q:\n%s", never, got)
		}
	}
}

// agentModel answers an agent's turns from turns (text and tool calls)
// and the reviewer from review, keeping the reviewer's requests.
type agentModel struct {
	mu     sync.Mutex
	turns  []model.Response
	review map[string]any
	rev    recordingModel
}

func (a *agentModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req.Decision == "review" {
		b, _ := json.Marshal(a.review)
		a.rev.m = fixedText(string(b))
		return a.rev.Generate(ctx, req)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.turns[0]
	a.turns = a.turns[1:]
	return &r, nil
}

type fixedText string

func (f fixedText) Generate(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Text: string(f)}, nil
}

// TestReviewerNeverSeesTheAgentsReasoning: an agent's instructions and
// the text it wrote beside its tool calls never reach the reviewer; the
// user's input and the tool result it got do.
func TestReviewerNeverSeesTheAgentsReasoning(t *testing.T) {
	t.Parallel()
	got := reviewAgent(t, [2]string{"AGENT-REASONING-1: look it up first", "AGENT-REASONING-2: the plan is gold, so save"},
		`    instructions: "AGENT-INSTRUCTIONS-9: be quick"
    prompt_template: "help {input.customer}"
`, map[string]any{"customer": "ann"})
	for _, want := range []string{`"customer": "ann"`, "gold", `"tool": "save"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the reviewer did not see %q:\n%s", want, got)
		}
	}
	for _, never := range []string{"AGENT-REASONING", "AGENT-INSTRUCTIONS-9", "help ann"} {
		if strings.Contains(got, never) {
			t.Errorf("the reviewer saw the agent's %q:\n%s", never, got)
		}
	}
}

// reviewAgent runs a tier-3 agent step (its instructions and
// prompt_template given as YAML lines) whose model looks ann up and then
// saves her, writing texts beside the two calls, and returns what the
// reviewer of the save received.
func reviewAgent(t *testing.T, texts [2]string, step string, input map[string]any) string {
	t.Helper()
	save := newKeyCounter("save", false)
	fx := newFixture(t, save, readTool("lookup", map[string]any{"plan": "gold"}))
	m := &agentModel{
		turns: []model.Response{
			{Text: texts[0], ToolCalls: []model.ToolCall{call("a", "lookup", `{"q":"ann"}`)}},
			{Text: texts[1], ToolCalls: []model.ToolCall{call("b", "save", `{"id":"ann"}`)}},
			{Text: "done"},
		},
		review: verdicts(true, "the input names ann", actionClaim("save")),
	}
	fx.models.Register("m", m)
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events,
		Risk: &safety.RiskConfig{MinTier: 3}, Review: &safety.ReviewConfig{Model: "m"}})
	// execute_plan: false: the agent calls save directly (with execute_plan,
	// tier 3 would make it plan: TestAgentMustPlanAtTierThree)
	f := fx.parse("name: ag\nsteps:\n  - id: helper\n    type: agent\n    model: m\n    execute_plan: false\n    tools: {lookup: , save: }\n" + step)
	res, err := e.Run(context.Background(), f, input, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if len(save.calls()) != 1 || len(m.rev.requests()) != 1 {
		t.Fatalf("%d saves, %d reviews", len(save.calls()), len(m.rev.requests()))
	}
	return m.rev.text()
}

// TestRiskTierSurvivesResume: a run raised to tier 3 by its plan, parked
// on an approval and resumed in another engine, goes on at tier 3 — the
// resume's intake assessment (tier 2) does not lower it — and journals no
// change.
func TestRiskTierSurvivesResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSQLite(t)
	save := newKeyCounter("save", false)
	purge := &keyCounter{spec: tool.Spec{Name: "purge", Effect: tool.EffectDestructive}}
	fx := newFixture(t, save, purge, readTool("lookup", map[string]any{"ok": true}))
	fx.script(
		scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "purge", "steps": []any{
			map[string]any{"id": "p", "tool": "purge", "args": map[string]any{"id": "1"}}}}},
		scripted.Reply{Step: "pl", Decision: "review", Output: verdicts(true, "asked", actionClaim("purge"))},
	)
	f := fx.parse(`name: resumed
steps:
  - {id: save, tool: save, args: {id: "{input.id}"}}
  - {id: pl, type: plan, model: m, goal: "purge {input.id}", tools: [purge], max_replans: 0}
  - {id: wait, type: approval, message: "go on?"}
  - {id: look, tool: lookup, args: {q: "x"}}
`)
	engineWith := func(g *tierGate) *engine.Engine {
		return engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: st, Owner: "p",
			Gate: g, Review: &safety.ReviewConfig{Model: "rev"}})
	}
	res, err := engineWith(&tierGate{}).Run(ctx, f, map[string]any{"id": "1"}, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "wait", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	g := &tierGate{}
	if res, err = engineWith(g).Resume(ctx, f, "r"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if g.tiers["lookup"] != 3 {
		t.Errorf("after the resume lookup was decided at tier %d, want 3", g.tiers["lookup"])
	}
	stored, err := st.Events(ctx, "r", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]trace.Event, len(stored))
	for i, e := range stored {
		evs[i] = *e
	}
	changes := tierChanges(t, evs)
	if len(changes) != 2 || changes[0].Tier != 2 || changes[1].Tier != 3 {
		t.Errorf("journaled tier changes %+v, want 2 (intake) and 3 (plan) only", changes)
	}
}

// TestFanOutRaisesTheTier: a for_each step whose items are more than
// max_fan_out raises the tier: at intake when the input alone gives them,
// otherwise when the step starts, before its calls.
func TestFanOutRaisesTheTier(t *testing.T) {
	t.Parallel()
	save := newKeyCounter("save", false)
	fx := newFixture(t, save)
	fx.models.Register("rev", &recordingModel{})
	gate := &tierGate{}
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Gate: gate,
		Risk: &safety.RiskConfig{MaxFanOut: 3}, Review: &safety.ReviewConfig{Model: "rev", MinTier: 4}})
	f := fx.parse(`name: fan
steps:
  - {id: each, tool: save, for_each: "input.ids", args: {id: "{item}"}}
`)
	for _, n := range []int{3, 4} {
		ids := make([]any, n)
		for i := range ids {
			ids[i] = fmt.Sprint(i)
		}
		res, err := e.Run(context.Background(), f, map[string]any{"ids": ids}, &engine.RunOptions{RunID: fmt.Sprint("r", n)})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res, trace.RunSucceeded)
		var changes []journal.TierChange
		var raisedBy string
		for _, ev := range fx.events.all() {
			if ev.Kind == trace.RiskTier && ev.RunID == res.RunID {
				c, _ := journal.DecodeTierChange(ev.Data)
				changes = append(changes, *c)
				raisedBy = ev.StepID
			}
		}
		want := 2
		if n == 4 {
			want = 3
			// the input alone gives the items: known at intake.
			if len(changes) != 2 || changes[1].Stage != "intake" || raisedBy != "each" ||
				!strings.Contains(strings.Join(changes[1].Reasons, "\n"), "fans out to 4 calls with side effects (max_fan_out 3)") {
				t.Errorf("%d items: changes %+v", n, changes)
			}
		}
		if gate.tiers["save"] != want {
			t.Errorf("%d items: the calls were decided at tier %d, want %d", n, gate.tiers["save"], want)
		}
	}
}

// TestFanOutFromAnUpstreamStep: items an upstream step produces are
// assessed when the for_each step starts (stage step).
func TestFanOutFromAnUpstreamStep(t *testing.T) {
	t.Parallel()
	save := newKeyCounter("save", false)
	fx := newFixture(t, save, readTool("list_ids", map[string]any{"ids": []any{"a", "b", "c", "d"}}))
	fx.models.Register("rev", &recordingModel{})
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Gate: &tierGate{},
		Risk: &safety.RiskConfig{MaxFanOut: 3}, Review: &safety.ReviewConfig{Model: "rev", MinTier: 4}})
	res, err := e.Run(context.Background(), fx.parse(`name: fan2
steps:
  - {id: ids, tool: list_ids, args: {}}
  - {id: each, tool: save, for_each: "ids.ids", args: {id: "{item}"}}
`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	changes := tierChanges(t, fx.events.all())
	if len(changes) != 2 || changes[1].Stage != "step" || changes[1].Tier != 3 {
		t.Errorf("changes %+v, want intake 2 then step 3", changes)
	}
}

// TestReviewerSeesTheRunsEvidence: the reviewer's request is built from
// the run's one evidence record (safety.Evidence): of a chat's history it
// sees the user's messages, never what the assistant said in earlier
// exchanges (the agent's transcript), and it sees the tool results.
func TestReviewerSeesTheRunsEvidence(t *testing.T) {
	t.Parallel()
	got := reviewAgent(t, [2]string{}, `    instructions: "save customers"
    prompt_template: "{input.message}"
`, map[string]any{"message": "USER-NOW: save ann", "history": []any{
		map[string]any{"role": "user", "content": "USER-BEFORE: who is ann?"},
		map[string]any{"role": "assistant", "content": "ASSISTANT-BEFORE: I think ann should be saved"},
	}})
	for _, want := range []string{"USER-NOW", "USER-BEFORE", "gold", `"tool": "save"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the reviewer did not see %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ASSISTANT-BEFORE") {
		t.Errorf("the reviewer saw what the assistant said before:\n%s", got)
	}
}
