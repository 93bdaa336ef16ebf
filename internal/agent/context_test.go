package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// bulky is a read tool whose output is about 600 bytes, naming the order.
func bulky(c *counted) tool.Tool {
	return c.tool("lookup", tool.EffectRead, true, func(args any) (any, error) {
		return map[string]any{"order": args.(map[string]any)["order"], "notes": strings.Repeat("x", 600)}, nil
	})
}

// contextModel answers agent turns from replies, one each, and summary
// requests (Decision "summarize") with summary, recording every request.
type contextModel struct {
	mu       sync.Mutex
	replies  []func(*model.Request) *model.Response
	next     int
	summary  string
	requests []*model.Request
}

func (m *contextModel) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if req.Decision == "summarize" {
		if m.summary == "" {
			return nil, fault.Errorf(fault.Business, "no summary scripted")
		}
		return &model.Response{Text: m.summary}, nil
	}
	if m.next >= len(m.replies) {
		return nil, fault.Errorf(fault.Business, "no reply for turn %d", m.next+1)
	}
	r := m.replies[m.next](req)
	m.next++
	return r, nil
}

func lookups(n int) []func(*model.Request) *model.Response {
	var out []func(*model.Request) *model.Response
	for i := range n {
		id := string(rune('a' + i))
		out = append(out, callsReply(tc("c"+id, "lookup", `{"order":"o-`+id+`"}`)))
	}
	return append(out, textReply("done"))
}

// checkRequest requires req to hold the task and whole call/observation
// pairs, within max tokens as rein estimates them.
func checkRequest(t *testing.T, i int, req *model.Request, task string, maxTokens int) {
	t.Helper()
	if n := model.EstimateTokens(req); n > maxTokens {
		t.Errorf("request %d estimates %d tokens, over the budget of %d", i, n, maxTokens)
	}
	calls, answered := map[string]bool{}, map[string]bool{}
	hasTask := false
	for _, m := range req.Messages {
		hasTask = hasTask || (m.Role == model.User && m.Content == task)
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == model.Tool {
			if !calls[m.ToolCallID] {
				t.Errorf("request %d: observation of %s without its call", i, m.ToolCallID)
			}
			answered[m.ToolCallID] = true
		}
	}
	for id := range calls {
		if !answered[id] {
			t.Errorf("request %d: call %s without its observation", i, id)
		}
	}
	if !hasTask {
		t.Errorf("request %d lost the task", i)
	}
}

func TestContextTrimKeepsEveryRequestWithinBudget(t *testing.T) {
	const budget, task = 700, "check orders a to f"
	var c counted
	m := &contextModel{replies: lookups(6)}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Instructions: "You check orders.", Tools: []agent.Tool{{Tool: bulky(&c)}}, Journal: j,
		Context: &agent.ContextBudget{MaxTokens: budget, Strategy: agent.StrategyTrim}})
	res, err := l.Run(t.Context(), &agent.Session{Task: task})
	if err != nil || res.Answer != "done" {
		t.Fatalf("Run: %v, %+v", err, res)
	}
	whole := 0
	for i, req := range m.requests {
		checkRequest(t, i+1, req, task, budget)
		whole = max(whole, len(req.Messages))
	}
	last := m.requests[len(m.requests)-1]
	if got := last.Messages[len(last.Messages)-1]; got.Role != model.Tool || !strings.Contains(got.Content, "o-f") {
		t.Errorf("the last request does not end with the latest observation: %+v", got)
	}
	if last.Messages[0].Content != "You check orders." {
		t.Errorf("the instructions were left out: %+v", last.Messages[0])
	}
	// the trim is journaled with the turn that made it, and deterministic.
	var trimmed []int
	for _, tr := range j.turns {
		if tr.Context != nil {
			if tr.Context.Strategy != agent.StrategyTrim || tr.Context.Summary != "" || tr.Context.Tokens > budget {
				t.Errorf("turn %d context %+v", tr.N, tr.Context)
			}
			trimmed = append(trimmed, tr.Context.Dropped)
		}
	}
	if len(trimmed) == 0 {
		t.Fatal("no turn recorded a trim: the test's budget does not bite")
	}
	for i := 1; i < len(trimmed); i++ {
		if trimmed[i] <= trimmed[i-1] {
			t.Errorf("trims %v: each one leaves out more than the one before", trimmed)
		}
	}

	// without a context budget the same run sends more than the budget.
	m2 := &contextModel{replies: lookups(6)}
	l2 := newLoop(t, agent.Config{Model: m2, Instructions: "You check orders.", Tools: []agent.Tool{{Tool: bulky(&counted{})}}})
	if _, err := l2.Run(t.Context(), &agent.Session{Task: task}); err != nil {
		t.Fatal(err)
	}
	if n := model.EstimateTokens(m2.requests[len(m2.requests)-1]); n <= budget {
		t.Fatalf("without a budget the last request is %d tokens: the test's budget does not bite", n)
	}
}

