package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/summary"
)

// stepClock reads a fixed time that only the test moves forward.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *stepClock) Sleep(ctx context.Context, _ time.Duration) error { return context.Cause(ctx) }

// AfterFunc and WithDeadline run on real time from the stepped now.
func (c *stepClock) AfterFunc(d time.Duration, f func()) engine.Timer {
	return engine.SystemClock.AfterFunc(d, f)
}

func (c *stepClock) WithDeadline(ctx context.Context, at time.Time) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, at.Sub(c.Now()))
}

func eventsOf(evs []trace.Event, kind trace.Kind, step string) []trace.Event {
	var out []trace.Event
	for _, e := range evs {
		if e.Kind == kind && (step == "" || e.StepID == step) {
			out = append(out, e)
		}
	}
	return out
}

// A step that took 137 µs says so: its duration is not dropped as zero.
func TestSubMillisecondDurationsArePresent(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	fx := newFixture(t, goTool("quick", func(context.Context, map[string]any) (any, error) {
		clock.advance(137 * time.Microsecond)
		return map[string]any{"ok": true}, nil
	}))
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: clock, Sink: fx.events})
	res, err := e.Run(context.Background(), fx.parse("name: quick\nsteps:\n  - {id: q, tool: quick, args: {}}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Steps["q"].Duration; d != 137*time.Microsecond {
		t.Fatalf("step duration %v, want 137µs", d)
	}
	settled := eventsOf(fx.events.all(), trace.StepSettled, "q")
	if len(settled) != 1 || settled[0].DurationMS != 0.137 {
		t.Fatalf("step_settled %+v, want duration_ms 0.137", settled)
	}
	line := string(trace.AppendJSON(nil, &settled[0]))
	if !strings.Contains(line, `"duration_ms":0.137,`) {
		t.Fatalf("journal line %s lacks duration_ms 0.137", line)
	}
	run := eventsOf(fx.events.all(), trace.RunSettled, "")
	if len(run) != 1 || run[0].DurationMS != 0.137 {
		t.Fatalf("run_settled %+v, want duration_ms 0.137", run)
	}
}

