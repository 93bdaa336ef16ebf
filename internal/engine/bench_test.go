package engine_test

import (
	"context"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/jsonl"
)

// w5 is the W5 workload: a linear 5-step flow of pure Go tools, step 4
// behind a `when` that holds, ~5-field JSON objects between steps.
const w5 = `
name: w5
steps:
  - {id: s1, tool: enrich, args: {id: "{input.id}", name: "{input.name}", score: "{input.score}", tags: "{input.tags}", ok: true}}
  - {id: s2, tool: enrich, args: "{s1}"}
  - {id: s3, tool: enrich, args: "{s2}"}
  - {id: s4, tool: enrich, args: "{s3}", when: "s3.score > 10"}
  - {id: s5, tool: enrich, args: "{s4}"}
`

// enrichFn is W5's tool body.
func enrichFn(_ context.Context, args any) (any, error) {
	in := args.(map[string]any)
	return map[string]any{"id": in["id"], "name": in["name"], "score": in["score"].(float64) + 1, "tags": in["tags"], "ok": true}, nil
}

// directW5 is the same work as W5 written as plain Go calls: the baseline
// the engine's overhead is measured against.
func directW5(ctx context.Context, input map[string]any) any {
	v, _ := enrichFn(ctx, map[string]any{"id": input["id"], "name": input["name"], "score": input["score"], "tags": input["tags"], "ok": true})
	for i := 0; i < 4; i++ {
		if i == 2 && !(v.(map[string]any)["score"].(float64) > 10) {
			continue
		}
		v, _ = enrichFn(ctx, v)
	}
	return v
}

func w5Setup(b *testing.B) (*engine.Engine, *flow.Flow, map[string]any, *jsonl.Sink) {
	b.Helper()
	enrich := tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone}, enrichFn)
	reg := &tool.Registry{}
	if err := reg.Register(enrich); err != nil {
		b.Fatal(err)
	}
	f, err := flow.Parse([]byte(w5), "w5.yaml", &flow.Options{Tools: func(n string) (tool.Spec, bool) {
		t, ok := reg.Lookup(n)
		if !ok {
			return tool.Spec{}, false
		}
		return t.Spec(), true
	}})
	if err != nil {
		b.Fatal(err)
	}
	sink := jsonl.New(io.Discard)
	e := engine.New(engine.Config{Tools: reg, Sink: sinkFor(sink)})
	input := map[string]any{"id": "c-42", "name": "Zhang", "score": 40.0, "tags": []any{"go", "sql"}}
	return e, f, input, sink
}

// BenchmarkW5 measures engine overhead per step on W5, in memory, with the
// JSONL trace sink attached (writing to io.Discard).
func BenchmarkW5(b *testing.B) {
	e, f, input, _ := w5Setup(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := e.Run(ctx, f, input, nil)
		if err != nil || res.Status != "succeeded" {
			b.Fatalf("run: %v %v", err, res.Error)
		}
	}
	perStep := float64(b.Elapsed().Nanoseconds()) / float64(b.N*5)
	// The baseline, measured in the same benchmark so noise hits both.
	const direct = 20000
	start := time.Now()
	for i := 0; i < direct; i++ {
		directW5(ctx, input)
	}
	directPerStep := float64(time.Since(start).Nanoseconds()) / direct / 5
	b.ReportMetric(perStep, "ns/step")
	b.ReportMetric(directPerStep, "direct-ns/step")
	b.ReportMetric(perStep-directPerStep, "overhead-ns/step")
	b.ReportMetric(float64(testing.AllocsPerRun(50, func() { _, _ = e.Run(ctx, f, input, nil) }))/5, "allocs/step")
}

// BenchmarkW5Concurrent1000 starts 1,000 W5 runs at once and reports the
// time until all finished and the peak heap while they ran.
func BenchmarkW5Concurrent1000(b *testing.B) {
	e, f, input, _ := w5Setup(b)
	ctx := context.Background()
	const runs = 1000
	var peak uint64
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Add(1)
		var maxHeap uint64
		go func() {
			defer sampler.Done()
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > maxHeap {
					maxHeap = ms.HeapAlloc
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		var wg sync.WaitGroup
		wg.Add(runs)
		for i := 0; i < runs; i++ {
			go func() {
				defer wg.Done()
				if res, err := e.Run(ctx, f, input, nil); err != nil || res.Status != "succeeded" {
					b.Errorf("run: %v", err)
				}
			}()
		}
		wg.Wait()
		close(stop)
		sampler.Wait()
		if maxHeap > peak {
			peak = maxHeap
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/1000runs")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

var benchNoSink = os.Getenv("REIN_BENCH_NOSINK") != ""

func sinkFor(s *jsonl.Sink) trace.Sink {
	if benchNoSink {
		return trace.Discard
	}
	return s
}
