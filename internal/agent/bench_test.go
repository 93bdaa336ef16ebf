package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
)

// benchTurns is how many tool-call turns one benchmarked task takes before
// its final answer.
const benchTurns = 10

// benchModel answers turns 1..benchTurns with one call each and then a
// final answer, from precomputed replies: the model's own cost is a slice
// lookup.
func benchModel() model.Model {
	replies := make([]*model.Response, benchTurns+1)
	for i := range benchTurns {
		replies[i] = &model.Response{ToolCalls: []model.ToolCall{{ID: "c", Name: "enrich", Args: `{"id":"c-42","score":40}`}},
			Usage: model.Usage{In: 10, Out: 5}}
	}
	replies[benchTurns] = &model.Response{Text: "done", Usage: model.Usage{In: 10, Out: 2}}
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		// one assistant and one tool message per earlier turn, after system and user.
		return replies[(len(req.Messages)-2)/2], nil
	})
}

var benchTool = tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"score":{"type":"number"}},"required":["id"]}`)},
	func(_ context.Context, args any) (any, error) {
		in := args.(map[string]any)
		return map[string]any{"id": in["id"], "score": 41, "ok": true}, nil
	})

// w5 is engine's W5 workload (engine/bench_test.go), measured here in the
// same run as the agent loop so that both figures see the same machine.
const w5 = `
name: w5
steps:
  - {id: s1, tool: enrich, args: {id: "{input.id}", name: "{input.name}", score: "{input.score}", tags: "{input.tags}", ok: true}}
  - {id: s2, tool: enrich, args: "{s1}"}
  - {id: s3, tool: enrich, args: "{s2}"}
  - {id: s4, tool: enrich, args: "{s3}", when: "s3.score > 10"}
  - {id: s5, tool: enrich, args: "{s4}"}
`

// w5StepNS runs W5 in memory n times and returns the time per step.
func w5StepNS(b *testing.B, n int) float64 {
	enrich := tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone}, func(_ context.Context, args any) (any, error) {
		in := args.(map[string]any)
		return map[string]any{"id": in["id"], "name": in["name"], "score": in["score"].(float64) + 1, "tags": in["tags"], "ok": true}, nil
	})
	reg := &tool.Registry{}
	if err := reg.Register(enrich); err != nil {
		b.Fatal(err)
	}
	f, err := flow.Parse([]byte(w5), "w5.yaml", &flow.Options{Tools: func(n string) (tool.Spec, bool) { return enrich.Spec(), n == "enrich" }})
	if err != nil {
		b.Fatal(err)
	}
	e := engine.New(engine.Config{Tools: reg})
	input := map[string]any{"id": "c-42", "name": "Zhang", "score": 40.0, "tags": []any{"go", "sql"}}
	ctx := context.Background()
	start := time.Now()
	for range n {
		if res, err := e.Run(ctx, f, input, nil); err != nil || res.Status != "succeeded" {
			b.Fatalf("w5: %v", err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n*5)
}

// BenchmarkAgentTurn measures the loop's own cost per turn with one tool
// call (scripted replies, a Go tool, no journal: in memory), next to one
// in-memory W5 step measured in the same run.
func BenchmarkAgentTurn(b *testing.B) {
	l, err := agent.New(agent.Config{Model: benchModel(), ModelName: "m", Instructions: "enrich", RunID: "r", StepID: "a", Attempt: 1,
		Tools: []agent.Tool{{Tool: benchTool}}, Budgets: agent.Budgets{MaxTurns: benchTurns + 1}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func() {
		res, err := l.Run(ctx, &agent.Session{Task: "enrich c-42"})
		if err != nil || res.Status != agent.StatusAnswered {
			b.Fatalf("run: %v", err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(benchTurns+1)), "ns/turn")
	b.ReportMetric(float64(testing.AllocsPerRun(20, run))/(benchTurns+1), "allocs/turn")
	b.ReportMetric(w5StepNS(b, 2000), "w5-ns/step")
}
