package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// turns is a model that answers turn n with replies[n-1] and counts calls.
type turns struct {
	mu       sync.Mutex
	replies  []func(req *model.Request) *model.Response
	next     int
	requests []*model.Request
}

func (m *turns) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if m.next >= len(m.replies) {
		return nil, fmt.Errorf("no reply for model call %d", m.next+1)
	}
	r := m.replies[m.next](req)
	m.next++
	return r, nil
}

func (m *turns) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

func callsReply(calls ...model.ToolCall) func(*model.Request) *model.Response {
	return func(*model.Request) *model.Response {
		return &model.Response{ToolCalls: calls, Usage: model.Usage{In: 10, Out: 5}}
	}
}

func textReply(text string) func(*model.Request) *model.Response {
	return func(*model.Request) *model.Response {
		return &model.Response{Text: text, Usage: model.Usage{In: 10, Out: 5}}
	}
}

func tc(id, name, args string) model.ToolCall { return model.ToolCall{ID: id, Name: name, Args: args} }

// counted is a tool that counts its calls and records their args.
type counted struct {
	n    atomic.Int64
	mu   sync.Mutex
	args []any
	keys []string
}

func (c *counted) tool(name string, effect tool.Effect, idem bool, out func(args any) (any, error)) tool.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"],"additionalProperties":false}`)
	return tool.Func(tool.Spec{Name: name, InputSchema: schema, Effect: effect, Idempotent: idem},
		func(ctx context.Context, args any) (any, error) {
			c.n.Add(1)
			c.mu.Lock()
			c.args = append(c.args, args)
			c.keys = append(c.keys, tool.CallInfoFrom(ctx).IdempotencyKey)
			c.mu.Unlock()
			if out != nil {
				return out(args)
			}
			return map[string]any{"order": args.(map[string]any)["order"], "status": "shipped"}, nil
		})
}

// journal is an in-memory Journal: what it holds is what a store would.
type journal struct {
	mu    sync.Mutex
	turns []agent.Turn
	calls int
}

func (j *journal) CommitTurn(_ context.Context, t *agent.Turn) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	c := *t
	c.Calls = append([]agent.Call(nil), t.Calls...)
	j.turns = append(j.turns, c)
	return nil
}

func (j *journal) CommitCall(_ context.Context, turn int, c *agent.Call) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.turns[turn-1].Calls[c.Index-1] = *c
	j.calls++
	return nil
}

// session rebuilds a Session from what was committed, as a resume does.
func (j *journal) session(task string) *agent.Session {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := &agent.Session{Task: task}
	for _, t := range j.turns {
		t.Calls = append([]agent.Call(nil), t.Calls...)
		s.Turns = append(s.Turns, t)
	}
	return s
}

func newLoop(t *testing.T, cfg agent.Config) *agent.Loop {
	t.Helper()
	l, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// planJournal is a journal that also keeps the plan sub-runs' records.
type planJournal struct {
	journal
	pmu    sync.Mutex
	events []string // "<kind> <turn>/<call> <plan step or status>"
	runs   []agent.PlanRun
}

func (j *planJournal) PlanEvent(turn, call int, ev plan.Event) {
	j.pmu.Lock()
	defer j.pmu.Unlock()
	j.events = append(j.events, fmt.Sprintf("%s %d/%d %s", ev.Kind, turn, call, ev.PlanStep))
}

func (j *planJournal) PlanRun(turn, call int, r *agent.PlanRun) {
	j.pmu.Lock()
	defer j.pmu.Unlock()
	kind := "plan_finished"
	if r.Status == agent.PlanActive {
		kind = "plan_started"
	}
	j.events = append(j.events, fmt.Sprintf("%s %d/%d %s", kind, turn, call, r.Status))
	j.runs = append(j.runs, *r)
}
