package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

func TestAnswerAfterToolCall(t *testing.T) {
	t.Parallel()
	var c counted
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "lookup", `{"order":"1042"}`)),
		textReply("order 1042 shipped"),
	}}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Instructions: "be brief", RunID: "r", StepID: "s", Attempt: 1, Journal: j,
		Tools: []agent.Tool{{Tool: c.tool("lookup", tool.EffectRead, false, nil)}}})
	s := &agent.Session{Task: "where is 1042?"}
	res, err := l.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusAnswered || res.Answer != "order 1042 shipped" {
		t.Fatalf("result %+v", res)
	}
	if got := res.Usage; got != (agent.Usage{Turns: 2, ToolCalls: 1, LLMCalls: 2, TokensIn: 20, TokensOut: 10}) {
		t.Errorf("usage %+v", got)
	}
	if c.keys[0] != "r/s/1/turn1/call1" {
		t.Errorf("key %q", c.keys[0])
	}
	// the second turn sees the instructions, the task, the call and its observation
	msgs := m.requests[1].Messages
	if len(msgs) != 4 || msgs[0].Role != model.System || msgs[2].ToolCalls[0].Args != `{"order":"1042"}` ||
		msgs[3].Role != model.Tool || msgs[3].Content != `{"order":"1042","status":"shipped"}` {
		t.Fatalf("messages %+v", msgs)
	}
	if err := model.CheckRequest(m.requests[1]); err != nil {
		t.Errorf("the loop built a request providers refuse: %v", err)
	}
	if len(j.turns) != 2 || j.calls != 1 || j.turns[0].Calls[0].Status != agent.StatusOK {
		t.Errorf("journal %+v, %d call commits", j.turns, j.calls)
	}
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	endless := func(*model.Request) *model.Response {
		return &model.Response{ToolCalls: []model.ToolCall{tc("x", "lookup", `{"order":"1"}`)}, Usage: model.Usage{In: 100, Out: 100}}
	}
	many := make([]model.ToolCall, 10000)
	for i := range many {
		many[i] = tc("c"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "lookup", `{"order":"1"}`)
	}
	tests := []struct {
		name    string
		budgets agent.Budgets
		reply   func(*model.Request) *model.Response
		started time.Time
		ran     int64
	}{
		{"max_turns", agent.Budgets{MaxTurns: 3, MaxToolCalls: 100}, endless, time.Time{}, 3},
		{"max_tool_calls", agent.Budgets{MaxTurns: 100, MaxToolCalls: 100},
			func(*model.Request) *model.Response { return &model.Response{ToolCalls: many} }, time.Time{}, 0},
		{"max_tokens", agent.Budgets{MaxTurns: 100, MaxToolCalls: 100, MaxTokens: 500}, endless, time.Time{}, 2},
		{"timeout", agent.Budgets{Timeout: time.Minute}, endless, time.Now().Add(-time.Hour), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c counted
			replies := make([]func(*model.Request) *model.Response, 200)
			for i := range replies {
				replies[i] = tt.reply
			}
			l := newLoop(t, agent.Config{Model: &turns{replies: replies}, Budgets: tt.budgets,
				Tools: []agent.Tool{{Tool: c.tool("lookup", tool.EffectRead, false, nil)}}})
			_, err := l.Run(context.Background(), &agent.Session{Task: "loop", Started: tt.started})
			if fault.ClassOf(err) != fault.Budget || fault.BudgetOf(err) != tt.name {
				t.Fatalf("want the %s budget's error, got %v (class %s, budget %q)", tt.name, err, fault.ClassOf(err), fault.BudgetOf(err))
			}
			if got := c.n.Load(); got != tt.ran {
				t.Errorf("%d calls ran, want %d", got, tt.ran)
			}
		})
	}
}

