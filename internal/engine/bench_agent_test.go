package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// agentBenchTurns is how many turns with one tool call a benchmarked agent
// step takes before its final answer (one more turn).
const agentBenchTurns = 10

// BenchmarkAgentStep measures the runtime's own cost per agent turn with
// one tool call — the engine, the agent loop, the invocation pipeline and,
// durable, the store — with a scripted model (a slice lookup) and a Go tool
// with an input schema: a flow of one agent step that takes 10 such turns
// and answers on the 11th. Each run of the agent flow alternates with an
// in-memory W5 run (JSONL sink to io.Discard, as BenchmarkW5), so that
// w5-ns/step sees the same machine as ns/turn.
//
// memory runs on store.Ephemeral; sqlite-NORMAL commits every turn to a
// SQLite store with synchronous=NORMAL. ns/turn and cpu-us/turn (the
// process's CPU time, all threads, a turn) count the agent runs alone.
// commits/run is the store's commits per agent run: the target allows one
// per turn plus one per tool call (21 for 11 turns and 10 calls), beside
// the run's own first and last commits (its start, its settlement) that
// every run pays.
func BenchmarkAgentStep(b *testing.B) {
	for _, be := range []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memory", func(*testing.B) store.Store { return nil }},
		{"sqlite-NORMAL", func(b *testing.B) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "rein.db"), &sqlite.Options{Synchronous: "NORMAL"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		b.Run(be.name, func(b *testing.B) {
			var cs *countingStore
			var st store.Store
			if s := be.open(b); s != nil {
				cs = &countingStore{Store: s}
				st = cs
			}
			e, f := agentBenchEngine(b, st)
			w5e, w5f, w5in, _ := w5Setup(b)
			ctx := context.Background()
			var agentTime, w5Time, agentCPU time.Duration
			runs := 0
			b.ReportAllocs()
			for b.Loop() {
				c0, t0 := processCPU(), time.Now()
				if res, err := e.Run(ctx, f, nil, nil); err != nil || res.Status != trace.RunSucceeded {
					b.Fatalf("agent run: %v %+v", err, res)
				}
				agentTime += time.Since(t0)
				agentCPU += processCPU() - c0
				t0 = time.Now()
				if res, err := w5e.Run(ctx, w5f, w5in, nil); err != nil || res.Status != trace.RunSucceeded {
					b.Fatalf("w5 run: %v %+v", err, res)
				}
				w5Time += time.Since(t0)
				runs++
			}
			turns := float64(runs * (agentBenchTurns + 1))
			b.ReportMetric(float64(agentTime.Nanoseconds())/turns, "ns/turn")
			b.ReportMetric(float64(agentCPU.Nanoseconds())/1e3/turns, "cpu-us/turn")
			b.ReportMetric(float64(w5Time.Nanoseconds())/float64(runs*5), "w5-ns/step")
			if cs != nil {
				b.ReportMetric(float64(cs.commits)/float64(runs), "commits/run")
			}
		})
	}
}

// agentBenchEngine builds the benchmark's flow of one agent step and an
// engine on st (nil: in memory) whose model answers turns 1..10 with one
// call of enrich each and turn 11 with a final answer.
func agentBenchEngine(b *testing.B, st store.Store) (*engine.Engine, *flow.Flow) {
	b.Helper()
	replies := make([]model.Response, agentBenchTurns+1)
	for i := range agentBenchTurns {
		replies[i] = model.Response{ToolCalls: []model.ToolCall{call("c", "enrich", `{"id":"c-42","score":40}`)}, Usage: model.Usage{In: 10, Out: 5}}
	}
	replies[agentBenchTurns] = model.Response{Text: "done", Usage: model.Usage{In: 10, Out: 2}}
	models := &model.Registry{}
	models.Register("m", model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		r := replies[req.Turn-1]
		return &r, nil
	}))
	reg := &tool.Registry{}
	enrich := tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone, Idempotent: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"score":{"type":"number"}},"required":["id"]}`)},
		func(_ context.Context, args any) (any, error) {
			in := args.(map[string]any)
			return map[string]any{"id": in["id"], "score": 41, "ok": true}, nil
		})
	if err := reg.Register(enrich); err != nil {
		b.Fatal(err)
	}
	f, err := flow.Parse([]byte("name: agent-bench\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: enrich c-42, budgets: {max_turns: 11}, tools: {enrich: }}\n"), "agent-bench.yaml",
		&flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		b.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st}), f
}
