package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/trace"
)

// deltaRecorder records events and deltas.
type deltaRecorder struct {
	recorder
	mu     sync.Mutex
	deltas []trace.Delta
}

func (d *deltaRecorder) EmitDelta(_ context.Context, x trace.Delta) {
	d.mu.Lock()
	d.deltas = append(d.deltas, x)
	d.mu.Unlock()
}

// streamer writes its reply in pieces of 7 bytes to the call's
// DeltaFunc; its first call fails (transient) after half the reply.
func streamer(reply string) (model.Model, *int) {
	calls := 0
	return model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls++
		fn := model.DeltasOf(ctx, req)
		end := len(reply)
		if calls == 1 {
			end = len(reply) / 2
		}
		for i := 0; i < end && fn != nil; i += 7 {
			fn(reply[i:min(i+7, end)])
		}
		if calls == 1 {
			return nil, fault.TransientErr(errors.New("stream cut"))
		}
		return &model.Response{Text: reply, Usage: model.Usage{In: 3, Out: 9}}, nil
	}), &calls
}

// A run whose sink is a trace.DeltaSink gets its model calls' text as it
// is written, redacted, with a Reset when a call fails after some text;
// the journal holds the final reply only. An llm step and an agent step.
func TestModelDeltasReachADeltaSinkNotTheJournal(t *testing.T) {
	t.Parallel()
	const secret = "tiger-lily-secret-42"
	reply := strings.Repeat("the order ships on monday. ", 6) + "token " + secret + " done."
	for _, tc := range []struct{ name, src string }{
		{"llm", "name: s\nsteps:\n  - {id: ask, type: llm, model: m, prompt_template: hi, retries: 1}\n"},
		{"agent", "name: s\nsteps:\n  - {id: ask, type: agent, model: m, instructions: help, prompt_template: hi, retries: 1, tools: {status: }}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := agentTools(t.TempDir(), "")
			m, calls := streamer(reply)
			models := &model.Registry{}
			models.Register("m", m)
			f, err := flow.Parse([]byte(tc.src), "s.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
			if err != nil {
				t.Fatal(err)
			}
			sink := &deltaRecorder{}
			e := engine.New(engine.Config{Tools: reg, Models: models, Clock: &fakeClock{}, Sink: sink, Redactor: redact.New(secret), Store: openSQLite(t)})
			res, err := e.Run(context.Background(), f, map[string]any{}, nil)
			if err != nil || res.Status != trace.RunSucceeded {
				t.Fatalf("run: %v %+v", err, res)
			}
			if *calls != 2 {
				t.Fatalf("model called %d times, want 2 (one retry)", *calls)
			}
			var text strings.Builder
			resets := 0
			for _, d := range sink.deltas {
				if d.RunID != res.RunID || d.StepID != "ask" || d.Model != "m" {
					t.Fatalf("delta %+v does not name run %s, step ask, model m", d, res.RunID)
				}
				if d.Reset {
					resets++
					text.Reset()
					continue
				}
				if strings.Contains(d.Text, secret[:6]) {
					t.Fatalf("delta %q holds the secret", d.Text)
				}
				text.WriteString(d.Text)
			}
			if want := redact.New(secret).String(reply); text.String() != want || resets != 1 {
				t.Fatalf("deltas give %q with %d resets, want %q and 1 reset", text.String(), resets, want)
			}
			if len(sink.deltas) < 3 {
				t.Fatalf("%d deltas, want the reply in pieces", len(sink.deltas))
			}
			for _, ev := range sink.all() {
				if strings.Contains(string(ev.Kind), "delta") {
					t.Fatalf("a delta reached the events: %+v", ev)
				}
			}
		})
	}
}

// Without a DeltaSink no DeltaFunc is handed to the model: providers are
// then called without streaming.
func TestNoDeltaSinkNoStreaming(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	var got model.DeltaFunc
	fx.models.Register("m", model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		got = model.DeltasOf(ctx, req)
		return &model.Response{Text: "ok"}, nil
	}))
	res := fx.run("name: s\nsteps:\n  - {id: ask, type: llm, model: m, prompt_template: hi}\n", map[string]any{})
	wantStatus(t, res, trace.RunSucceeded)
	if got != nil {
		t.Fatal("the model got a DeltaFunc though the sink takes no deltas")
	}
}
