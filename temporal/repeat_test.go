package temporal

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

const repeatFlow = `name: rounds
steps:
  - {id: seed, tool: ok, args: {}}
  - id: loop
    tool: count
    args: {round: "{iteration}", prev: "{previous}", seed: "{seed.n}"}
    retries: 2
    backoff: {initial: 1s, max: 2s}
    repeat: {until: "output.n >= 4 && previous.n == output.n - 1", max: 5}
  - {id: capped, tool: count2, args: {i: "{iteration}"}, repeat: {until: "false", max: 2}}
  - {id: after, tool: ok, args: {loop: "{loop.n}", capped: "{capped.n}"}}
`

// TestRepeat: a repeat step's rounds run one by one as activities, each
// round's attempts keyed run/step#round/attempt (a transient failure in
// a round is retried by class inside the round), until repeat.until holds
// on the round's output (which reads previous) or max rounds ran; the
// output is the last round's, and the run settles as the local engine
// settles the same flow: same statuses, attempts and outputs.
func TestRepeat(t *testing.T) {
	tools := func(l *ledger) *ledger { l.fails["count"] = failPlan{n: 1, class: fault.Transient}; return l }
	lt := tools(newLedger())
	p := load(t, repeatFlow, lt.tool("ok", true), lt.tool("count", true), lt.tool("count2", true))
	st := newHarness(t, p).run(map[string]any{})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	// the first call fails (transient) and is retried within round 1:
	// attempts 1 and 2 of round 1; rounds 2 and 3 take their first
	// attempt's number from the step (1).
	want := "run-1/loop#1/1 run-1/loop#1/2 run-1/loop#2/1 run-1/loop#3/1"
	if got := strings.Join(lt.keys("count"), " "); got != want {
		t.Errorf("count keys %q, want %q", got, want)
	}
	if got := strings.Join(lt.keys("count2"), " "); got != "run-1/capped#1/1 run-1/capped#2/1" {
		t.Errorf("count2 keys %q (max 2 rounds)", got)
	}
	loop := output(t, st, "loop")
	if loop["n"] != float64(4) || loop["args"].(map[string]any)["round"] != float64(2) || loop["args"].(map[string]any)["prev"].(map[string]any)["n"] != float64(3) {
		t.Errorf("loop's output is not its third round's: %v", loop)
	}

	// the same flow, run by the local engine, settles the same.
	ll := tools(newLedger())
	lp := load(t, repeatFlow, ll.tool("ok", true), ll.tool("count", true), ll.tool("count2", true))
	res, err := wire.Engine(lp, engine.Config{}).Run(context.Background(), lp.Flow, map[string]any{}, &engine.RunOptions{RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Status) != st.Status {
		t.Errorf("local run %s, Temporal %s", res.Status, st.Status)
	}
	for _, s := range st.Steps {
		lr := res.Steps[s.ID]
		if string(lr.Status) != s.Status || lr.Attempts != s.Attempts {
			t.Errorf("step %s: local %s (attempts %d), Temporal %s (attempts %d)", s.ID, lr.Status, lr.Attempts, s.Status, s.Attempts)
		}
		want, err := value.Canonical(res.Outputs[s.ID])
		if err != nil {
			t.Fatal(err)
		}
		if string(want) != string(st.Outputs[s.ID]) {
			t.Errorf("step %s: local output %s, Temporal %s", s.ID, want, st.Outputs[s.ID])
		}
	}
	if got := strings.Join(ll.keys("count"), " "); got != want {
		t.Errorf("local count keys %q, want %q", got, want)
	}
}

// TestRepeatFails: a round that fails for good fails the rounds, and
// on_error takes over (skip: fallback_value); a repeat.until that cannot
// be evaluated fails the step with the local engine's message.
func TestRepeatFails(t *testing.T) {
	l := newLedger()
	l.fails["count"] = failPlan{n: 1, class: fault.Business}
	p := load(t, `name: rounds-fail
steps:
  - {id: loop, tool: count, args: {}, repeat: {until: "false", max: 4}, on_error: skip, fallback_value: {gave_up: true}}
  - {id: bad, tool: ok, args: {}, requires: [loop], repeat: {until: "output.nope.deeper > 1", max: 3}}
`, l.tool("count", true), l.tool("ok", true))
	st := newHarness(t, p).run(map[string]any{})
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "bad" || !strings.Contains(st.Error.Message, `repeat.until "output.nope.deeper > 1"`) {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if s := stepOf(t, st, "loop"); s.Status != "defaulted" || !strings.Contains(s.Error, "count: failure 1 of 1") {
		t.Errorf("loop: %+v", s)
	}
	if got := strings.Join(l.keys("count"), " "); got != "run-1/loop#1/1" {
		t.Errorf("count keys %q: the rounds went on after a failed one", got)
	}
	if string(st.Outputs["loop"]) != `{"gave_up":true}` {
		t.Errorf("loop output %s", st.Outputs["loop"])
	}
	if l.count("ok") != 1 {
		t.Errorf("bad ran %d rounds, want 1 (its until failed)", l.count("ok"))
	}
}

// TestRepeatFallback: when a round fails for good, the step's fallback
// sees the rounds as a local run's does (previous: the last round's
// output, iteration: the round that failed), and its key has no round;
// the run settles as the local engine settles it.
func TestRepeatFallback(t *testing.T) {
	const src = `name: rounds-fallback
steps:
  - id: loop
    tool: round
    args: {i: "{iteration}"}
    repeat: {until: "false", max: 4}
    on_error: fallback
    fallback: {tool: backup, args: {prev: "{previous.i}", it: "{iteration}"}}
`
	tools := func(l *ledger) []tool.Tool {
		round := tool.Func(tool.Spec{Name: "round", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
			i := args.(map[string]any)["i"]
			if i == float64(2) {
				return nil, fault.Errorf(fault.Business, "round %v fails", i)
			}
			return map[string]any{"i": i}, nil
		})
		return []tool.Tool{round, l.tool("backup", true)}
	}
	lt := newLedger()
	st := newHarness(t, load(t, src, tools(lt)...)).run(map[string]any{})
	if st.Status != "succeeded" || stepOf(t, st, "loop").Status != "fell_back" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	args := output(t, st, "loop")["args"].(map[string]any)
	if args["prev"] != float64(1) || args["it"] != float64(2) {
		t.Errorf("fallback args %v, want prev 1, it 2", args)
	}
	if got := strings.Join(lt.keys("backup"), " "); got != "run-1/loop/fallback/1" {
		t.Errorf("fallback keys %q", got)
	}
	ll := newLedger()
	lp := load(t, src, tools(ll)...)
	res, err := wire.Engine(lp, engine.Config{}).Run(context.Background(), lp.Flow, map[string]any{}, &engine.RunOptions{RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := value.Canonical(res.Outputs["loop"])
	if string(want) != string(st.Outputs["loop"]) || string(res.Steps["loop"].Status) != "fell_back" {
		t.Errorf("local %s %s, Temporal %s", res.Steps["loop"].Status, want, st.Outputs["loop"])
	}
}

// TestRepeatFallbackOversized: when the last round's output breaks the
// step's max_output_bytes, the fallback sees the rounds as a local run's
// does: previous (the round before the last's output) and iteration (the
// last round's); the run settles as the local engine settles it.
func TestRepeatFallbackOversized(t *testing.T) {
	const src = `name: rounds-oversized
steps:
  - id: loop
    tool: round
    args: {i: "{iteration}"}
    repeat: {until: "iteration >= 2", max: 4}
    max_output_bytes: 64
    on_error: fallback
    fallback: {tool: backup, args: {prev: "{previous.i}", it: "{iteration}"}}
`
	tools := func(l *ledger) []tool.Tool {
		round := tool.Func(tool.Spec{Name: "round", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
			i := args.(map[string]any)["i"]
			out := map[string]any{"i": i}
			if i == float64(2) {
				out["pad"] = strings.Repeat("x", 100) // breaks max_output_bytes
			}
			return out, nil
		})
		return []tool.Tool{round, l.tool("backup", true)}
	}
	lt := newLedger()
	st := newHarness(t, load(t, src, tools(lt)...)).run(map[string]any{})
	if st.Status != "succeeded" || stepOf(t, st, "loop").Status != "fell_back" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	args := output(t, st, "loop")["args"].(map[string]any)
	if args["prev"] != float64(1) || args["it"] != float64(2) {
		t.Errorf("fallback args %v, want prev 1, it 2 (the last round's)", args)
	}
	ll := newLedger()
	lp := load(t, src, tools(ll)...)
	res, err := wire.Engine(lp, engine.Config{}).Run(context.Background(), lp.Flow, map[string]any{}, &engine.RunOptions{RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := value.Canonical(res.Outputs["loop"])
	if string(want) != string(st.Outputs["loop"]) || string(res.Steps["loop"].Status) != "fell_back" {
		t.Errorf("local %s %s, Temporal %s", res.Steps["loop"].Status, want, st.Outputs["loop"])
	}
}
