package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestCallRecordsOfARun: a durable run keeps a call record for each call
// of a for_each item (tool or model) and of a plan step, and one for the
// plan its planner proposed; a plain step keeps none.
func TestCallRecordsOfARun(t *testing.T) {
	t.Parallel()
	echo := goTool("echo", func(_ context.Context, args map[string]any) (any, error) { return args, nil })
	fx := newFixture(t, echo)
	fx.script(
		scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "echo", "steps": []any{
			map[string]any{"id": "a", "tool": "echo", "args": map[string]any{"n": 1}}}}},
		// without an output_schema the reply's text is the output: the
		// scripted model answers Output as JSON text.
		scripted.Reply{Step: "say", Output: "one"},
		scripted.Reply{Step: "say", Output: "two"},
	)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Store: st, NewRunID: func() string { return "r" }})
	res, err := e.Run(context.Background(), fx.parse(`
name: recs
steps:
  - {id: plain, tool: echo, args: {n: 1}}
  - {id: each, tool: echo, for_each: "{input.items}", concurrency: 1, args: {n: "{item}"}}
  - {id: say, type: llm, model: m, for_each: "{input.items}", concurrency: 1, prompt_template: "say {item}"}
  - {id: pl, type: plan, model: m, goal: "echo", tools: [echo]}
`), map[string]any{"items": []any{"x", "y"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	calls, err := st.Calls(context.Background(), "r", "")
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		step, key string
		kind      store.CallKind
		item      int
		output    string
	}
	want := []rec{
		{"each", "r/each[0]/1", store.CallTool, 0, `{"n":"x"}`},
		{"each", "r/each[1]/1", store.CallTool, 1, `{"n":"y"}`},
		{"say", "r/say[0]/1", store.CallModel, 0, `"\"one\""`},
		{"say", "r/say[1]/1", store.CallModel, 1, `"\"two\""`},
		{"pl", "r/pl/1/plan1", store.CallModel, -1, `{"goal":"echo","steps":[{"id":"a","tool":"echo","args":{"n":1}}]}`},
		{"pl", "r/pl/1/plan1/a", store.CallTool, -1, `{"n":1}`},
	}
	if len(calls) != len(want) {
		for _, c := range calls {
			t.Logf("%s %s %s", c.StepID, c.Key, c.Status)
		}
		t.Fatalf("%d call records, want %d (none for the plain step)", len(calls), len(want))
	}
	for k, w := range want {
		c := calls[k]
		if c.StepID != w.step || c.Key != w.key || c.Kind != w.kind || c.Item != w.item || string(c.Output) != w.output || c.Status != store.CallSucceeded || c.Attempt != 1 {
			t.Errorf("record %d = %+v (output %s), want %+v", k, c, c.Output, w)
		}
		if w.kind == store.CallModel && w.step == "say" && (c.TokensIn == 0 || c.TokensOut == 0 || c.Name != "m") {
			t.Errorf("model record %d: tokens %d/%d, name %q", k, c.TokensIn, c.TokensOut, c.Name)
		}
		if w.kind == store.CallTool && (c.ArgsSHA == "" || c.Name != "echo") {
			t.Errorf("tool record %d: args digest %q, name %q", k, c.ArgsSHA, c.Name)
		}
	}
}

// TestForEachCommitsPerCall: the items of a for_each step over a tool with
// an effect are committed one by one (a crash keeps the settled ones); over
// a pure tool (no effect, idempotent) their records ride with the step's
// settlement, so the fan-out costs no commit per item. Both keep a record
// per item.
func TestForEachCommitsPerCall(t *testing.T) {
	t.Parallel()
	const items = 5
	for _, tc := range []struct {
		name    string
		pure    bool
		commits int
	}{
		{"a tool with an effect", false, 2 + items}, // start, one per item, settlement
		{"a pure tool", true, 1},                    // the start rides with the settlement
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newKeyCounter("a", true)
			if tc.pure {
				a.spec.Effect = tool.EffectNone
			}
			fx := newFixture(t, a)
			st := &countingStore{Store: openSQLite(t)}
			res, err := durableEngine(fx, st, "p1").Run(context.Background(),
				fx.parse("name: fe\nsteps:\n  - {id: each, tool: a, for_each: \"{input.items}\", args: {n: \"{item}\"}}\n"),
				map[string]any{"items": []any{0.0, 1.0, 2.0, 3.0, 4.0}}, nil)
			if err != nil || res.Status != trace.RunSucceeded {
				t.Fatalf("run: %v, %+v", err, res)
			}
			if st.commits != tc.commits {
				t.Errorf("Commit ×%d, want ×%d", st.commits, tc.commits)
			}
			calls, err := st.Calls(context.Background(), res.RunID, "each")
			if err != nil || len(calls) != items {
				t.Fatalf("Calls = %d records, %v; want %d", len(calls), err, items)
			}
		})
	}
}
