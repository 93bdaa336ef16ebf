package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// planTools are a lookup, a conversion and a notifier (effect external).
func planTools(t *testing.T, fail bool) ([]agent.Tool, *counted) {
	t.Helper()
	c := &counted{}
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":` + props + `,"additionalProperties":false}`)
	}
	lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.EffectRead, InputSchema: obj(`{"city":{"type":"string"}}`),
		OutputSchema: obj(`{"celsius":{"type":"number"}}`)}, func(ctx context.Context, args any) (any, error) {
		c.n.Add(1)
		c.mu.Lock()
		c.keys = append(c.keys, tool.CallInfoFrom(ctx).IdempotencyKey)
		c.mu.Unlock()
		return map[string]any{"celsius": 20.0}, nil
	})
	convert := tool.Func(tool.Spec{Name: "convert", Effect: tool.EffectNone, InputSchema: obj(`{"celsius":{"type":"number"}}`),
		OutputSchema: obj(`{"fahrenheit":{"type":"number"}}`)}, func(ctx context.Context, args any) (any, error) {
		c.n.Add(1)
		if fail {
			return nil, fault.Errorf(fault.Transient, "converter is down")
		}
		return map[string]any{"fahrenheit": args.(map[string]any)["celsius"].(float64)*9/5 + 32}, nil
	})
	notify := tool.Func(tool.Spec{Name: "notify", Effect: tool.EffectExternal, InputSchema: obj(`{"text":{}}`)},
		func(ctx context.Context, args any) (any, error) { c.n.Add(1); return map[string]any{"sent": true}, nil })
	return []agent.Tool{{Tool: lookup}, {Tool: convert}, {Tool: notify}}, c
}

func observation(t *testing.T, s *agent.Session, turn int) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s.Turns[turn-1].Calls[0].Observation), &m); err != nil {
		t.Fatalf("turn %d: observation %q: %v", turn, s.Turns[turn-1].Calls[0].Observation, err)
	}
	return m
}

const goodPlan = `{"objective":"weather in F","steps":[
 {"id":"w","tool":"lookup","args":{"city":"Oslo"}},
 {"id":"f","tool":"convert","args":{"celsius":{"$ref":"w.celsius"}}},
 {"id":"g","tool":"convert","depends_on":["f"],"args":{"celsius":{"$ref":"w.celsius"}}}]}`

func TestExecutePlanRejectsUnknownToolThenRuns(t *testing.T) {
	tools, c := planTools(t, false)
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("1", "execute_plan", `{"objective":"x","steps":[{"id":"w","tool":"lookup_weather","args":{"city":"Oslo"}}]}`)),
		callsReply(tc("2", "execute_plan", goodPlan)),
		textReply("68F"),
	}}
	l := newLoop(t, agent.Config{Model: m, Tools: tools, RunID: "r", StepID: "s", Attempt: 1, ExecutePlan: &agent.PlanOptions{}})
	s := &agent.Session{Task: "weather"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("run: %v %+v", err, res)
	}
	rej := observation(t, s, 1)
	if rej["success"] != false || rej["error_type"] != "invalid_plan" || !strings.Contains(rej["error"].(string), `/steps/0/tool: unknown tool "lookup_weather"`) {
		t.Fatalf("rejection: %v", rej)
	}
	ok := observation(t, s, 2)
	if ok["success"] != true || ok["objective"] != "weather in F" || len(ok["completed_steps"].([]any)) != 3 {
		t.Fatalf("plan answer: %v", ok)
	}
	if f := ok["result"].(map[string]any)["f"].(map[string]any)["fahrenheit"]; f != 68.0 {
		t.Fatalf("$ref result: %v", ok["result"])
	}
	if c.n.Load() != 3 || c.keys[0] != "r/s/1/turn2/call1/plan1/w" {
		t.Fatalf("calls %d keys %v: want 3 calls, keys extending the agent call's", c.n.Load(), c.keys)
	}
}

