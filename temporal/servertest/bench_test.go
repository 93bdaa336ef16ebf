//go:build temporalserver

package servertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store/postgres"
	_ "github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// The backends' benchmarks: the same workload on the local engine with a
// SQLite store and with a PostgreSQL one (skipped without
// REIN_TEST_POSTGRES_DSN) and on the in-process Temporal server, with 1, 8
// and 64 runs in flight and 1 or 2 workers (Temporal workers on one task
// queue; for the local engine, Clients on one store, runs dealt to them in
// turn). Each reports runs/s (runs finished over the wall clock),
// ms/run and ms/step (a run's mean latency, start to result, and that
// over its steps: W5's 5 steps, the agent's 11 turns). docs/performance.md
// has the figures and the command.

// BenchmarkW5Backends runs W5, the linear flow of five Go tool steps of
// internal/engine's BenchmarkW5.
func BenchmarkW5Backends(b *testing.B) { benchBackends(b, w5Load()) }

// BenchmarkAgentBackends runs the flow of one agent step of
// internal/engine's BenchmarkAgentStep: 10 turns with one tool call, the
// 11th answers (a Go model answering from a slice).
func BenchmarkAgentBackends(b *testing.B) { benchBackends(b, agentLoad()) }

// workload is what a benchmark runs: a flow with its Go tools and model,
// and the steps (or turns) a run takes.
type workload struct {
	name  string
	flow  string
	opts  project.LoadOptions
	steps int
}

const w5Bench = `name: w5
steps:
  - {id: s1, tool: enrich, args: {id: "{input.id}", name: "{input.name}", score: "{input.score}", tags: "{input.tags}", ok: true}}
  - {id: s2, tool: enrich, args: "{s1}"}
  - {id: s3, tool: enrich, args: "{s2}"}
  - {id: s4, tool: enrich, args: "{s3}", when: "s3.score > 10"}
  - {id: s5, tool: enrich, args: "{s4}"}
`

var benchInput = map[string]any{"id": "c-42", "name": "Zhang", "score": 40.0, "tags": []any{"go", "sql"}}

func w5Load() workload {
	enrich := tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone, Idempotent: true}, func(_ context.Context, args any) (any, error) {
		in := args.(map[string]any)
		return map[string]any{"id": in["id"], "name": in["name"], "score": in["score"].(float64) + 1, "tags": in["tags"], "ok": true}, nil
	})
	return workload{name: "w5", flow: w5Bench, opts: project.LoadOptions{Tools: []tool.Tool{enrich}}, steps: 5}
}

const agentTurns = 10