func TestInvalidCallsBecomeObservations(t *testing.T) {
	t.Parallel()
	var c counted
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "refund_everything", `{}`), tc("b", "lookup", `{"order": 1042}`),
			tc("c", "lookup", `{"order": "10`), tc("d", "lookup", `[1]`)),
		textReply("sorry"),
	}}
	l := newLoop(t, agent.Config{Model: m, Tools: []agent.Tool{{Tool: c.tool("lookup", tool.EffectRead, false, nil)}}})
	s := &agent.Session{Task: "t"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	if c.n.Load() != 0 {
		t.Fatalf("%d invalid calls executed", c.n.Load())
	}
	want := []string{`there is no tool "refund_everything"; the tools are lookup`, `at /order: got number, want string`,
		`the arguments are not JSON`, `at (root): the arguments must be a JSON object`}
	for i, w := range want {
		call := s.Turns[0].Calls[i]
		if call.Status != agent.StatusInvalid || !strings.Contains(call.Observation, w) {
			t.Errorf("call %d: %s %q, want invalid with %q", i, call.Status, call.Observation, w)
		}
	}
	if res.Usage.Turns != 2 {
		t.Errorf("an invalid call costs its turn: %d turns", res.Usage.Turns)
	}
}

func TestParallelCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	const n = 4
	started := make(chan struct{}, n)
	release := make(chan struct{})
	var c counted
	slow := c.tool("lookup", tool.EffectRead, false, func(args any) (any, error) {
		started <- struct{}{}
		<-release
		return "ok", nil
	})
	calls := make([]model.ToolCall, n)
	for i := range calls {
		calls[i] = tc(string(rune('a'+i)), "lookup", `{"order":"`+string(rune('1'+i))+`"}`)
	}
	m := &turns{replies: []func(*model.Request) *model.Response{callsReply(calls...), textReply("done")}}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Journal: j, Concurrency: n, Tools: []agent.Tool{{Tool: slow}}})
	go func() {
		// every call must be running before any may finish: serial calls never get here.
		for range n {
			<-started
		}
		close(release)
	}()
	res, err := l.Run(context.Background(), &agent.Session{Task: "t"})
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	if j.calls != n {
		t.Errorf("%d call commits, want one per call (%d)", j.calls, n)
	}
}

func approvalSetup(t *testing.T) (*counted, *turns, *agent.Loop, *journal) {
	var c counted
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "lookup", `{"order":"1042"}`), tc("b", "refund", `{"order":"1042"}`)),
		textReply("done"),
	}}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Journal: j, RunID: "r", StepID: "agent", Attempt: 1, Tools: []agent.Tool{
		{Tool: c.tool("lookup", tool.EffectRead, false, func(any) (any, error) { return "charged twice", nil })},
		{Tool: c.tool("refund", tool.EffectWrite, false, func(args any) (any, error) { return "refunded", nil }), Approval: true},
	}})
	return &c, m, l, j
}

func TestApprovalApproveRunsRecordedArgs(t *testing.T) {
	t.Parallel()
	c, m, l, j := approvalSetup(t)
	res, err := l.Run(context.Background(), &agent.Session{Task: "charged twice"})
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 {
		t.Fatal(res, err)
	}
	p := res.Pending[0]
	if p.Ref != "turn1/call2" || p.Tool != "refund" || p.Args != `{"order":"1042"}` || p.Kind != "approval" {
		t.Fatalf("pending %+v", p)
	}
	if c.n.Load() != 1 {
		t.Fatalf("the refund ran before approval: %d calls", c.n.Load())
	}
	// a new process: the session comes from the journal, the model is not asked again for turn 1
	s := j.session("charged twice")
	s.Decisions = map[string]agent.Decision{p.Ref: {Verdict: agent.Approve}}
	res, err = l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	if c.n.Load() != 2 || c.keys[1] != "r/agent/1/turn1/call2" || c.args[1].(map[string]any)["order"] != "1042" {
		t.Fatalf("approved call: %d calls, keys %v, args %v", c.n.Load(), c.keys, c.args)
	}
	if m.calls() != 2 {
		t.Errorf("%d model calls, want 2", m.calls())
	}
}

