package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/engine"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// BenchmarkW5Gated is W5 with the default policy gate (every call checked
// against safety.DefaultRules with its args' provenance, each decision
// journaled) and W5 without a gate, run alternately so that noise hits
// both, and the gate's own Check per call (docs/performance.md).
func BenchmarkW5Gated(b *testing.B) {
	plain, f, input, sink := w5Setup(b)
	reg := &tool.Registry{}
	if err := reg.Register(tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone}, enrichFn)); err != nil {
		b.Fatal(err)
	}
	gate := &safety.Policy{Rules: safety.DefaultRules()}
	gated := engine.New(engine.Config{Tools: reg, Sink: sinkFor(sink), Gate: gate})
	ctx := context.Background()
	run := func(e *engine.Engine) time.Duration {
		start := time.Now()
		res, err := e.Run(ctx, f, input, nil)
		if err != nil || res.Status != "succeeded" {
			b.Fatalf("run: %v %v", err, res.Error)
		}
		return time.Since(start)
	}
	var withGate, without time.Duration
	n := 0
	for b.Loop() {
		without += run(plain)
		withGate += run(gated)
		n++
	}
	inv := safety.Invocation{Tool: tool.Spec{Name: "enrich", Effect: tool.EffectWrite},
		Provenance: safety.Provenance{"/id": {safety.OriginUser}, "/name": {safety.OriginUser}, "/score": {"tool:enrich"}, "/tags": {safety.OriginDB}}}
	const checks = 100000
	start := time.Now()
	for i := 0; i < checks; i++ {
		_, _ = gate.Check(ctx, &inv)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/checks, "gate-ns/call")
	b.ReportMetric(float64(withGate.Nanoseconds())/float64(n*5), "gated-ns/step")
	b.ReportMetric(float64(without.Nanoseconds())/float64(n*5), "ungated-ns/step")
	b.ReportMetric(float64(withGate)/float64(without), "ratio")
}