func agentLoad() workload {
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Turn <= agentTurns {
			return &model.Response{ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("c%d", req.Turn), Name: "enrich", Args: `{"id":"c-42","score":40}`}}, Usage: model.Usage{In: 10, Out: 5}}, nil
		}
		return &model.Response{Text: "done", Usage: model.Usage{In: 10, Out: 2}}, nil
	})
	enrich := tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone, Idempotent: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"score":{"type":"number"}},"required":["id"]}`)},
		func(_ context.Context, args any) (any, error) {
			return map[string]any{"id": args.(map[string]any)["id"], "score": 41, "ok": true}, nil
		})
	return workload{
		name:  "agent_bench",
		flow:  "name: agent_bench\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: enrich c-42, budgets: {max_turns: 11}, tools: {enrich: }}\n",
		opts:  project.LoadOptions{Tools: []tool.Tool{enrich}, Models: map[string]model.Model{"m": m}},
		steps: agentTurns + 1,
	}
}

// project writes the workload's flow to a folder and loads it.
func (l workload) project(b *testing.B) *project.Project {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(l.flow), 0o600); err != nil {
		b.Fatal(err)
	}
	o := l.opts
	p, err := project.Load(dir, &o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// runFunc runs one run of id to its end.
type runFunc func(ctx context.Context, id string) error

func benchBackends(b *testing.B, l workload) {
	b.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	for _, workers := range []int{1, 2} {
		for _, inFlight := range []int{1, 8, 64} {
			name := fmt.Sprintf("workers=%d/inflight=%d", workers, inFlight)
			b.Run("sqlite/"+name, func(b *testing.B) {
				measure(b, l, inFlight, localRuns(b, l, filepath.Join(b.TempDir(), "rein.db"), workers))
			})
			b.Run("postgres/"+name, func(b *testing.B) {
				measure(b, l, inFlight, localRuns(b, l, pgSchema(b), workers))
			})
			b.Run("temporal/"+name, func(b *testing.B) {
				measure(b, l, inFlight, temporalRuns(b, l, workers))
			})
		}
	}
}

// localRuns are runs on rein.Clients (workers of them) on the store at db.
func localRuns(b *testing.B, l workload, db string, workers int) runFunc {
	ctx := context.Background()
	var clients []*rein.Client
	for range workers {
		cl, err := rein.Open(ctx, rein.Config{DB: db, Load: &l.opts})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cl.Close() })
		clients = append(clients, cl)
	}
	p := l.project(b)
	var next atomic.Int64
	return func(ctx context.Context, id string) error {
		cl := clients[int(next.Add(1))%len(clients)]
		res, err := cl.Start(ctx, p, benchInput, &rein.RunOptions{RunID: id})
		if err != nil {
			return err
		}
		if res.Status != "succeeded" {
			return fmt.Errorf("run %s: %s: %w", id, res.Status, res.Error)
		}
		return nil
	}
}

// pgSchema is the URL of a schema of its own on the test PostgreSQL;
// without one the benchmark is skipped.
func pgSchema(b *testing.B) string {
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip(`needs PostgreSQL: eval "$(bash .ci/postgres)"`)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema := "rein_bench_" + hex.EncodeToString(rnd[:])
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// temporalRuns are runs on an in-process Temporal server (its default
// persistence, SQLite in memory) with workers workers on one queue.
func temporalRuns(b *testing.B, l workload, workers int) runFunc {
	ts := temporaltest.NewServer()
	b.Cleanup(ts.Stop)
	p := l.project(b)
	fs := temporal.NewFlows()
	fs.Add(p)
	for range workers {
		ts.NewWorkerWithOptions(queue, func(r worker.Registry) {
			temporal.Register(r, &temporal.Workflow{Flows: fs}, &temporal.Activities{Flows: fs})
		}, worker.Options{})
	}
	c := ts.GetDefaultClient()
	return func(ctx context.Context, id string) error {
		wr, err := temporal.StartRun(ctx, c, p, benchInput, temporal.StartOptions{RunID: id, TaskQueue: queue})
		if err != nil {
			return err
		}
		var st temporal.Status
		if err := wr.Get(ctx, &st); err != nil {
			return err
		}
		if st.Status != "succeeded" {
			return fmt.Errorf("run %s: %s %+v", id, st.Status, st.Error)
		}
		return nil
	}
}

var benchSeq atomic.Int64

// measure runs b.N runs of run, inFlight at a time, and reports runs/s,
// ms/run and ms/step.
func measure(b *testing.B, l workload, inFlight int, run runFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// one run first, out of the clock: the first run of a worker loads
	// and compiles what later ones reuse.
	if err := run(ctx, fmt.Sprintf("warm-%s-%d", l.name, benchSeq.Add(1))); err != nil {
		b.Fatal(err)
	}
	sem := make(chan struct{}, inFlight)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total time.Duration
		first error
	)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		sem <- struct{}{}
		wg.Add(1)
		id := fmt.Sprintf("b-%s-%d", l.name, benchSeq.Add(1))
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			err := run(ctx, id)
			d := time.Since(t0)
			mu.Lock()
			total += d
			if err != nil && first == nil {
				first = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if first != nil {
		b.Fatal(first)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(total.Seconds()*1e3/float64(b.N), "ms/run")
	b.ReportMetric(total.Seconds()*1e3/float64(b.N*l.steps), "ms/step")
}
