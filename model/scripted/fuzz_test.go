package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/model"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"replies:\n  - step: a\n    output: {\"x\": 1}\n",
		"replies:\n  - {step: a, raw: x, tokens: {in: 1, out: 2}, delay: 1ms}\n",
		"replies:\n  - {step: a, error: transient, message: m, contains: c, model: m}\n",
		"replies:\n  - &r {step: a, output: [1, *r]}\n  - *r\n",
		"replies:\n  - {step: a, decision: route, route: r, reason: why}\n  - {step: a, decision: plan, plan: {goal: g, steps: [{id: s, tool: t}]}}\n",
		"replies:\n  - {step: a, decision: llm, output: 1, route: r}\n  - {step: a, reason: x}\n  - {step: a, plan: [1]}\n",
		"replies:\n  - {step: a, decision: agent, tool_calls: [{name: t, args: {x: 1}}, {id: k, name: u, raw_args: '{\"x'}]}\n",
		"replies:\n  - {step: a, tool_calls: [{name: t, id: k}, {name: t, id: k}, {args: [1]}, {name: v, args: {}, raw_args: x}]}\n",
		"replies: {}\n---\n- x\n",
		"a: b: c\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "f.yaml")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("error %T %v is not a *ParseError with problems", err, err)
			}
			return
		}
		// Delays must not stall the fuzzer: a short deadline cuts them off.
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		for _, r := range m.Unused() {
			if r.Step == "" {
				t.Fatalf("accepted a reply without a step: %+v", r)
			}
			q := req(r.Step, r.Model, r.Contains)
			if r.Decision != "llm" {
				q.Decision = r.Decision
			}
			resp, err := m.Generate(ctx, q)
			if err != nil && strings.Contains(err.Error(), "is not JSON") {
				t.Fatalf("accepted an output that cannot be answered: %v", err)
			}
			if r.Route != "" && r.Reason == "" {
				t.Fatalf("accepted a route without a reason: %+v", r)
			}
			if r.Route != "" && err == nil {
				var got struct{ Route, Reason string }
				if json.Unmarshal([]byte(resp.Text), &got) != nil || got.Route != r.Route || got.Reason != r.Reason {
					t.Fatalf("route reply %+v answered %q", r, resp.Text)
				}
			}
			if len(r.ToolCalls) > 0 {
				if len(r.ToolCalls) > model.MaxToolCalls {
					t.Fatalf("accepted %d tool calls", len(r.ToolCalls))
				}
				for _, tc := range r.ToolCalls {
					if tc.Name == "" {
						t.Fatalf("accepted a tool call without a name: %+v", r)
					}
				}
				if err == nil {
					seen := map[string]bool{}
					for _, tc := range resp.ToolCalls {
						if tc.ID == "" || seen[tc.ID] {
							t.Fatalf("answered a missing or repeated id: %+v", resp.ToolCalls)
						}
						seen[tc.ID] = true
					}
				}
			}
			if r.Plan != nil {
				if _, ok := r.Plan.(map[string]any); !ok {
					t.Fatalf("accepted a plan that is not an object: %#v", r.Plan)
				}
			}
		}
	})
}