func TestApprovalRejectReachesModel(t *testing.T) {
	t.Parallel()
	c, m, l, _ := approvalSetup(t)
	s := &agent.Session{Task: "charged twice"}
	if _, err := l.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	s.Decisions = map[string]agent.Decision{"turn1/call2": {Verdict: agent.Reject, Comment: "already refunded by phone"}}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	if c.n.Load() != 1 {
		t.Errorf("a rejected call ran")
	}
	last := m.requests[1].Messages
	if obs := last[len(last)-1]; obs.ToolCallID != "b" || obs.Content != "rejected by a person: already refunded by phone" {
		t.Errorf("observation %+v", obs)
	}
}

type gateFunc func(*safety.Invocation) safety.Decision

func (g gateFunc) Check(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
	return g(inv), nil
}

func TestGateBlocksAndAsksApproval(t *testing.T) {
	t.Parallel()
	var c counted
	gate := gateFunc(func(inv *safety.Invocation) safety.Decision {
		switch inv.Tool.Name {
		case "delete":
			return safety.Decision{Verdict: safety.Block, Reason: "destructive"}
		case "refund":
			return safety.Decision{Verdict: safety.RequireApproval, Reason: "money moves"}
		}
		return safety.Decision{Verdict: safety.Allow}
	})
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "delete", `{"order":"1"}`), tc("b", "refund", `{"order":"1"}`)),
		textReply("done"),
	}}
	l := newLoop(t, agent.Config{Model: m, Pipeline: &invoke.Pipeline{Gate: gate}, Tools: []agent.Tool{
		{Tool: c.tool("delete", tool.EffectDestructive, false, nil)}, {Tool: c.tool("refund", tool.EffectWrite, false, nil)}}})
	s := &agent.Session{Task: "t"}
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused {
		t.Fatal(res, err)
	}
	if d := s.Turns[0].Calls[0]; d.Status != agent.StatusBlocked || !strings.Contains(d.Observation, "destructive") {
		t.Errorf("blocked call %+v", d)
	}
	if p := res.Pending; len(p) != 1 || p[0].Tool != "refund" || !strings.Contains(p[0].Reason, "money moves") {
		t.Errorf("pending %+v", p)
	}
	s.Decisions = map[string]agent.Decision{"turn1/call2": {Verdict: agent.Approve}}
	if res, err = l.Run(context.Background(), s); err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	if c.n.Load() != 1 {
		t.Errorf("%d calls ran, want only the approved refund", c.n.Load())
	}
}

func TestResumeMidToolCall(t *testing.T) {
	t.Parallel()
	// The first process dies while turn 1's calls run: the idempotent one
	// runs again with the same key, the write waits for a person.
	var c counted
	ctx, kill := context.WithCancel(context.Background())
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "status", `{"order":"1"}`), tc("b", "charge", `{"order":"1"}`)),
		textReply("done"),
	}}
	j := &journal{}
	charge := c.tool("charge", tool.EffectWrite, false, func(any) (any, error) { kill(); return nil, context.Canceled })
	cfg := agent.Config{Model: m, Journal: j, RunID: "r", StepID: "s", Attempt: 1, Concurrency: 1, Tools: []agent.Tool{
		{Tool: c.tool("status", tool.EffectWrite, true, nil)}, {Tool: charge}}}
	if _, err := newLoop(t, cfg).Run(ctx, &agent.Session{Task: "t"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want cancelled, got %v", err)
	}
	if m.calls() != 1 || c.n.Load() != 2 {
		t.Fatalf("%d model calls, %d tool calls", m.calls(), c.n.Load())
	}
	// the status call committed its outcome; charge did not
	if got := j.turns[0].Calls[1].Status; got != agent.StatusChosen {
		t.Fatalf("charge committed as %s", got)
	}
	cfg.Tools[1] = agent.Tool{Tool: c.tool("charge", tool.EffectWrite, false, nil)}
	l := newLoop(t, cfg)
	s := j.session("t")
	res, err := l.Run(context.Background(), s)
	if err != nil || res.Status != agent.StatusPaused || len(res.Pending) != 1 || res.Pending[0].Kind != "unknown" {
		t.Fatal(res, err)
	}
	if m.calls() != 1 || c.n.Load() != 2 {
		t.Fatalf("resume repeated something: %d model calls, %d tool calls", m.calls(), c.n.Load())
	}
	s.Decisions = map[string]agent.Decision{"turn1/call2": {Verdict: agent.Settle, Output: map[string]any{"charged": true}}}
	if res, err = l.Run(context.Background(), s); err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	if c.n.Load() != 2 || s.Turns[0].Calls[1].Observation != `{"charged":true}` {
		t.Errorf("settled call: %d tool calls, %+v", c.n.Load(), s.Turns[0].Calls[1])
	}
}