// A reply that breaks the output schema gets one corrective request inside
// the same attempt: it is counted as a correction, not as an attempt or a
// failure, by the result and by the trace summary alike; the step's model
// calls and tokens are in its result.
func TestCorrectiveRetryIsCountedAsSuch(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.script(
		scripted.Reply{Step: "x", Raw: raw(`{"name": 7}`), Tokens: &model.Usage{In: 10, Out: 2}},
		scripted.Reply{Step: "x", Output: map[string]any{"name": "Ada"}, Tokens: &model.Usage{In: 30, Out: 3}},
	)
	res := fx.run(`name: fix
schemas:
  person: {type: object, properties: {name: {type: string}}, required: [name], additionalProperties: false}
steps:
  - {id: x, type: llm, model: m, prompt_template: "who?", output_schema: person}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	st := res.Steps["x"]
	if use := st.ModelUse(); st.Attempts != 1 || use.Corrections != 1 || use.LLMCalls != 2 || use.TokensIn != 40 || use.TokensOut != 5 {
		t.Fatalf("step result %+v, want 1 attempt, 1 correction, 2 calls, 40/5 tokens", st)
	}
	evs := fx.events.all()
	if n := len(eventsOf(evs, trace.AttemptFailed, "")); n != 0 {
		t.Fatalf("%d attempt_failed events for a corrected reply", n)
	}
	corr := eventsOf(evs, trace.CorrectiveRetry, "x")
	if len(corr) != 1 || corr[0].Attempt != 1 || corr[0].ErrorClass != "format" || corr[0].Origin != trace.OriginModel {
		t.Fatalf("corrective_retry events %+v", corr)
	}
	s := summary.Summarize(evs).Runs[0].Steps[0]
	if s.Attempts != 1 || s.Retries != 0 || s.Corrections != 1 || len(s.Failures) != 0 || s.ModelCalls != 2 {
		t.Fatalf("trace summary of x: %+v", s)
	}
	var text strings.Builder
	if err := summary.Summarize(evs).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "retried: none") || !strings.Contains(text.String(), "failures: none") {
		t.Fatalf("rein trace text:\n%s", text.String())
	}
}

// For for_each steps the result and the trace agree on attempts: the
// highest attempt any item reached.
func TestForEachAttemptsAgreeWithTheTrace(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	tried := map[any]int{}
	fx := newFixture(t, goTool("each", func(_ context.Context, args map[string]any) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		tried[args["v"]]++
		if args["v"] == "b" && tried["b"] == 1 {
			return nil, errTransient
		}
		return args, nil
	}))
	res := fx.run(`name: each
steps:
  - {id: e, tool: each, for_each: "input.items", concurrency: 1, args: {v: "{item}"}, retries: 2}
`, map[string]any{"items": []any{"a", "b", "c"}})
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "e", trace.StepSucceeded, 2)
	s := summary.Summarize(fx.events.all()).Runs[0].Steps[0]
	if s.Attempts != 2 || s.Retries != 1 {
		t.Fatalf("trace summary says %d attempts, %d retries; the result says 2 attempts", s.Attempts, s.Retries)
	}
}

// A plan the planner's validation rejects is traced as plan_rejected (the
// model's doing), counted as the step's correction.
func TestPlannerRejectionIsTraced(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, goTool("lookup", func(_ context.Context, args map[string]any) (any, error) {
		return map[string]any{"found": true}, nil
	}))
	fx.script(
		scripted.Reply{Step: "p", Plan: map[string]any{"goal": "g", "steps": []any{map[string]any{"id": "a", "tool": "nope", "args": map[string]any{}}}}},
		scripted.Reply{Step: "p", Plan: map[string]any{"goal": "g", "steps": []any{map[string]any{"id": "a", "tool": "lookup", "args": map[string]any{}}}}},
	)
	res := fx.run(`name: planned
steps:
  - {id: p, type: plan, model: m, goal: "find it", tools: [lookup]}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	rej := eventsOf(fx.events.all(), "plan_rejected", "p")
	if len(rej) != 1 || rej[0].Status != "corrected" || rej[0].Origin != trace.OriginModel || !strings.Contains(rej[0].Error, "nope") {
		t.Fatalf("plan_rejected events %+v, want one from the planner naming the unknown tool", rej)
	}
	if st := res.Steps["p"]; st.ModelUse().Corrections != 1 || st.ModelUse().LLMCalls != 2 {
		t.Fatalf("plan step result %+v, want 1 correction in 2 model calls", st)
	}
	if s := summary.Summarize(fx.events.all()).Runs[0].Steps[0]; s.Corrections != 1 {
		t.Fatalf("trace summary of p: %+v", s)
	}
}

// A resumed run's result covers its whole life: its duration from its
// creation, its model calls and tokens (run and step) from every process.
func TestResumedRunReportsItsWholeLife(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	fx.script(scripted.Reply{Step: "ask", Output: "hi", Tokens: &model.Usage{In: 7, Out: 1}})
	st := openSQLite(t)
	clock := &stepClock{now: time.Now()}
	durable := func(owner string) *engine.Engine {
		return engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: clock, Sink: fx.events, Store: st, Owner: owner})
	}
	f := fx.parse(`name: whole
steps:
  - {id: ask, type: llm, model: m, prompt_template: "say hi"}
  - {id: ok, type: approval, message: "fine?"}
`)
	res, err := durable("p1").Run(ctx, f, nil, &engine.RunOptions{RunID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "w", StepID: "ok", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Hour) // the person took an hour to decide
	res, err = durable("p2").Resume(ctx, f, "w")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if res.Duration < 59*time.Minute {
		t.Fatalf("resumed run duration %v, want its whole life (over an hour)", res.Duration)
	}
	settled := eventsOf(fx.events.all(), trace.RunSettled, "")
	if len(settled) != 1 || settled[0].Duration() < 59*time.Minute {
		t.Fatalf("run_settled %+v, want the whole life", settled)
	}
	if res.Usage.LLMCalls != 1 || res.Usage.TokensIn != 7 || res.Steps["ask"].ModelUse().LLMCalls != 1 || res.Steps["ask"].ModelUse().TokensIn != 7 {
		t.Fatalf("usage %+v, step %+v: the first process's model call is missing", res.Usage, res.Steps["ask"])
	}
	res, err = durable("p3").Status(ctx, "w")
	if err != nil || res.Steps["ask"].ModelUse().LLMCalls != 1 || res.Steps["ask"].ModelUse().TokensOut != 1 || res.Duration < 59*time.Minute {
		t.Fatalf("status of the finished run: %v, step %+v, duration %v", err, res.Steps["ask"], res.Duration)
	}
}
