package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// calls collects the engine's call records (Config.OnCall).
type calls struct {
	mu   sync.Mutex
	recs []invoke.Record
	late chan invoke.Record
}

func newCalls() *calls { return &calls{late: make(chan invoke.Record, 16)} }

func (c *calls) on(rec invoke.Record) {
	c.mu.Lock()
	c.recs = append(c.recs, rec)
	c.mu.Unlock()
	if rec.Outcome == invoke.Late {
		c.late <- rec
	}
}

func (c *calls) all() []invoke.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}

// waitLate returns the next Late record, or fails the test after a minute.
func (c *calls) waitLate(t *testing.T) invoke.Record {
	t.Helper()
	select {
	case rec := <-c.late:
		return rec
	case <-time.After(time.Minute):
		t.Fatal("no late record")
		return invoke.Record{}
	}
}

// notifySink is a trace sink that signals the first event of one kind.
type notifySink struct {
	*recorder
	kind trace.Kind
	once sync.Once
	seen chan struct{}
}

func (s *notifySink) Emit(ctx context.Context, e *trace.Event) {
	s.recorder.Emit(ctx, e)
	if e.Kind == s.kind {
		s.once.Do(func() { close(s.seen) })
	}
}

// stubborn is a tool that ignores its context: attempt 1 (or every call,
// with every) sleeps 2s or until release is closed, then "succeeds".
func stubborn(name string, release <-chan struct{}, every bool, next func(ctx context.Context) (any, error)) tool.Tool {
	return goTool(name, func(ctx context.Context, _ map[string]any) (any, error) {
		if every || tool.CallInfoFrom(ctx).Attempt == 1 {
			select { // ctx.Done() deliberately not watched
			case <-release:
			case <-time.After(2 * time.Second):
			}
			return map[string]any{"from": "late"}, nil
		}
		return next(ctx)
	})
}

// TestToolIgnoringItsDeadlineTimesOut: a Go tool that ignores ctx in a step
// with timeout 300ms fails the attempt at the deadline with a transient
// timeout, the retry policy applies, and what the tool returns later is
// discarded and recorded — never counted as success.
func TestToolIgnoringItsDeadlineTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	fx := newFixture(t, stubborn("slow", release, true, nil))
	c := newCalls()
	e := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Sink: fx.events, OnCall: c.on})
	start := time.Now()
	res, err := e.Run(context.Background(), fx.parse("name: t\nsteps:\n  - {id: s, tool: slow, args: {}, timeout: 300ms, retries: 1}\n"), nil, nil)
	elapsed := time.Since(start)
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	wantStep(t, res, "s", trace.StepFailed, 2) // the transient timeout was retried once
	wantErrorClass(t, res, fault.Transient, "timed out after 300ms (the step's timeout)")
	if !strings.Contains(res.Error.Message, "discarded") {
		t.Errorf("the error does not say the late result is discarded: %s", res.Error.Message)
	}
	// two attempts of 300ms (the fake clock's backoff is instant), not two
	// of the tool's 2s.
	if elapsed < 600*time.Millisecond || elapsed >= 2*time.Second {
		t.Errorf("two attempts of 300ms took %s", elapsed)
	}
	var failed int
	for _, ev := range fx.events.all() {
		if ev.Kind == trace.AttemptFailed && ev.ErrorClass == string(fault.Transient) && strings.Contains(ev.Error, "timed out after 300ms") {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("%d transient timeout attempts in the trace, want 2", failed)
	}
	for range 2 {
		if rec := c.waitLate(t); rec.Tool != "slow" || rec.Err != nil || !strings.HasPrefix(rec.Key, res.RunID+"/s/") {
			t.Errorf("late record %+v", rec)
		}
	}
	var timedOut int
	for _, rec := range c.all() {
		if rec.Outcome == invoke.TimedOut && rec.Abandoned {
			timedOut++
		}
		if rec.Outcome == invoke.OK {
			t.Errorf("a call of a tool that ignored its deadline counted as success: %+v", rec)
		}
	}
	if timedOut != 2 {
		t.Errorf("%d abandoned timed-out records, want 2: %+v", timedOut, c.all())
	}
}

// lateThenRetry returns the tool "slow", whose attempt 1 ignores its
// deadline and returns late, and whose retry waits until that late result
// reached the sink it returns as call_discarded.
func lateThenRetry() (tool.Tool, *notifySink) {
	release := make(chan struct{})
	sink := &notifySink{recorder: &recorder{}, kind: trace.CallDiscarded, seen: make(chan struct{})}
	slow := stubborn("slow", release, false, func(context.Context) (any, error) {
		close(release) // let attempt 1 return now, and wait until its result was journaled
		select {
		case <-sink.seen:
			return map[string]any{"from": "retry"}, nil
		case <-time.After(10 * time.Second):
			return nil, fault.Errorf(fault.Business, "the late result of attempt 1 was never journaled")
		}
	})
	return slow, sink
}

