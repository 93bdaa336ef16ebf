package engine_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// loops is a for_each step over 16 items (4 at once, the default) and a
// repeat step of 8 rounds, each an in-process tool call.
const loops = `name: loops
steps:
  - {id: each, tool: enrich, for_each: "input.items", args: {id: "{item}", name: "n", score: 1, tags: [], ok: true}}
  - {id: again, tool: enrich, args: {id: "x", name: "n", score: 1, tags: [], ok: true}, repeat: {until: "output.score > 100", max: 8}}
`

// BenchmarkForEachRepeat measures a run of a for_each step of 16 items
// and a repeat step of 8 rounds, in memory, without a sink.
func BenchmarkForEachRepeat(b *testing.B) {
	reg := &tool.Registry{}
	if err := reg.Register(tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone}, enrichFn)); err != nil {
		b.Fatal(err)
	}
	f, err := flow.Parse([]byte(loops), "loops.yaml", &flow.Options{Tools: func(n string) (tool.Spec, bool) {
		t, ok := reg.Lookup(n)
		if !ok {
			return tool.Spec{}, false
		}
		return t.Spec(), true
	}})
	if err != nil {
		b.Fatal(err)
	}
	e := engine.New(engine.Config{Tools: reg, Sink: trace.Discard})
	items := make([]any, 16)
	for i := range items {
		items[i] = float64(i)
	}
	input := map[string]any{"items": items}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.Run(ctx, f, input, nil)
		if err != nil || res.Status != "succeeded" {
			b.Fatalf("run: %v %v", err, res.Error)
		}
	}
}