func TestResumeMidTurnIdempotentCallRunsAgainWithSameKey(t *testing.T) {
	t.Parallel()
	var c counted
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "status", `{"order":"1"}`)), textReply("done")}}
	j := &journal{}
	cfg := agent.Config{Model: m, Journal: j, RunID: "r", StepID: "s", Attempt: 1,
		Tools: []agent.Tool{{Tool: c.tool("status", tool.EffectWrite, true, nil)}}}
	// the turn was committed, then the process died before the call settled.
	_ = j.CommitTurn(context.Background(), &agent.Turn{N: 1, Calls: []agent.Call{{Index: 1, ID: "a", Tool: "status",
		Args: `{"order":"1"}`, Status: agent.StatusChosen}}, LLMCalls: 1})
	m.next = 1
	res, err := newLoop(t, cfg).Run(context.Background(), j.session("t"))
	if err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	if c.n.Load() != 1 || c.keys[0] != "r/s/1/turn1/call1" || m.calls() != 2 {
		t.Errorf("%d tool calls, keys %v, %d model calls", c.n.Load(), c.keys, m.calls())
	}
}

type blobs struct{ data map[string][]byte }

func (b *blobs) PutBlob(_ context.Context, data []byte) (string, error) {
	ref := "sha256:" + string(rune('a'+len(b.data)))
	b.data[ref] = data
	return ref, nil
}

func TestHugeObservationKeepsContextBounded(t *testing.T) {
	t.Parallel()
	var c counted
	huge := strings.Repeat("x", 4<<20)
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "dump", `{"order":"1"}`)), textReply("done")}}
	b := &blobs{data: map[string][]byte{}}
	l := newLoop(t, agent.Config{Model: m, ObservationLimit: 1000, Blobs: b,
		Tools: []agent.Tool{{Tool: c.tool("dump", tool.EffectRead, false, func(any) (any, error) { return huge, nil })}}})
	s := &agent.Session{Task: "t"}
	if _, err := l.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	call := s.Turns[0].Calls[0]
	if len(call.Observation) > 1200 || call.Blob == "" || len(b.data[call.Blob]) != len(huge)+2 {
		t.Fatalf("observation of %d bytes, blob %q (%d bytes)", len(call.Observation), call.Blob, len(b.data[call.Blob]))
	}
	if !strings.Contains(call.Observation, "whole in blob "+call.Blob) {
		t.Errorf("the preview does not say where the rest is: %q", call.Observation[900:])
	}
	size := 0
	for _, msg := range m.requests[1].Messages {
		size += len(msg.Content)
	}
	if size > 1500 {
		t.Errorf("the next request carries %d bytes", size)
	}
}