// TestLateResultIsJournaledAndDiscarded: a late result that arrives while
// the run goes on is journaled as call_discarded (in the durable journal
// too), and the step's output is the retry's, not the late one.
func TestLateResultIsJournaledAndDiscarded(t *testing.T) {
	t.Parallel()
	slow, sink := lateThenRetry()
	fx := newFixture(t, slow)
	st := openSQLite(t)
	e := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Sink: sink, Store: st})
	res, err := e.Run(context.Background(), fx.parse("name: t\nsteps:\n  - {id: s, tool: slow, args: {}, timeout: 300ms, retries: 1}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "s", trace.StepSucceeded, 2)
	if got := fmt.Sprint(res.Outputs["s"]); got != "map[from:retry]" {
		t.Errorf("output %s, want the retry's", got)
	}
	evs, err := st.Events(context.Background(), res.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, fmt.Sprintf("%s/%d", ev.Kind, ev.Attempt))
		if ev.Kind == trace.CallDiscarded && (ev.StepID != "s" || ev.Tool != "slow" || ev.Status != "late" || !strings.Contains(ev.Error, "discarded")) {
			t.Errorf("call_discarded event %+v", ev)
		}
	}
	want := []string{"run_started/0", "step_started/1", "attempt_failed/1", "call_discarded/1", "step_settled/2", "run_settled/0"}
	if !slices.Equal(kinds, want) {
		t.Errorf("journal %v\nwant %v", kinds, want)
	}
}

// TestLateResultIsJournaledInMemory: a run without a store, a gate or
// Config.OnCall, calling a tool without effects, still journals the late
// result of a call given up at its deadline.
func TestLateResultIsJournaledInMemory(t *testing.T) {
	t.Parallel()
	slow, sink := lateThenRetry()
	fx := newFixture(t, slow)
	e := engine.New(engine.Config{Tools: fx.tools, Clock: fx.clock, Sink: sink})
	res, err := e.Run(context.Background(), fx.parse("name: t\nsteps:\n  - {id: s, tool: slow, args: {}, timeout: 300ms, retries: 1}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "s", trace.StepSucceeded, 2)
}

// TestPlanStepToolIgnoringItsDeadline: in a plan step with timeout 300ms a
// plan tool that ignores ctx ends the step at the deadline; its late result
// is discarded and journaled.
func TestPlanStepToolIgnoringItsDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	sink := &notifySink{recorder: &recorder{}, kind: trace.CallDiscarded, seen: make(chan struct{})}
	after := goTool("after", func(context.Context, map[string]any) (any, error) {
		close(release)
		select {
		case <-sink.seen:
			return map[string]any{"ok": true}, nil
		case <-time.After(10 * time.Second):
			return nil, fault.Errorf(fault.Business, "the late plan result was never journaled")
		}
	})
	fx := newFixture(t, stubborn("fetch", release, true, nil), after)
	fx.script(scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "fetch", "steps": []any{
		map[string]any{"id": "get", "tool": "fetch", "args": map[string]any{}}}}})
	c := newCalls()
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: sink, OnCall: c.on})
	start := time.Now()
	res, err := e.Run(context.Background(), fx.parse(`
name: p
steps:
  - {id: pl, type: plan, model: m, goal: "fetch it", tools: [fetch], timeout: 300ms, max_replans: 1, on_error: skip, fallback_value: {}}
  - {id: next, tool: after, args: {}, requires: [pl]}
`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
		t.Errorf("the plan step ended after %s, before its deadline", elapsed)
	}
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "pl", trace.StepDefaulted, 1)
	if st := res.Steps["pl"]; st.Error == nil || !strings.Contains(st.Error.Message, "timed out after 300ms (the step's timeout)") {
		t.Fatalf("plan step error %v", st.Error)
	}
	var discarded []trace.Event
	for _, ev := range sink.all() {
		if ev.Kind == trace.CallDiscarded {
			discarded = append(discarded, ev)
		}
		if ev.Kind == trace.Kind(plan.StepSettled) && ev.Status == "succeeded" {
			t.Errorf("a plan step that ignored its deadline succeeded: %+v", ev)
		}
	}
	if len(discarded) != 1 || discarded[0].StepID != "pl" || discarded[0].PlanStep != "get" || discarded[0].Tool != "fetch" {
		t.Errorf("call_discarded events %+v", discarded)
	}
	if rec := c.waitLate(t); rec.Key != res.RunID+"/pl/1/plan1/get" || rec.At.PlanStep != "get" {
		t.Errorf("late record %+v", rec)
	}
}

// gateLog is a gate that allows everything and remembers what it saw.
type gateLog struct {
	mu   sync.Mutex
	seen []string
}

func (g *gateLog) Check(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
	g.mu.Lock()
	g.seen = append(g.seen, inv.Tool.Name)
	g.mu.Unlock()
	return safety.Decision{Verdict: safety.Allow, Reason: "fine"}, nil
}

