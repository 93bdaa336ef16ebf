package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/trace"
)

// slow is an expression over input.items that takes hours (5,000^3
// predicate calls) unless it stops.
const slow = "all(input.items, {all(input.items, {all(input.items, {# >= 0})})})"

// TestCPUBoundWorkStopsAtTheTimeout runs flows whose when, gate, for_each,
// repeat.until or route rules would compute far past budgets.timeout (1s):
// each run stops soon after it with the timeout budget's error, instead of
// computing on and reporting success. The bound (15s) leaves room for a
// loaded machine and the race detector; the work would take minutes to
// hours.
func TestCPUBoundWorkStopsAtTheTimeout(t *testing.T) {
	t.Parallel()
	items := make([]any, 5000)
	for i := range items {
		items[i] = float64(i)
	}
	var rules strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&rules, "{regexp: '(x|y){%d}[a-w]'}, ", i%50+1)
	}
	text := strings.Repeat("xy", 150_000)
	cases := []struct {
		name, steps string
		input       map[string]any
	}{
		{"when", "  - {id: a, tool: echo, args: {}, when: \"" + slow + "\"}\n", map[string]any{"items": items}},
		{"gate", "  - {id: a, tool: echo, args: {}, gate: \"" + slow + "\"}\n", map[string]any{"items": items}},
		{"for_each", "  - {id: a, tool: echo, for_each: \"filter(input.items, {" + slow + "})\", args: {x: \"{item}\"}}\n", map[string]any{"items": items}},
		{"repeat", "  - {id: a, tool: echo, args: {}, repeat: {until: \"" + slow + "\", max: 3}}\n", map[string]any{"items": items}},
		{"route rules", "  - id: a\n    type: route\n    text: \"{input.text}\"\n    routes:\n      - {name: r, description: r, rules: [" + rules.String() + "]}\n      - {name: s, description: s}\n",
			map[string]any{"text": text}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, goTool("echo", func(_ context.Context, args map[string]any) (any, error) { return args, nil }))
			f := fx.parse("name: slow\nbudgets: {timeout: 1s}\nsteps:\n" + tc.steps)
			start := time.Now()
			res, err := fx.engine().Run(context.Background(), f, tc.input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("the run stopped after %s, budget 1s", d)
			}
			wantStatus(t, res, trace.RunFailed)
			wantErrorClass(t, res, fault.Budget, "budget timeout of 1s")
		})
	}
}

// TestStepTimeoutStopsRouteRules checks that a route step's timeout stops
// its rules on time: thousands of regexps over a large text fail the step
// as timed out, not after they all ran.
func TestStepTimeoutStopsRouteRules(t *testing.T) {
	t.Parallel()
	var rules strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&rules, "{regexp: '(x|y){%d}[a-w]'}, ", i%50+1)
	}
	fx := newFixture(t)
	f := fx.parse("name: slow\nsteps:\n  - id: a\n    type: route\n    timeout: 1s\n    retries: 0\n    text: \"{input.text}\"\n    routes:\n      - {name: r, description: r, rules: [" + rules.String() + "]}\n      - {name: s, description: s}\n")
	start := time.Now()
	res, err := fx.engine().Run(context.Background(), f, map[string]any{"text": strings.Repeat("xy", 150_000)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the step stopped after %s, timeout 1s", d)
	}
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Transient, "the step's timeout")
}

// TestCtrlCStopsAnEvaluation checks that cancelling the run's context
// (what Ctrl-C does) stops a long when expression.
func TestCtrlCStopsAnEvaluation(t *testing.T) {
	t.Parallel()
	items := make([]any, 5000)
	for i := range items {
		items[i] = float64(i)
	}
	fx := newFixture(t, goTool("echo", func(_ context.Context, args map[string]any) (any, error) { return args, nil }))
	f := fx.parse("name: slow\nsteps:\n  - {id: a, tool: echo, args: {}, when: \"" + slow + "\"}\n")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	res, err := fx.engine().Run(ctx, f, map[string]any{"items": items}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run stopped after %s", d)
	}
	if res.Status == trace.RunSucceeded || res.Error == nil || res.Error.Class != fault.Cancelled {
		t.Fatalf("run = %s, %v; want it stopped as cancelled", res.Status, res.Error)
	}
}

