package engine_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func TestForEachKeepsOrderAndBoundsConcurrency(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	square := goTool("square", func(_ context.Context, a map[string]any) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		x := a["x"].(float64)
		time.Sleep(time.Duration(10-x) * time.Millisecond) // later items finish first
		return map[string]any{"sq": x * x, "i": a["i"]}, nil
	})
	fx := newFixture(t, square)
	res := fx.run(`
name: fe
inputs: {type: object, properties: {xs: {type: array, items: {type: number}}}}
steps:
  - id: sq
    tool: square
    for_each: "{input.xs}"
    concurrency: 2
    args: {x: "{item}", i: "{index}"}
`, map[string]any{"xs": []any{1, 2, 3, 4, 5}})
	wantStatus(t, res, trace.RunSucceeded)
	out := res.Outputs["sq"].([]any)
	for i, o := range out {
		m := o.(map[string]any)
		if m["i"] != float64(i) || m["sq"] != float64((i+1)*(i+1)) {
			t.Fatalf("item %d = %v: results must come back in order", i, m)
		}
	}
	if p := peak.Load(); p > 2 || p < 2 {
		t.Fatalf("peak concurrency %d, want exactly the bound 2", p)
	}
	if res.Usage.Iterations != 5 {
		t.Fatalf("iterations %d, want one per item", res.Usage.Iterations)
	}
}

func TestForEachItemFailureFailsTheStep(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, goTool("check", func(_ context.Context, a map[string]any) (any, error) {
		if a["x"] == 3.0 {
			return nil, fault.BusinessErr(errors.New("three is bad"))
		}
		return a, nil
	}))
	res := fx.run(`
name: fe
steps:
  - {id: c, tool: check, for_each: "input.xs", args: {x: "{item}"}, on_error: skip, fallback_value: {x: 0}}
`, map[string]any{"xs": []any{1, 2, 3, 4}})
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "c", trace.StepDefaulted, -1)
	if !strings.Contains(res.Steps["c"].Error.Message, "item 2: ") {
		t.Fatalf("error does not name the item: %v", res.Steps["c"].Error)
	}
}

func TestRepeatUntilAndMax(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	fx.script(
		scripted.Reply{Step: "draft", Output: map[string]any{"text": "v1", "score": 3}},
		scripted.Reply{Step: "draft", Contains: `"text":"v1"`, Output: map[string]any{"text": "v2", "score": 9}},
		scripted.Reply{Step: "draft", Output: map[string]any{"text": "never", "score": 10}},
		scripted.Reply{Step: "capped", Output: map[string]any{"text": "a", "score": 1}},
		scripted.Reply{Step: "capped", Output: map[string]any{"text": "b", "score": 2}},
	)
	res := fx.run(`
name: rep
schemas:
  draft: {type: object, properties: {text: {type: string}, score: {type: number}}, required: [text, score]}
steps:
  - id: draft
    type: llm
    model: m
    output_schema: draft
    prompt_template: "improve {previous} (round {iteration})"
    repeat: {until: "output.score >= 8", max: 5}
  - id: capped
    type: llm
    model: m
    output_schema: draft
    requires: []
    prompt_template: "try"
    repeat: {until: "capped.score > 100", max: 2}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	if got := res.Outputs["draft"].(map[string]any)["text"]; got != "v2" {
		t.Fatalf("draft = %v: repeat must stop when until holds, and see previous", got)
	}
	if got := res.Outputs["capped"].(map[string]any)["text"]; got != "b" {
		t.Fatalf("capped = %v: after max rounds the last output stands", got)
	}
	if res.Usage.Iterations != 4 || res.Usage.LLMCalls != 4 {
		t.Fatalf("usage %+v, want 4 rounds and 4 calls", res.Usage)
	}
}

func TestGateMustHoldOnOutput(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("gen", 0, nil))
	res := fx.run(`
name: gate
steps:
  - {id: g, tool: gen, args: {}, gate: "output.call >= 3", retries: 5, on_error: retry}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "g", trace.StepSucceeded, 3)
	res = fx.run(`
name: gate
steps:
  - {id: g, tool: gen, args: {}, gate: "g.call > 100"}
`, nil)
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "does not hold")
}

func TestBudgetsEachHaveTheirOwnError(t *testing.T) {
	t.Parallel()
	replies := func() []scripted.Reply {
		var out []scripted.Reply
		for i := 0; i < 10; i++ {
			out = append(out, scripted.Reply{Step: "s", Output: "x", Tokens: nil})
		}
		return out
	}
	cases := []struct {
		name, flowHead, budget string
	}{
		{"max_iterations", "max_iterations: 2", "max_iterations"},
		{"max_llm_calls", "budgets: {max_llm_calls: 2}", "max_llm_calls"},
		{"max_tokens", "budgets: {max_tokens: 5}", "max_tokens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t)
			fx.script(replies()...)
			res := fx.run("name: b\n"+tc.flowHead+`
steps:
  - {id: s, type: llm, model: m, prompt_template: "a long enough prompt to cost tokens", repeat: {until: "false", max: 5}}
`, nil)
			wantStatus(t, res, trace.RunFailed)
			wantErrorClass(t, res, fault.Budget, tc.budget)
			if res.Error.Budget != tc.budget {
				t.Fatalf("budget %q, want %q", res.Error.Budget, tc.budget)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fx := newFixture(t, goTool("hang", func(ctx context.Context, _ map[string]any) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}))
		res := fx.run("name: b\nbudgets: {timeout: 30ms}\nsteps:\n  - {id: s, tool: hang, args: {}, retries: 3, on_error: skip}\n", nil)
		wantStatus(t, res, trace.RunFailed)
		wantErrorClass(t, res, fault.Budget, "budget timeout of 30ms")
		if res.Error.Budget != "timeout" {
			t.Fatalf("budget %q", res.Error.Budget)
		}
	})
}

func TestInputIsCheckedBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("t", 0, nil))
	e := fx.engine()
	declared := fx.parse("name: i\ninputs: {type: object, properties: {n: {type: number}}, required: [n]}\nsteps:\n  - {id: s, tool: t, args: {n: \"{n}\"}}\n")
	guessed := fx.parse("name: i\nsteps:\n  - {id: s, tool: t, args: {n: \"{n}\"}}\n")
	for _, tc := range []struct {
		name  string
		input any
		want  string
	}{
		{"schema", map[string]any{"n": "three"}, "/n"},
		{"missing", map[string]any{}, "missing property"},
	} {
		_, err := e.Run(context.Background(), declared, tc.input, nil)
		var ie *engine.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: err = %v, want an InputError mentioning %q", tc.name, err, tc.want)
		}
	}
	_, err := e.Run(context.Background(), guessed, map[string]any{"m": 1}, nil)
	var ie *engine.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "missing field n") || len(ie.Missing) != 1 || ie.Missing[0] != "n" ||
		strings.Contains(err.Error(), "--") {
		t.Fatalf("undeclared input: err = %v (the engine's message names the fields, and no CLI flag)", err)
	}
	if c.Calls() != 0 || len(fx.events.all()) != 0 {
		t.Fatal("something ran or was traced for a bad input")
	}
}

func TestTraceEventsAreOrderedAndDigested(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("t", 1, errTransient))
	res := fx.run("name: tr\nsteps:\n  - {id: s, tool: t, args: {k: v}, retries: 1}\n", nil)
	wantStatus(t, res, trace.RunSucceeded)
	evs := fx.events.all()
	var kinds []trace.Kind
	for i, e := range evs {
		kinds = append(kinds, e.Kind)
		if e.Seq != int64(i+1) || e.RunID != res.RunID {
			t.Fatalf("event %d has seq %d run %q", i, e.Seq, e.RunID)
		}
	}
	want := []trace.Kind{trace.RunStarted, trace.StepStarted, trace.AttemptFailed, trace.StepSettled, trace.RunSettled}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	started, settled := evs[1], evs[3]
	// sha256 of the canonical args {"k":"v"}
	if started.InputSHA != "666c1aa02e8068c6d5cc1d3295009432c16790bec28ec8ce119d0d1a18d61319" {
		t.Fatalf("input digest %s", started.InputSHA)
	}
	if len(settled.OutputSHA) != 64 || !strings.Contains(settled.Preview, `"call":2`) || settled.Attempt != 2 {
		t.Fatalf("settled event %+v", settled)
	}
	if evs[2].ErrorClass != "transient" || evs[2].Origin != trace.OriginTool {
		t.Fatalf("attempt event %+v", evs[2])
	}
}

// memStore keeps committed events; it can be told to fail.
type memStore struct {
	store.Store // the rest of the port: only Commit is exercised here
	mu          sync.Mutex
	events      []trace.Event
	failAt      int64
}

func (m *memStore) Commit(_ context.Context, t *store.Transition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range t.Events {
		if m.failAt > 0 && e.Seq >= m.failAt {
			return errors.New("disk full")
		}
		m.events = append(m.events, *e)
	}
	return nil
}

func TestStoreSeesEveryEventAndItsFailureStopsTheRun(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("t", 0, nil))
	st := &memStore{Store: store.Ephemeral}
	f := fx.parse("name: st\nsteps:\n  - {id: a, tool: t, args: {}}\n  - {id: b, tool: t, args: {}}\n")
	res, err := engine.New(engine.Config{Tools: fx.tools, Store: st, Sink: fx.events}).Run(context.Background(), f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if !reflect.DeepEqual(st.events, fx.events.all()) {
		t.Fatal("the store did not receive exactly the traced events")
	}
	failing := &memStore{Store: store.Ephemeral, failAt: 3}
	res, err = engine.New(engine.Config{Tools: fx.tools, Store: failing}).Run(context.Background(), f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	if res.Error == nil || !strings.Contains(res.Error.Message, "disk full") {
		t.Fatalf("error %v", res.Error)
	}
	if res.Steps["b"].Status != trace.StepPending {
		t.Fatalf("b = %s: nothing may run after a failed commit", res.Steps["b"].Status)
	}
}

func TestToolInputSchemaIsEnforced(t *testing.T) {
	t.Parallel()
	calls := 0
	typed := tool.Func(tool.Spec{Name: "typed", Effect: tool.EffectNone,
		InputSchema: []byte(`{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`)},
		func(context.Context, any) (any, error) { calls++; return map[string]any{}, nil })
	fx := newFixture(t, typed)
	res := fx.run("name: in\nsteps:\n  - {id: s, tool: typed, args: {n: \"{input.n}\"}}\n", map[string]any{"n": "three"})
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "args for tool typed breaks schema")
	if calls != 0 {
		t.Fatal("a tool was called with args that break its input schema")
	}
	if res.Error.Origin != trace.OriginEngine {
		t.Fatalf("origin %s: bad args are the flow's fault, not the tool's", res.Error.Origin)
	}
}

func TestDisabledFlowDoesNotRun(t *testing.T) {
	t.Parallel()
	c := &counter{}
	fx := newFixture(t, c.tool("t", 0, nil))
	_, err := fx.engine().Run(context.Background(), fx.parse("name: off\nenabled: false\nsteps:\n  - {id: s, tool: t, args: {}}\n"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "disabled") || c.Calls() != 0 {
		t.Fatalf("err = %v, calls = %d", err, c.Calls())
	}
}