func TestExecutePlanRecursionGuard(t *testing.T) {
	tools, c := planTools(t, false)
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("1", "execute_plan", `{"objective":"x","steps":[{"id":"a","tool":"lookup","args":{}},{"id":"b","tool":"execute_plan","args":{}}]}`)),
		textReply("done"),
	}}
	l := newLoop(t, agent.Config{Model: m, Tools: tools, ExecutePlan: &agent.PlanOptions{}})
	s := &agent.Session{Task: "t"}
	if _, err := l.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if o := observation(t, s, 1); !strings.Contains(o["error"].(string), "/steps/1/tool") || !strings.Contains(o["error"].(string), "plans do not nest") {
		t.Fatalf("nested execute_plan: %v", o)
	}
	if c.n.Load() != 0 {
		t.Fatalf("%d calls ran for a rejected plan", c.n.Load())
	}
	// a loop running inside a plan refuses to start another one.
	m2 := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("1", "execute_plan", goodPlan)), textReply("done")}}
	l2 := newLoop(t, agent.Config{Model: m2, Tools: tools, ExecutePlan: &agent.PlanOptions{}})
	s2 := &agent.Session{Task: "t"}
	if _, err := l2.Run(agent.WithPlanRunning(context.Background()), s2); err != nil {
		t.Fatal(err)
	}
	if o := observation(t, s2, 1); o["error_type"] != "recursion" || c.n.Load() != 0 {
		t.Fatalf("inside a plan: %v (calls %d)", o, c.n.Load())
	}
	// disabled: not offered at all.
	m3 := &turns{replies: []func(*model.Request) *model.Response{textReply("x")}}
	if _, err := newLoop(t, agent.Config{Model: m3, Tools: tools}).Run(context.Background(), &agent.Session{Task: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range m3.requests[0].Tools {
		if d.Name == "execute_plan" {
			t.Fatal("execute_plan offered without ExecutePlan")
		}
	}
}

func TestExecutePlanExternalTools(t *testing.T) {
	for _, allow := range []bool{false, true} {
		tools, c := planTools(t, false)
		m := &turns{replies: []func(*model.Request) *model.Response{
			callsReply(tc("1", "execute_plan", `{"objective":"x","steps":[{"id":"w","tool":"lookup","args":{}},{"id":"n","tool":"notify","args":{"text":{"$ref":"w"}}}]}`)),
			textReply("done"),
		}}
		l := newLoop(t, agent.Config{Model: m, Tools: tools, ExecutePlan: &agent.PlanOptions{AllowExternal: allow}})
		s := &agent.Session{Task: "t"}
		if _, err := l.Run(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		o := observation(t, s, 1)
		if allow {
			if o["success"] != true || c.n.Load() != 2 {
				t.Fatalf("allow_external: %v (calls %d)", o, c.n.Load())
			}
			continue
		}
		if o["success"] != false || !strings.Contains(o["error"].(string), "/steps/1/tool") || !strings.Contains(o["error"].(string), "allow_external") || c.n.Load() != 0 {
			t.Fatalf("external tool: %v (calls %d)", o, c.n.Load())
		}
	}
}

func TestExecutePlanFailureKeepsLoopState(t *testing.T) {
	tools, c := planTools(t, true)
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("1", "execute_plan", goodPlan)),
		textReply("the converter is down"),
	}}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Tools: tools, Journal: j, ExecutePlan: &agent.PlanOptions{MaxSteps: 5},
		Budgets: agent.Budgets{MaxTurns: 2, MaxToolCalls: 1}})
	s := &agent.Session{Task: "t"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("run: %v %+v", err, res)
	}
	o := observation(t, s, 1)
	fs := o["failed_steps"].([]any)
	if o["success"] != false || o["error_type"] != "transient" || len(fs) != 1 || fs[0].(map[string]any)["id"] != "f" ||
		len(o["completed_steps"].([]any)) != 1 {
		t.Fatalf("failed plan: %v", o)
	}
	// the plan's two calls counted against its own budget, not the loop's:
	// one tool call of one, two turns of two, the transcript where it was.
	if c.n.Load() != 2 || res.Usage.ToolCalls != 1 || res.Usage.Turns != 2 || len(j.turns) != 2 || s.Turns[0].Calls[0].Status != agent.StatusOK {
		t.Fatalf("loop state after a failed plan: calls %d usage %+v journal %d", c.n.Load(), res.Usage, len(j.turns))
	}
	// a plan longer than max_steps is rejected before anything runs.
	m2 := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("1", "execute_plan", goodPlan)), textReply("x")}}
	l2 := newLoop(t, agent.Config{Model: m2, Tools: tools, ExecutePlan: &agent.PlanOptions{MaxSteps: 2}})
	s2 := &agent.Session{Task: "t"}
	if _, err := l2.Run(context.Background(), s2); err != nil {
		t.Fatal(err)
	}
	if o := observation(t, s2, 1); o["error_type"] != "budget" || c.n.Load() != 2 {
		t.Fatalf("too long: %v", o)
	}
	if _, err := agent.New(agent.Config{Model: m, Tools: append(tools, agent.Tool{Tool: tool.Func(tool.Spec{Name: "execute_plan"}, nil)}),
		ExecutePlan: &agent.PlanOptions{}}); err == nil || !strings.Contains(err.Error(), "execute_plan") {
		t.Fatalf("a tool named execute_plan: %v", err)
	}
}

