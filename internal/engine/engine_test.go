package engine_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSequenceAndDefaultArgs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t,
		goTool("double", func(_ context.Context, a map[string]any) (any, error) {
			return map[string]any{"n": a["n"].(float64) * 2}, nil
		}),
		goTool("collect", func(_ context.Context, a map[string]any) (any, error) { return a, nil }),
	)
	res := fx.run(`
name: seq
inputs: {type: object, properties: {n: {type: number}}, required: [n]}
steps:
  - {id: a, tool: double, args: {n: "{n}"}}
  - {id: b, tool: double, args: {n: "{a.n}"}}
  - {id: c, tool: collect}
`, map[string]any{"n": 3})
	wantStatus(t, res, trace.RunSucceeded)
	want := map[string]any{"b": map[string]any{"n": 12.0}}
	if !reflect.DeepEqual(res.Outputs["c"], want) {
		t.Fatalf("c got %v, want the outputs of its direct requires %v", res.Outputs["c"], want)
	}
}

func TestParallelBranchesRunConcurrently(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	slow := func(name string) tool.Tool {
		return goTool(name, func(ctx context.Context, _ map[string]any) (any, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(30 * time.Millisecond)
			running.Add(-1)
			return map[string]any{"ok": true}, nil
		})
	}
	fx := newFixture(t, slow("left"), slow("right"), slow("mid"), goTool("join", func(_ context.Context, a map[string]any) (any, error) { return a, nil }))
	src := `
name: diamond
concurrency: %d
steps:
  - {id: l, tool: left, requires: []}
  - {id: m, tool: mid, requires: []}
  - {id: r, tool: right, requires: []}
  - {id: j, tool: join, requires: [l, m, r]}
`
	res := fx.run(strings.Replace(src, "%d", "8", 1), nil)
	wantStatus(t, res, trace.RunSucceeded)
	if peak.Load() < 2 {
		t.Fatalf("peak concurrency %d: independent steps did not run in parallel", peak.Load())
	}
	if len(res.Outputs["j"].(map[string]any)) != 3 {
		t.Fatalf("join saw %v", res.Outputs["j"])
	}
	peak.Store(0)
	res = fx.run(strings.Replace(src, "%d", "1", 1), nil)
	wantStatus(t, res, trace.RunSucceeded)
	if peak.Load() != 1 {
		t.Fatalf("concurrency: 1 but %d steps ran at once", peak.Load())
	}
}

