package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// BenchmarkW5Gated is W5 with the default policy gate (every call checked
// against safety.DefaultRules with its args' provenance and the run's risk
// tier, inside the tier controls, each decision journaled) and W5 without
// a gate, run alternately so that noise hits both; the gate's own Check
// per call; and the whole per-call check — rules, provenance, the tier
// read from the run's context and the call's own assessment — as the
// engine makes it (safety.Controls) (docs/performance.md).
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
	controls := &safety.Controls{Gate: gate, Risk: &safety.RiskConfig{}}
	cctx := safety.WithRunRisk(ctx, safety.NewRunRisk(2, nil, safety.RunRiskConfig{}))
	start = time.Now()
	for i := 0; i < checks; i++ {
		inv.Tier = 0
		if d, _ := controls.Check(cctx, &inv); d.Verdict != safety.Allow {
			b.Fatalf("decision %+v", d)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/checks, "gate+tier-ns/call")
	b.ReportMetric(float64(withGate.Nanoseconds())/float64(n*5), "gated-ns/step")
	b.ReportMetric(float64(without.Nanoseconds())/float64(n*5), "ungated-ns/step")
	b.ReportMetric(float64(withGate)/float64(without), "ratio")
}