// TestMaxInputBytes renders 3,000 placeholders over a 1 MB output: the step
// fails naming max_input_bytes, having rendered about the bound; a flow
// default and a step's own bound apply.
func TestMaxInputBytes(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1_000_000)
	fx := newFixture(t,
		goTool("gen", func(context.Context, map[string]any) (any, error) { return map[string]any{"text": big}, nil }),
		goTool("echo", func(_ context.Context, args map[string]any) (any, error) {
			return map[string]any{"n": float64(len(args))}, nil
		}))
	many := strings.Repeat(`"{gen.text}", `, 3000)
	res := fx.run("name: big\nsteps:\n  - {id: gen, tool: gen, args: {}}\n  - {id: use, tool: echo, args: {to: ["+many+"]}}\n", nil)
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "args: the rendered input is more than max_input_bytes (1048576 bytes)")
	if res.Error.Step != "use" {
		t.Fatalf("error names step %q", res.Error.Step)
	}

	prompt := strings.Repeat("{gen.text}", 3)
	fx.script()
	res = fx.run("name: big\nmax_input_bytes: 2000000\nsteps:\n  - {id: gen, tool: gen, args: {}}\n  - {id: ask, type: llm, model: m, prompt_template: \""+prompt+"\"}\n", nil)
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "prompt_template: the rendered input is more than max_input_bytes (2000000 bytes)")

	res = fx.run("name: big\nsteps:\n  - {id: gen, tool: gen, args: {}}\n  - {id: use, tool: echo, args: {a: \"{gen.text}\"}, max_input_bytes: 100}\n", nil)
	wantErrorClass(t, res, fault.Business, "more than max_input_bytes (100 bytes)")
}

// A step whose args are one upstream output is held to max_input_bytes
// whether the engine measures that output or knows it is small.
func TestMaxInputBytesPassthrough(t *testing.T) {
	t.Parallel()
	fx := newFixture(t,
		goTool("gen", func(_ context.Context, args map[string]any) (any, error) {
			return map[string]any{"text": strings.Repeat("x", int(args["n"].(float64)))}, nil
		}),
		goTool("echo", func(_ context.Context, args map[string]any) (any, error) { return args, nil }))
	for _, tc := range []struct {
		n    int
		fits bool
	}{{0, true}, {40, true}, {90, false}, {5000, false}} {
		res := fx.run(fmt.Sprintf("name: pass\nsteps:\n  - {id: gen, tool: gen, args: {n: %d}}\n  - {id: use, tool: echo, args: \"{gen}\", max_input_bytes: 100}\n", tc.n), nil)
		if !tc.fits {
			wantErrorClass(t, res, fault.Business, "args: the rendered input is more than max_input_bytes (100 bytes)")
			continue
		}
		wantStatus(t, res, trace.RunSucceeded)
		if got := res.Outputs["use"].(map[string]any)["text"]; got != strings.Repeat("x", tc.n) {
			t.Errorf("n=%d: use got %v", tc.n, got)
		}
	}
}

// chain is an expression of 40 splits of input.t, each over 900 KB: most
// of a second of work in builtins that have no predicate.
var chain = "len(split(input.t,''))" + strings.Repeat("+len(split(input.t,''))", 39) + " > 0"