func TestWhenAndSkipPropagation(t *testing.T) {
	t.Parallel()
	echo := goTool("echo", func(_ context.Context, a map[string]any) (any, error) { return map[string]any{"v": 1.0}, nil })
	fx := newFixture(t, echo)
	res := fx.run(`
name: skips
steps:
  - {id: a, tool: echo, args: {}}
  - {id: b, tool: echo, when: "a.v > 5"}
  - {id: c, tool: echo}
  - {id: d, tool: echo}
  - {id: reads, tool: echo, args: {x: "{b.v}"}}
  - {id: reads_ns, tool: echo, when: "steps.b.output.v > 0"}
  - {id: after_reader, tool: echo}
  - {id: needs, tool: echo, requires: [b]}
  - {id: needs_status, tool: echo, requires: [b], when: "steps.b.status == 'skipped'"}
  - {id: e, tool: echo, requires: [b], when: "{steps.b.status} != 'skipped'"}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "a", trace.StepSucceeded, 1)
	wantStep(t, res, "b", trace.StepSkipped, 0)
	wantStep(t, res, "c", trace.StepSucceeded, 1) // a plain list is ordering, not a dependency
	wantStep(t, res, "d", trace.StepSucceeded, 1)
	wantStep(t, res, "reads", trace.StepSkipped, 0)    // reads b's output
	wantStep(t, res, "reads_ns", trace.StepSkipped, 0) // reads b's output through steps.
	wantStep(t, res, "after_reader", trace.StepSucceeded, 1)
	wantStep(t, res, "needs", trace.StepSkipped, 0)          // names b in requires
	wantStep(t, res, "needs_status", trace.StepSucceeded, 1) // its when reads b's status
	wantStep(t, res, "e", trace.StepSkipped, 0)              // when reads b's status and is false
	if _, ok := res.Outputs["b"]; ok {
		t.Fatal("a skipped step has no output")
	}
}

func TestMandatoryStepCannotBeSkipped(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, goTool("echo", func(_ context.Context, a map[string]any) (any, error) { return map[string]any{"v": 1.0}, nil }))
	res := fx.run(`
name: mandatory
steps:
  - {id: a, tool: echo, args: {}}
  - {id: b, tool: echo, when: "a.v > 5", mandatory: true}
`, nil)
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "mandatory step cannot be skipped")
}

func TestRetriesByErrorClass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		err       error
		failFirst int
		step      string
		status    trace.RunStatus
		calls     int
	}{
		{"transient retried until success", errTransient, 2, "retries: 3", trace.RunSucceeded, 3},
		{"transient gives up after retries", errTransient, 9, "retries: 2", trace.RunFailed, 3},
		{"business never retried", fault.BusinessErr(errors.New("bad data")), 9, "retries: 3", trace.RunFailed, 1},
		{"unclassified is business", errors.New("plain"), 9, "retries: 3", trace.RunFailed, 1},
		{"on_error retry retries business", fault.BusinessErr(errors.New("bad data")), 2, "retries: 3, on_error: retry", trace.RunSucceeded, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &counter{}
			fx := newFixture(t, c.tool("flaky", tc.failFirst, tc.err))
			res := fx.run("name: r\nsteps:\n  - {id: s, tool: flaky, args: {}, "+tc.step+"}\n", nil)
			wantStatus(t, res, tc.status)
			if c.Calls() != tc.calls {
				t.Fatalf("tool called %d times, want %d", c.Calls(), tc.calls)
			}
			if got := len(fx.clock.Waits()); errors.Is(tc.err, errTransient) && got != tc.calls-1 {
				t.Fatalf("%d backoff waits for %d calls", got, tc.calls)
			}
			// idempotency keys are stable per attempt: run/step/attempt
			for i, k := range c.keys {
				if !strings.HasSuffix(k, "/s/"+string(rune('1'+i))) || !strings.HasPrefix(k, res.RunID+"/") {
					t.Fatalf("key %d = %q", i, k)
				}
			}
		})
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("flaky", 5, errTransient))
	res := fx.run(`
name: b
steps:
  - {id: s, tool: flaky, args: {}, retries: 5, backoff: {initial: 100ms, max: 300ms, multiplier: 2}}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	waits := fx.clock.Waits()
	bounds := [][2]time.Duration{{50, 100}, {100, 200}, {150, 300}, {150, 300}, {150, 300}}
	for i, w := range waits {
		lo, hi := bounds[i][0]*time.Millisecond, bounds[i][1]*time.Millisecond
		if w < lo || w > hi {
			t.Fatalf("wait %d = %s, want within [%s, %s] (exponential, capped, jittered)", i+1, w, lo, hi)
		}
	}
}

func TestOnErrorSkipAndFallback(t *testing.T) {
	t.Parallel()
	c := &counter{}
	backup := goTool("backup", func(_ context.Context, a map[string]any) (any, error) {
		return map[string]any{"from": "backup", "city": a["city"]}, nil
	})
	fx := newFixture(t, c.tool("broken", 99, fault.BusinessErr(errors.New("no such city"))), backup)
	res := fx.run(`
name: fb
steps:
  - {id: skipper, tool: broken, args: {}, on_error: skip, fallback_value: {from: default}}
  - {id: valuer, tool: broken, args: {}, on_error: fallback, fallback_value: {from: value}, requires: []}
  - id: tooler
    tool: broken
    args: {}
    requires: []
    on_error: fallback
    fallback: {tool: backup, args: {city: Tokyo}}
  - {id: after, tool: backup, args: {city: "{skipper.from}"}, requires: [skipper]}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "skipper", trace.StepDefaulted, 1)
	wantStep(t, res, "valuer", trace.StepFellBack, 1)
	wantStep(t, res, "tooler", trace.StepFellBack, 1)
	if got := res.Outputs["tooler"].(map[string]any)["from"]; got != "backup" {
		t.Fatalf("tooler output %v", res.Outputs["tooler"])
	}
	if got := res.Outputs["after"].(map[string]any)["city"]; got != "default" {
		t.Fatalf("downstream of a defaulted step saw %v", got)
	}
	if res.Steps["skipper"].Error == nil || !strings.Contains(res.Steps["skipper"].Error.Message, "no such city") {
		t.Fatalf("the absorbed failure is kept on the step: %v", res.Steps["skipper"].Error)
	}
}

func TestFormatErrorGetsOneCorrectiveRetry(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	m := scripted.New([]scripted.Reply{
		{Step: "score", Raw: raw("I'd say about 80.")},
		{Step: "score", Output: map[string]any{"score": 80}},
		{Step: "twice", Raw: raw("nope")},
		{Step: "twice", Raw: raw(`{"score": "high"}`)},
	})
	spy := &spyModel{inner: m}
	fx.models.SetFallback(spy)
	res := fx.run(`
name: fmt
schemas:
  score: {type: object, properties: {score: {type: number}}, required: [score], additionalProperties: false}
steps:
  - {id: score, type: llm, model: m, prompt_template: "score it", output_schema: score, requires: []}
  - {id: twice, type: llm, model: m, prompt_template: "score again", output_schema: score, requires: [], on_error: fallback, fallback_value: {score: 0}}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	// the corrective request belongs to the attempt it corrects.
	wantStep(t, res, "score", trace.StepSucceeded, 1)
	wantStep(t, res, "twice", trace.StepFellBack, 1)
	corr := spy.corrective("score")
	if corr == nil || corr.Attempt != 1 {
		t.Fatalf("no corrective request within attempt 1: %+v", corr)
	}
	if res.Usage.LLMCalls != 4 {
		t.Fatalf("llm_calls %d, want 4: corrective requests are model calls too", res.Usage.LLMCalls)
	}
	last := corr.Messages[len(corr.Messages)-1].Content
	if !strings.Contains(last, "not JSON") || !strings.Contains(last, "I'd say about 80.") {
		t.Fatalf("corrective prompt lacks the error and the fragment: %q", last)
	}
	if got := res.Steps["twice"].Error.Class; got != fault.Format {
		t.Fatalf("twice failed with %s, want format", got)
	}
	if !strings.Contains(res.Steps["twice"].Error.Message, "/score") {
		t.Fatalf("schema error lacks the JSON pointer: %s", res.Steps["twice"].Error.Message)
	}
}

func TestModelFallback(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.script(
		scripted.Reply{Step: "s", Model: "big", Error: fault.Business, Message: "refused"},
		scripted.Reply{Step: "s", Model: "small", Output: "small answer"},
	)
	res := fx.run(`
name: mf
steps:
  - {id: s, type: llm, model: big, prompt_template: "hi", on_error: fallback, fallback: {model: small}}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "s", trace.StepFellBack, 1)
	if res.Outputs["s"] != `"small answer"` {
		t.Fatalf("output %q", res.Outputs["s"])
	}
}

func TestGoToolPanicFailsTheStep(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, goTool("boom", func(context.Context, map[string]any) (any, error) { panic("kaboom") }))
	res := fx.run("name: p\nsteps:\n  - {id: s, tool: boom, args: {}, retries: 3}\n", nil)
	wantStatus(t, res, trace.RunFailed)
	wantStep(t, res, "s", trace.StepFailed, 1)
	wantErrorClass(t, res, fault.Business, "panicked: kaboom")
	if res.Error.Origin != trace.OriginTool {
		t.Fatalf("origin %s", res.Error.Origin)
	}
}

func TestStepTimeoutIsTransient(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	hang := goTool("hang", func(ctx context.Context, _ map[string]any) (any, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return map[string]any{"ok": true}, nil
	})
	fx := newFixture(t, hang)
	res := fx.run("name: t\nsteps:\n  - {id: s, tool: hang, args: {}, timeout: 20ms, retries: 1}\n", nil)
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "s", trace.StepSucceeded, 2)
	evs := fx.events.all()
	found := false
	for _, e := range evs {
		if e.Kind == trace.AttemptFailed && e.ErrorClass == "transient" && strings.Contains(e.Error, "timed out after 20ms") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no transient timeout attempt in %v", evs)
	}
}

func TestMaxOutputBytes(t *testing.T) {
	t.Parallel()
	big := goTool("big", func(context.Context, map[string]any) (any, error) {
		return map[string]any{"blob": strings.Repeat("x", 2000)}, nil
	})
	fx := newFixture(t, big)
	res := fx.run("name: m\nsteps:\n  - {id: s, tool: big, args: {}, max_output_bytes: 1000}\n", nil)
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "more than max_output_bytes 1000")
}

func TestPolicyGateBlocks(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("send", 0, nil))
	gate := gateFunc(func(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
		return safety.Decision{Verdict: safety.Block, Reason: "no sending on Sundays"}, nil
	})
	e := engine.New(engine.Config{Tools: fx.tools, Gate: gate, Sink: fx.events})
	res, err := e.Run(context.Background(), fx.parse("name: g\nsteps:\n  - {id: s, tool: send, args: {}, on_error: skip}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	wantStep(t, res, "s", trace.StepBlocked, 1)
	wantErrorClass(t, res, fault.Policy, "no sending on Sundays")
	if c.Calls() != 0 {
		t.Fatal("a blocked tool was called")
	}
}

type gateFunc func(context.Context, *safety.Invocation) (safety.Decision, error)

func (g gateFunc) Check(ctx context.Context, inv *safety.Invocation) (safety.Decision, error) {
	return g(ctx, inv)
}

func TestCancellationStopsInFlightSteps(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	hang := goTool("hang", func(ctx context.Context, _ map[string]any) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	fx := newFixture(t, hang, goTool("never", func(context.Context, map[string]any) (any, error) {
		t.Error("a step after the cancelled one ran")
		return nil, nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := fx.engine().Run(ctx, fx.parse("name: c\nsteps:\n  - {id: s, tool: hang, args: {}, retries: 5}\n  - {id: n, tool: never}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunCancelled)
	wantStep(t, res, "n", trace.StepPending, 0)
}
