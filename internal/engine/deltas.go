package engine

import (
	"context"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/trace"
)

// deltaTarget is where a run's model calls stream their text: the
// engine's sink, when it is or holds a trace.DeltaSink, through the
// engine's redactor.
type deltaTarget struct {
	sink trace.DeltaSink
	red  *redact.Redactor
}

type deltaKey struct{}

// withDeltas returns ctx carrying the engine's delta target, or ctx as it
// is when the sink takes no deltas (then providers are not streamed).
func (e *Engine) withDeltas(ctx context.Context) context.Context {
	ds := trace.DeltasOf(e.cfg.Sink)
	if ds == nil {
		return ctx
	}
	return context.WithValue(ctx, deltaKey{}, &deltaTarget{sink: ds, red: e.cfg.Redactor})
}

// streamCall returns ctx carrying a model.DeltaFunc for req and the
// function to call with Generate's error once it returns: the text held
// back is passed on (nil) or dropped and a Reset sent when some text was
// delivered (an error). Without a delta target, or for a request whose
// answer is structured, ctx is returned as it is.
func streamCall(ctx context.Context, req *model.Request) (context.Context, func(error)) {
	t, _ := ctx.Value(deltaKey{}).(*deltaTarget)
	if t == nil || len(req.Schema) > 0 {
		return ctx, func(error) {}
	}
	d := trace.Delta{RunID: req.RunID, StepID: req.StepID, Attempt: req.Attempt, Turn: req.Turn, Model: req.Model, Decision: req.Decision,
		SubRun: req.SubRun, Aside: req.Aside}
	sent := false
	s := t.red.Stream(func(text string) {
		sent = true
		d.Text = text
		t.sink.EmitDelta(ctx, d)
	})
	done := func(err error) {
		if err == nil {
			s.Flush()
			return
		}
		s.Drop()
		if sent {
			t.sink.EmitDelta(ctx, trace.Delta{RunID: d.RunID, StepID: d.StepID, Attempt: d.Attempt, Turn: d.Turn, Model: d.Model, Decision: d.Decision,
				SubRun: d.SubRun, Aside: d.Aside, Reset: true})
		}
	}
	return model.WithDeltas(ctx, s.Write), done
}

// withoutDeltas returns ctx whose model calls stream nothing: those of a
// step with output guardrails, whose reply nobody may see before the
// guardrails passed it (its text is shown once it is accepted).
func withoutDeltas(ctx context.Context, guards []*flow.AgentGuardrail) context.Context {
	for _, g := range guards {
		if !g.Input {
			return context.WithValue(ctx, deltaKey{}, (*deltaTarget)(nil))
		}
	}
	return ctx
}
