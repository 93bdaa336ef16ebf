package agent_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// A loop with one read tool and one that needs approval: the run pauses
// with the refund's exact arguments, and goes on once a person decides.
func Example() {
	lookup := tool.Func(tool.Spec{Name: "lookup_order", Effect: tool.EffectRead}, func(context.Context, any) (any, error) {
		return map[string]any{"order": "1042", "charges": 2}, nil
	})
	refund := tool.Func(tool.Spec{Name: "issue_refund", Effect: tool.EffectExternal}, func(_ context.Context, args any) (any, error) {
		return map[string]any{"refunded": args.(map[string]any)["order"]}, nil
	})
	replies := map[int]*model.Response{
		1: {ToolCalls: []model.ToolCall{{ID: "a", Name: "lookup_order", Args: `{"order":"1042"}`}}},
		2: {ToolCalls: []model.ToolCall{{ID: "b", Name: "issue_refund", Args: `{"order":"1042"}`}}},
		3: {Text: "Refunded the duplicate charge on order 1042."},
	}
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) { return replies[req.Turn], nil })
	l, err := agent.New(agent.Config{Model: m, Instructions: "Help with orders.",
		Tools: []agent.Tool{{Tool: lookup}, {Tool: refund, Approval: true}}})
	if err != nil {
		panic(err)
	}
	s := &agent.Session{Task: "I was charged twice for order 1042"}
	res, _ := l.Run(context.Background(), s)
	p := res.Pending[0]
	fmt.Println(res.Status, p.Ref, p.Tool, p.Args)
	s.Decisions = map[string]agent.Decision{p.Ref: {Verdict: agent.Approve}}
	res, _ = l.Run(context.Background(), s)
	fmt.Println(res.Status, res.Answer, res.Usage.Turns, res.Usage.ToolCalls)
	// Output:
	// waiting turn2/call1 issue_refund {"order":"1042"}
	// answered Refunded the duplicate charge on order 1042. 3 2
}