// TestBuiltinsStopAtTheStepTimeout runs a when, a gate, a for_each and a
// repeat.until made of builtins without predicates (each split bounded,
// but 40 of them take most of a second) on a step with timeout 100ms: each stops at
// the step's timeout, which a when or a gate used to ignore (8.3 s on
// 1 s). The bound leaves room for a loaded machine and the race detector.
func TestBuiltinsStopAtTheStepTimeout(t *testing.T) {
	t.Parallel()
	input := map[string]any{"t": strings.Repeat("abcdefgh ", 100_000)}
	for name, field := range map[string]string{
		"when":     `when: "` + chain + `"`,
		"gate":     `gate: "` + chain + `"`,
		"for_each": `for_each: "[` + chain + `]"`,
		"repeat":   `repeat: {until: "` + chain + `", max: 3}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, goTool("echo", func(_ context.Context, args map[string]any) (any, error) { return args, nil }))
			f := fx.parse("name: slow\nsteps:\n  - {id: a, tool: echo, args: {}, timeout: 100ms, retries: 0, " + field + "}\n")
			start := time.Now()
			res, err := fx.engine().Run(context.Background(), f, input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the step stopped after %s, timeout 100ms", d)
			}
			wantStatus(t, res, trace.RunFailed)
			if !strings.Contains(res.Error.Error(), "the step's timeout") {
				t.Fatalf("run error %q, want the step's timeout", res.Error.Error())
			}
		})
	}
}

// TestBuiltinsOnLargeInputsAreRefused runs the probe's expressions (string,
// matches, sum, split over a 36 MB input, which took 4 to 15 s under a 2 s
// budget): the step fails at once naming the bound and the spot, before
// the work.
func TestBuiltinsOnLargeInputsAreRefused(t *testing.T) {
	t.Parallel()
	items := make([]any, 1<<20)
	for i := range items {
		items[i] = float64(i)
	}
	input := map[string]any{"text": strings.Repeat("abcdefgh ", 4<<20), "items": items}
	for _, when := range []string{"len(string(input)) > 0", "input.text matches 'a.*z'", "sum(input.items) > 0", "len(split(input.text, ' ')) > 0"} {
		fx := newFixture(t, goTool("echo", func(_ context.Context, args map[string]any) (any, error) { return args, nil }))
		f := fx.parse("name: big\nbudgets: {timeout: 2s}\nsteps:\n  - {id: a, tool: echo, args: {}, when: \"" + when + "\"}\n")
		start := time.Now()
		res, err := fx.engine().Run(context.Background(), f, input, nil)
		if err != nil {
			t.Fatal(err)
		}
		// the refusal below is what shows the bound; the time leaves room
		// for the race detector normalising 36 MB on a loaded machine.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: the run stopped after %s, budget 2s", when, d)
		}
		wantErrorClass(t, res, fault.Business, "more than 1048576 bytes, the most an expression may scan or copy at once")
		if res.Error.Step != "a" {
			t.Errorf("%s: error names step %q", when, res.Error.Step)
		}
	}
}

// TestApprovalMessageIsBounded parks an approval step whose message holds
// 1,000 placeholders of a 100 KB output (the probe's took 6.8 GB): the
// step fails naming message and max_input_bytes, with nobody asked and
// about the bound rendered, not 100 MB.
func TestApprovalMessageIsBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100_000)
	fx := newFixture(t, goTool("gen", func(context.Context, map[string]any) (any, error) { return map[string]any{"text": big}, nil }))
	st := openSQLite(t)
	// a lease long enough that rendering 100 MB-worth of placeholders on a
	// loaded machine never outlasts it (with durableEngine's 2 s it once did).
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: st,
		Owner: "p1", LeaseTTL: time.Minute})
	for _, kind := range []string{"type: approval", "tool: gen, args: {}, approval: required"} {
		f := fx.parse("name: ask\nsteps:\n  - {id: gen, tool: gen, args: {}}\n  - {id: ok, " + kind + ", requires: [gen], message: \"" +
			strings.Repeat("{gen.text} ", 1000) + "\"}\n")
		res, err := e.Run(context.Background(), f, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res, trace.RunFailed)
		wantErrorClass(t, res, fault.Business, "message: the rendered input is more than max_input_bytes (1048576 bytes)")
		if res.Error.Step != "ok" || len(res.Pending) != 0 {
			t.Fatalf("%s: error at step %q, pending %+v", kind, res.Error.Step, res.Pending)
		}
	}
}