func TestExecutePlanWaitsForEachApprovalStep(t *testing.T) {
	tools, c := planTools(t, false)
	tools[1].Approval = true // convert
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("1", "execute_plan", `{"objective":"weather in F","steps":[
 {"id":"w","tool":"lookup","args":{"city":"Oslo"}},
 {"id":"f","tool":"convert","args":{"celsius":{"$ref":"w.celsius"}}},
 {"id":"g","tool":"convert","args":{"celsius":{"$ref":"w.celsius"}}}]}`)),
		textReply("68F"),
	}}
	l := newLoop(t, agent.Config{Model: m, Tools: tools, RunID: "r", StepID: "s", Attempt: 1, ExecutePlan: &agent.PlanOptions{}})
	s := &agent.Session{Task: "weather"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 2 {
		t.Fatalf("run: %v %+v", err, res)
	}
	refs := map[string]agent.Pending{}
	for _, p := range res.Pending {
		refs[p.Ref] = p
	}
	if p := refs["turn1/call1/f"]; p.Tool != "convert" || p.Args != `{"celsius":20}` || refs["turn1/call1/g"].Tool != "convert" {
		t.Fatalf("pending %+v: want one per waiting plan step with its resolved args", res.Pending)
	}
	if c.n.Load() != 1 {
		t.Fatalf("%d calls before approval, want the lookup only", c.n.Load())
	}
	// one decided, the other not: the plan still waits, nothing runs
	s.Decisions = map[string]agent.Decision{"turn1/call1/f": {Verdict: agent.Approve}}
	res, err = l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Ref != "turn1/call1/g" || c.n.Load() != 1 {
		t.Fatalf("half decided: %v %+v, %d calls", err, res, c.n.Load())
	}
	s.Decisions["turn1/call1/g"] = agent.Decision{Verdict: agent.Reject, Comment: "not in Fahrenheit"}
	res, err = l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("decided: %v %+v", err, res)
	}
	ans := observation(t, s, 1)
	failed, _ := ans["failed_steps"].([]any)
	if ans["success"] != false || len(failed) != 1 || !strings.Contains(failed[0].(map[string]any)["error"].(string), "rejected by a person: not in Fahrenheit") {
		t.Fatalf("answer %v", ans)
	}
	if c.n.Load() != 2 || c.keys[0] != "r/s/1/turn1/call1/plan1/w" || len(c.keys) != 1 {
		t.Fatalf("%d calls, lookup keys %v: want the lookup once and the approved convert", c.n.Load(), c.keys)
	}
}

func TestExecutePlanApprovedStepRunsOnlyWithTheApprovedArgs(t *testing.T) {
	tools, c := planTools(t, false)
	tools[1].Approval = true // convert
	m := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("1", "execute_plan", goodPlan)), textReply("68F")}}
	l := newLoop(t, agent.Config{Model: m, Tools: tools, RunID: "r", StepID: "s", Attempt: 1, ExecutePlan: &agent.PlanOptions{}})
	s := &agent.Session{Task: "weather"}
	if res, err := l.Run(context.Background(), s); err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	// the step would now run with other args than those a person approved
	s.Turns[0].Calls[0].Plan.Waiting[0].Args = `{"celsius":21}`
	s.Decisions = map[string]agent.Decision{"turn1/call1/f": {Verdict: agent.Approve}}
	if res, err := l.Run(context.Background(), s); err != nil || res.Status != agent.StatusAnswered {
		t.Fatalf("decided: %v %+v", err, res)
	}
	ans := observation(t, s, 1)
	if ans["success"] != false || ans["error_type"] != "conflict" || !strings.Contains(ans["error"].(string), `was approved with args "{\"celsius\":21}"`) || c.n.Load() != 1 {
		t.Fatalf("answer %v after %d calls", ans, c.n.Load())
	}
}

