package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// crmTool is a write tool with resources and a compensation; every call
// returns {id: "c-<to>"}.
func crmTool() tool.Tool {
	return tool.Func(tool.Spec{Name: "create", Effect: tool.EffectWrite, Reversibility: tool.Compensatable, Tags: []string{"money"},
		Compensate: &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}", "why": "undo {args.to}"}},
		Resources:  []string{"crm:customer/{output.id}", "crm:owner/{args.owner}"}},
		func(_ context.Context, args any) (any, error) {
			return map[string]any{"id": "c-" + args.(map[string]any)["to"].(string)}, nil
		})
}

// TestEveryPathJournalsItsEffect: a call of a tool with an effect is
// journaled as a call_effect record along every path that calls tools —
// a tool step, a for_each item, a repeat round, a fallback tool, a plan
// step, an agent call — with its key, the resources rendered over its
// args and output (one that does not render named), where its args came
// from and the compensation rendered over the call. A tool without an
// effect leaves no record.
func TestEveryPathJournalsItsEffect(t *testing.T) {
	t.Parallel()
	const head = "name: g\nsteps:\n  - {id: draft, type: llm, model: m, prompt_template: \"write\"}\n"
	cases := []struct {
		path, step, key string
		item            *int
		plan            map[string]any
		calls           []model.ToolCall
		origin          string
	}{
		{path: "tool step", step: `  - {id: s, tool: create, args: {to: "{input.to}"}}`, key: "r/s/1", origin: "user"},
		{path: "for_each item", step: `  - {id: s, tool: create, for_each: "input.all", args: {to: "{item}"}}`, key: "r/s[0]/1", item: new(int), origin: "user"},
		{path: "repeat round", step: `  - {id: s, tool: create, args: {to: "{input.to}"}, repeat: {until: "true", max: 2}}`, key: "r/s#1/1", origin: "user"},
		{path: "fallback tool", step: `  - {id: s, tool: broken, args: {}, on_error: fallback, fallback: {tool: create, args: {to: "{input.to}"}}}`,
			key: "r/s/fallback/1", origin: "user"},
		{path: "plan step", step: `  - {id: s, type: plan, model: m, goal: "create", tools: [create], max_replans: 0}`, key: "r/s/1/plan1/a", origin: "inferred",
			plan: map[string]any{"goal": "create", "steps": []any{map[string]any{"id": "a", "tool": "create", "args": map[string]any{"to": "x"}}}}},
		{path: "agent call", step: `  - {id: s, type: agent, model: m, prompt_template: go, tools: {create: }}`, key: "r/s/1/turn1/call1", origin: "inferred",
			calls: []model.ToolCall{call("a", "create", `{"to":"x"}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			broken := goTool("broken", func(context.Context, map[string]any) (any, error) { return nil, fault.BusinessErr(errString("down")) })
			pure := goTool("archive", func(context.Context, map[string]any) (any, error) { return nil, nil })
			fx := newFixture(t, crmTool(), broken, pure)
			replies := []scripted.Reply{{Step: "draft", Output: "x"}}
			if tc.plan != nil {
				replies = append(replies, scripted.Reply{Step: "s", Decision: "plan", Plan: tc.plan})
			}
			if tc.calls != nil {
				replies = append(replies, scripted.Reply{Step: "s", ToolCalls: tc.calls}, scripted.Reply{Step: "s", Output: "done"})
			}
			fx.script(replies...)
			e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: openSQLite(t), Owner: "p"})
			res, err := e.Run(context.Background(), fx.parse(head+tc.step+"\n"), map[string]any{"to": "x", "all": []any{"x"}}, &engine.RunOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			effects := effectsOf(t, fx.events.all())
			if len(effects) == 0 {
				t.Fatal("no call record with an effect")
			}
			eff := effects[0]
			if eff.Key != tc.key || eff.StepID != "s" || eff.Tool != "create" || eff.Effect != "write" || eff.Outcome != "ok" ||
				(tc.item == nil) != (eff.Item == nil) || !slices.Equal(eff.Tags, []string{"money"}) {
				t.Errorf("effect %+v, want key %s of tool create", eff, tc.key)
			}
			if !slices.Equal(eff.Writes, []string{"crm:customer/c-x"}) || !slices.Equal(eff.Unrendered, []string{"crm:owner/{args.owner}"}) {
				t.Errorf("writes %v, unrendered %v", eff.Writes, eff.Unrendered)
			}
			if c := eff.Compensation; c == nil || c.Kind != "compensate" || c.Tool != "archive" || string(c.Args) != `{"id":"c-x","why":"undo x"}` {
				t.Errorf("compensation %+v", eff.Compensation)
			}
			var origins []string
			for _, p := range eff.Provenance {
				origins = append(origins, p.Origins...)
			}
			if !slices.Contains(origins, tc.origin) {
				t.Errorf("provenance %+v lacks %s", eff.Provenance, tc.origin)
			}
			for _, e := range effects {
				if e.Tool != "create" {
					t.Errorf("a call of tool %s, which has no effect, was journaled", e.Tool)
				}
			}
			if tc.path == "fallback tool" && !strings.HasSuffix(eff.Key, "/fallback/1") {
				t.Errorf("fallback key %s", eff.Key)
			}
		})
	}
}
