package trace_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/trace"
)

type deltas struct{ got []string }

func (d *deltas) Emit(context.Context, *trace.Event)         {}
func (d *deltas) EmitDelta(_ context.Context, x trace.Delta) { d.got = append(d.got, x.Text) }

// DeltasOf finds the DeltaSinks in a Multi and behind an Async, and is
// nil for sinks that take no deltas.
func TestDeltasOf(t *testing.T) {
	a, b := &deltas{}, &deltas{}
	async := trace.NewAsync(b, nil)
	defer async.Close(context.Background())
	ds := trace.DeltasOf(trace.Multi(trace.Discard, a, async))
	if ds == nil {
		t.Fatal("no DeltaSink found in a Multi holding two")
	}
	ds.EmitDelta(context.Background(), trace.Delta{Text: "hi"})
	if len(a.got) != 1 || len(b.got) != 1 {
		t.Fatalf("deltas reached %v and %v, want one each", a.got, b.got)
	}
	quiet := trace.NewAsync(trace.Discard, nil)
	defer quiet.Close(context.Background())
	if trace.DeltasOf(trace.Multi(trace.Discard, quiet)) != nil || trace.DeltasOf(nil) != nil {
		t.Fatal("a DeltaSink found where there is none")
	}
}