// TestExecutePlanSubRunLeavesTheLoopWhereItWas: whatever happens inside a
// plan — a step fails, the plan is over its step budget, a tool panics —
// the plan is a sub-run of its own (delimited in the journal, its own
// status and budget) and the agent goes on at the next turn with its
// transcript and budgets as they were: the plan's calls are not tool
// calls of the loop.
func TestExecutePlanSubRunLeavesTheLoopWhereItWas(t *testing.T) {
	cases := []struct {
		name     string
		fail     bool
		maxSteps int
		plan     string
		// want: the answer's error_type, the sub-run's status and steps, the journal's sub-run records
		errorType, status, steps, records string
	}{
		{"step fails", true, 5, goodPlan, "transient", "failed", "w:succeeded f:failed g:not_run",
			"plan_started 1/1 running,plan_step_started 1/1 w,plan_step_settled 1/1 w,plan_step_started 1/1 f,plan_step_settled 1/1 f,plan_finished 1/1 failed"},
		{"over budget", false, 2, goodPlan, "budget", "rejected", "", "plan_rejected 1/1 "},
		{"tool panics", false, 5, `{"objective":"x","steps":[{"id":"w","tool":"lookup","args":{"city":"Oslo"}},{"id":"b","tool":"boom","depends_on":["w"],"args":{}}]}`,
			"business", "failed", "w:succeeded b:failed",
			"plan_started 1/1 running,plan_step_started 1/1 w,plan_step_settled 1/1 w,plan_step_started 1/1 b,plan_step_settled 1/1 b,plan_finished 1/1 failed"},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			tools, _ := planTools(t, cs.fail)
			tools = append(tools, agent.Tool{Tool: tool.Func(tool.Spec{Name: "boom", Effect: tool.EffectNone}, func(context.Context, any) (any, error) {
				panic("boom")
			})})
			m := &turns{replies: []func(*model.Request) *model.Response{
				callsReply(tc("p", "execute_plan", cs.plan)),
				callsReply(tc("l", "lookup", `{"city":"Bergen"}`)),
				textReply("done"),
			}}
			j := &planJournal{}
			l := newLoop(t, agent.Config{Model: m, Tools: tools, Journal: j, RunID: "r", StepID: "s", Attempt: 1,
				ExecutePlan: &agent.PlanOptions{MaxSteps: cs.maxSteps}, Budgets: agent.Budgets{MaxTurns: 3, MaxToolCalls: 2}})
			s := &agent.Session{Task: "t"}
			res, err := l.Run(context.Background(), s)
			if err != nil || res.Status != agent.StatusAnswered || res.Answer != "done" {
				t.Fatalf("run: %v %+v: the agent did not go on after the plan", err, res)
			}
			if res.Usage.Turns != 3 || res.Usage.ToolCalls != 2 || len(j.turns) != 3 || m.calls() != 3 {
				t.Fatalf("usage %+v, %d turns journaled, %d model calls: want 3 turns and 2 tool calls", res.Usage, len(j.turns), m.calls())
			}
			// turn 2 saw the plan's answer right after turn 1's call, and turn 3 the lookup's.
			msgs := m.requests[1].Messages
			if last := msgs[len(msgs)-1]; m.requests[1].Turn != 2 || last.ToolCallID != "p" || !strings.Contains(last.Content, `"success":false`) {
				t.Fatalf("turn 2 request (turn %d) ends with %+v", m.requests[1].Turn, last)
			}
			if s.Turns[1].Calls[0].Status != agent.StatusOK || s.Turns[1].Calls[0].Key != "r/s/1/turn2/call1" {
				t.Fatalf("the call after the plan: %+v", s.Turns[1].Calls[0])
			}
			o := observation(t, s, 1)
			if o["success"] != false || o["error_type"] != cs.errorType {
				t.Fatalf("answer %v, want error_type %s", o, cs.errorType)
			}
			pr := s.Turns[0].Calls[0].PlanRun
			if pr == nil || string(pr.Status) != cs.status || pr.MaxSteps != cs.maxSteps || pr.ErrorType != cs.errorType {
				t.Fatalf("sub-run %+v, want status %s", pr, cs.status)
			}
			var steps []string
			for _, st := range pr.Steps {
				steps = append(steps, st.ID+":"+st.Status)
			}
			if got := strings.Join(steps, " "); got != cs.steps {
				t.Errorf("sub-run steps %q, want %q", got, cs.steps)
			}
			if got := strings.Join(j.events, ","); got != cs.records {
				t.Errorf("journal records\n %s\nwant\n %s", got, cs.records)
			}
			if cs.name == "tool panics" && !strings.Contains(o["failed_steps"].([]any)[0].(map[string]any)["error"].(string), "panicked: boom") {
				t.Errorf("the panic does not reach the answer: %v", o)
			}
		})
	}
}

