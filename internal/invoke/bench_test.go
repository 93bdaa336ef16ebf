package invoke_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

type nopRecorder struct{}

func (nopRecorder) GateDecided(invoke.Position, *safety.Invocation, safety.Decision) {}
func (nopRecorder) Called(invoke.Record)                                             {}

// BenchmarkCall measures the pipeline's own cost on a tool step's path: no
// schemas, the default gate, no deadline, a recorder.
func BenchmarkCall(b *testing.B) {
	tl := tool.Func(tool.Spec{Name: "t"}, func(_ context.Context, args any) (any, error) { return args, nil })
	spec := tl.Spec()
	p := &invoke.Pipeline{Gate: safety.AllowAll}
	ctx := context.Background()
	args := map[string]any{"id": "c-42", "score": 40.0}
	b.ReportAllocs()
	for b.Loop() {
		req := invoke.Request{Tool: tl, Spec: &spec, Args: args, Recorder: nopRecorder{},
			At: invoke.Position{RunID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", StepID: "s3", Attempt: 1}}
		if _, _, err := p.Call(ctx, &req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallInvalidNone is BenchmarkCall for a tool that declares
// resources, in a run whose registry of invalidated resources is empty
// (invoke.Invalid, its "none" remembered after the first call): the cost
// every call of a durable run pays for the check.
func BenchmarkCallInvalidNone(b *testing.B) {
	tl := tool.Func(tool.Spec{Name: "t", Effect: tool.EffectWrite, Resources: []string{"acct:{args.id}"}},
		func(_ context.Context, args any) (any, error) { return args, nil })
	spec := tl.Spec()
	p := &invoke.Pipeline{Gate: safety.AllowAll}
	ctx := invoke.WithInvalid(context.Background(), &invoke.Invalid{Store: store.Ephemeral})
	args := map[string]any{"id": "c-42", "score": 40.0}
	b.ReportAllocs()
	for b.Loop() {
		req := invoke.Request{Tool: tl, Spec: &spec, Args: args, Recorder: nopRecorder{},
			At: invoke.Position{RunID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", StepID: "s3", Attempt: 1}}
		if _, _, err := p.Call(ctx, &req); err != nil {
			b.Fatal(err)
		}
	}
}