func TestContextSummarizeIsJournaledAndReplayed(t *testing.T) {
	const budget, task = 700, "check orders a to f"
	cb := &agent.ContextBudget{MaxTokens: budget, Strategy: agent.StrategySummarize, Prompt: "Keep the order ids."}
	m := &contextModel{replies: lookups(6), summary: "Orders o-a and o-b are shipped."}
	j := &journal{}
	l := newLoop(t, agent.Config{Model: m, Instructions: "You check orders.", Tools: []agent.Tool{{Tool: bulky(&counted{})}}, Journal: j, Context: cb})
	if res, err := l.Run(t.Context(), &agent.Session{Task: task}); err != nil || res.Answer != "done" {
		t.Fatalf("Run: %v, %+v", err, res)
	}
	var summaries int
	for i, req := range m.requests {
		if req.Decision == "summarize" {
			summaries++
			if req.Messages[0].Content != "Keep the order ids." || !strings.Contains(req.Messages[1].Content, "o-a") {
				t.Errorf("summary request %+v: want the configured prompt and the left-out observation", req.Messages)
			}
			continue
		}
		checkRequest(t, i+1, req, task, budget)
	}
	if summaries == 0 {
		t.Fatal("no summary was asked for: the test's budget does not bite")
	}
	at := -1
	for i, tr := range j.turns {
		if tr.Context != nil && tr.Context.Summary != "" {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatal("no turn journaled a summary")
	}
	first := j.turns[at].Context.Summary
	if first != "Orders o-a and o-b are shipped." {
		t.Errorf("journaled summary %q", first)
	}

	// a resume after the summarizing turn sends the journaled summary and
	// asks for none while the conversation fits.
	s := j.session(task)
	s.Turns = s.Turns[:at+1]
	replay := &contextModel{replies: lookups(6)[at+1:], summary: ""} // a summary request fails
	lr := newLoop(t, agent.Config{Model: replay, Instructions: "You check orders.", Tools: []agent.Tool{{Tool: bulky(&counted{})}}, Context: cb})
	_, _ = lr.Run(t.Context(), s)
	if len(replay.requests) == 0 || replay.requests[0].Decision == "summarize" || !strings.Contains(replay.requests[0].Messages[0].Content, first) {
		t.Fatalf("the resumed run's first request does not carry the journaled summary: %+v", replay.requests)
	}
}

func TestContextTooSmallIsABudgetError(t *testing.T) {
	m := &contextModel{replies: lookups(1)}
	l := newLoop(t, agent.Config{Model: m, Tools: []agent.Tool{{Tool: bulky(&counted{})}},
		Context: &agent.ContextBudget{MaxTokens: 20, Strategy: agent.StrategyTrim}})
	_, err := l.Run(t.Context(), &agent.Session{Task: "check order a"})
	if fault.ClassOf(err) != fault.Budget || fault.BudgetOf(err) != "context" || len(m.requests) != 0 {
		t.Fatalf("err %v (budget %q), %d requests sent; want a context budget error before any request", err, fault.BudgetOf(err), len(m.requests))
	}
}