// TestExecutePlanWaitsForTheGatesApproval: a plan step the policy gate
// answers require_approval pauses the loop like a declared approval:
// nothing of it runs, the call waits with the step's resolved args; once
// approved the plan continues (the lookup is not repeated) and the step
// runs with Approved, which the gate honours.
func TestExecutePlanWaitsForTheGatesApproval(t *testing.T) {
	tools, c := planTools(t, false)
	gate := &safety.Policy{Rules: []safety.Rule{{Name: "convert-by-hand", Tools: []string{"convert"}, Verdict: safety.RequireApproval, Reason: "check units"}}}
	m := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("1", "execute_plan", goodPlan)), textReply("68F")}}
	j := &planJournal{}
	l := newLoop(t, agent.Config{Model: m, Tools: tools, Journal: j, RunID: "r", StepID: "s", Attempt: 1, ExecutePlan: &agent.PlanOptions{},
		Pipeline: &invoke.Pipeline{Gate: gate}})
	s := &agent.Session{Task: "weather"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	p := res.Pending[0]
	if p.Ref != "turn1/call1/f" || p.Tool != "convert" || p.Args != `{"celsius":20}` || !strings.Contains(p.Reason, "rule convert-by-hand: check units") {
		t.Fatalf("pending %+v", p)
	}
	if pr := s.Turns[0].Calls[0].PlanRun; pr == nil || pr.Status != agent.PlanWaiting || pr.Executed != 1 {
		t.Fatalf("sub-run %+v", pr)
	}
	if c.n.Load() != 1 {
		t.Fatalf("%d calls before approval, want the lookup only", c.n.Load())
	}
	// f runs approved; g (after f, converting too) now waits in turn.
	s.Decisions = map[string]agent.Decision{"turn1/call1/f": {Verdict: agent.Approve}}
	res, err = l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Ref != "turn1/call1/g" || c.n.Load() != 2 {
		t.Fatalf("approved f: %v %+v after %d calls", err, res, c.n.Load())
	}
	s.Decisions["turn1/call1/g"] = agent.Decision{Verdict: agent.Reject, Comment: "enough"}
	res, err = l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered || c.n.Load() != 2 {
		t.Fatalf("rejected g: %v %+v after %d calls", err, res, c.n.Load())
	}
	ans := observation(t, s, 1)
	if ans["success"] != false || fmt.Sprint(ans["completed_steps"]) != "[w f]" ||
		!strings.Contains(fmt.Sprint(ans["failed_steps"]), "rejected by a person: enough") {
		t.Fatalf("answer %v", ans)
	}
	var finished []string
	for _, e := range j.events {
		if strings.HasPrefix(e, "plan_started") || strings.HasPrefix(e, "plan_finished") {
			finished = append(finished, e)
		}
	}
	if got := strings.Join(finished, ","); got != "plan_started 1/1 running,plan_finished 1/1 waiting,plan_started 1/1 running,plan_finished 1/1 waiting,plan_started 1/1 running,plan_finished 1/1 failed" {
		t.Fatalf("sub-run records %s", got)
	}
}