// A cut observation of an object keeps its small fields whole, whatever
// their keys sort after: a workflow tool's answer over the limit keeps
// task_id, status and next_actions, and its artifacts by reference.
func TestCutObservationKeepsWhatTheAgentActsOn(t *testing.T) {
	t.Parallel()
	var c counted
	artifact := func(step string) map[string]any {
		return map[string]any{"step_id": step, "producer": "agent", "sha256": "abc" + step, "status": "succeeded",
			"output": map[string]any{"text": strings.Repeat("y", 3000)}}
	}
	answer := map[string]any{
		"artifacts":    []any{artifact("parse"), artifact("route"), artifact("cost")},
		"next_actions": []any{map[string]any{"step_id": "approve", "action": "confirm", "output_schema": map[string]any{"description": strings.Repeat("z", 2000)}}},
		"status":       "waiting",
		"task_id":      "task-42",
		"workflow":     "process",
	}
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "process_workflow", `{"order":"1"}`)), textReply("done")}}
	l := newLoop(t, agent.Config{Model: m, ObservationLimit: 1000, Blobs: &blobs{data: map[string][]byte{}},
		Tools: []agent.Tool{{Tool: c.tool("process_workflow", tool.EffectRead, false, func(any) (any, error) { return answer, nil })}}})
	s := &agent.Session{Task: "t"}
	if _, err := l.Run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	obs := s.Turns[0].Calls[0].Observation
	for _, want := range []string{`"task_id":"task-42"`, `"status":"waiting"`, `"step_id":"approve"`, `"action":"confirm"`, `"sha256":"abcparse"`, `"sha256":"abccost"`, "whole in blob"} {
		if !strings.Contains(obs, want) {
			t.Errorf("the cut observation lost %s:\n%s", want, obs)
		}
	}
	if len(obs) > 1200 {
		t.Errorf("the observation is %d bytes", len(obs))
	}
}

func TestFinalAnswerSchema(t *testing.T) {
	t.Parallel()
	sch, err := schema.Compile("answer", map[string]any{"type": "object", "required": []any{"refund"},
		"properties": map[string]any{"refund": map[string]any{"type": "number"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		replies []string
		ok      bool
	}{
		{"corrected", []string{`{"refund": "ten"}`, `{"refund": 10}`}, true},
		{"still broken", []string{`{"refund": "ten"}`, `not json`}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &turns{replies: []func(*model.Request) *model.Response{textReply(tt.replies[0]), textReply(tt.replies[1])}}
			l := newLoop(t, agent.Config{Model: m, Output: sch})
			res, err := l.Run(context.Background(), &agent.Session{Task: "t"})
			if tt.ok {
				if err != nil || res.Answer.(map[string]any)["refund"] != float64(10) || res.Usage.LLMCalls != 2 {
					t.Fatal(res, err)
				}
				if !m.requests[1].Corrective || !strings.Contains(m.requests[1].Prompt(), "/refund") {
					t.Errorf("the corrective request does not say what broke: %q", m.requests[1].Prompt())
				}
				return
			}
			if fault.ClassOf(err) != fault.Format || m.calls() != 2 {
				t.Fatalf("want a format error after one correction, got %v after %d calls", err, m.calls())
			}
		})
	}
}

func TestCancellationStopsInFlightCalls(t *testing.T) {
	t.Parallel()
	var c counted
	ctx, cancel := context.WithCancel(context.Background())
	waiting := c.tool("wait", tool.EffectRead, false, nil)
	block := tool.Func(waiting.Spec(), func(ctx context.Context, args any) (any, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	m := &turns{replies: []func(*model.Request) *model.Response{callsReply(tc("a", "wait", `{"order":"1"}`))}}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Journal: j, Tools: []agent.Tool{{Tool: block}}})
	_, err := l.Run(ctx, &agent.Session{Task: "t"})
	if fault.ClassOf(err) != fault.Cancelled {
		t.Fatalf("want cancelled, got %v", err)
	}
	if j.calls != 0 {
		t.Errorf("a cancelled call was committed as settled")
	}
}