// TestEveryCallerGoesThroughThePipeline: tool steps, for_each items, repeat
// rounds, fallbacks and plan steps are all passed through package invoke:
// each gets a call record with its key in the one documented format, each
// gate decision is journaled, and each refused call is refused the same way.
func TestEveryCallerGoesThroughThePipeline(t *testing.T) {
	t.Parallel()
	echo := goTool("echo", func(_ context.Context, args map[string]any) (any, error) { return args, nil })
	fail := goTool("fail", func(context.Context, map[string]any) (any, error) {
		return nil, fault.Errorf(fault.Business, "no such city")
	})
	strict := tool.Func(tool.Spec{Name: "strict", InputSchema: []byte(`{"type":"object","required":["city"]}`)},
		func(_ context.Context, args any) (any, error) { return args, nil })
	fx := newFixture(t, echo, fail, strict)
	fx.script(scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "echo", "steps": []any{
		map[string]any{"id": "a", "tool": "echo", "args": map[string]any{"n": 1}}}}})
	f := fx.parse(`
name: all
steps:
  - {id: plain, tool: echo, args: {n: 1}, requires: []}
  - {id: each, tool: echo, for_each: "{input.items}", args: {n: "{item}"}, requires: []}
  - {id: rep, tool: echo, args: {n: 1}, repeat: {until: "false", max: 2}, requires: []}
  - {id: fb, tool: fail, args: {}, on_error: fallback, fallback: {tool: echo, args: {n: 2}}, requires: []}
  - {id: pl, type: plan, model: m, goal: "echo", tools: [echo], requires: []}
  - {id: bad, tool: strict, args: "{input.bad}", on_error: skip, fallback_value: {}, requires: []}
`)
	gate := &gateLog{}
	c := newCalls()
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Gate: gate, OnCall: c.on,
		NewRunID: func() string { return "r" }})
	// bad's args come whole from the input, so only the call can find them wrong
	res, err := e.Run(context.Background(), f, map[string]any{"items": []any{"x", "y"}, "bad": map[string]any{"town": "x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	cases := []struct {
		caller, key string
		outcome     invoke.Outcome
		check       func(invoke.Position) bool
	}{
		{"tool step", "r/plain/1", invoke.OK, func(p invoke.Position) bool { return p.StepID == "plain" && p.Attempt == 1 }},
		{"for_each item 0", "r/each[0]/1", invoke.OK, func(p invoke.Position) bool { return p.ForEach && p.Item == 0 }},
		{"for_each item 1", "r/each[1]/1", invoke.OK, func(p invoke.Position) bool { return p.ForEach && p.Item == 1 }},
		{"repeat round 1", "r/rep#1/1", invoke.OK, func(p invoke.Position) bool { return p.Round == 1 }},
		{"repeat round 2", "r/rep#2/1", invoke.OK, func(p invoke.Position) bool { return p.Round == 2 }},
		{"failing tool", "r/fb/1", invoke.Failed, func(p invoke.Position) bool { return !p.Fallback }},
		{"fallback tool", "r/fb/fallback/1", invoke.OK, func(p invoke.Position) bool { return p.Fallback }},
		{"plan step", "r/pl/1/plan1/a", invoke.OK, func(p invoke.Position) bool {
			return p.StepID == "pl" && p.Parent == "r/pl/1" && p.PlanStep == "a" && p.Plan == 1
		}},
		{"args that break the schema", "r/bad/1", invoke.InvalidArgs, func(invoke.Position) bool { return true }},
	}
	recs := map[string]invoke.Record{}
	for _, rec := range c.all() {
		if _, dup := recs[rec.Key]; dup {
			t.Errorf("two calls share key %s", rec.Key)
		}
		recs[rec.Key] = rec
	}
	for _, tc := range cases {
		rec, ok := recs[tc.key]
		switch {
		case !ok:
			t.Errorf("%s: no call record %s (have %v)", tc.caller, tc.key, keys(recs))
		case rec.Outcome != tc.outcome || !tc.check(rec.At):
			t.Errorf("%s: record %+v, want outcome %s", tc.caller, rec, tc.outcome)
		case rec.At.Key() != rec.Key:
			t.Errorf("%s: the key %s is not its position's %s", tc.caller, rec.Key, rec.At.Key())
		}
	}
	if len(recs) != len(cases) {
		t.Errorf("%d call records, want %d: %v", len(recs), len(cases), keys(recs))
	}
	// every call but the one with bad args reached the gate (args first),
	// and every decision is in the trace.
	var decisions int
	for _, g := range gateDecisions(fx.events.all()) {
		decisions++
		if g.Decision.Verdict != string(safety.Allow) || g.Decision.Why != "fine" {
			t.Errorf("gate decision %+v", g)
		}
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if len(gate.seen) != len(cases)-1 || slices.Contains(gate.seen, "strict") {
		t.Errorf("the gate saw %v: every call but the one with bad args", gate.seen)
	}
	if decisions != len(gate.seen) {
		t.Errorf("%d gate decisions journaled, the gate made %d", decisions, len(gate.seen))
	}
}

func keys(m map[string]invoke.Record) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
