package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/trace"
)

// TestAgentMustPlanAtTierThree: at risk tier 3 an agent that offers
// execute_plan may not call a side-effect tool directly — the call is
// refused (nothing runs) with an observation that tells the model to plan
// — and the plan it then sends is reviewed by the configured reviewer
// model, a different model than the agent's, before save runs once.
func TestAgentMustPlanAtTierThree(t *testing.T) {
	t.Parallel()
	save := newKeyCounter("save", false)
	fx := newFixture(t, save, readTool("lookup", map[string]any{"plan": "gold"}))
	m := &agentModel{turns: []model.Response{
		{ToolCalls: []model.ToolCall{call("a", "lookup", `{"q":"ann"}`)}},
		{ToolCalls: []model.ToolCall{call("b", "save", `{"id":"ann"}`)}},
		{ToolCalls: []model.ToolCall{call("c", "execute_plan", `{"objective":"save ann","steps":[{"id":"s","tool":"save","args":{"id":"ann"}}]}`)}},
		{Text: "saved ann"},
	}}
	rev := &recordingModel{m: supportsActions{"execute_plan", "save"}}
	fx.models.Register("m", m)
	fx.models.Register("rev", rev)
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events,
		Risk: &safety.RiskConfig{MinTier: 3}, Review: &safety.ReviewConfig{Model: "rev"}})
	f := fx.parse("name: ag\nsteps:\n  - id: helper\n    type: agent\n    model: m\n    prompt_template: \"save {input.customer}\"\n    tools: {lookup: , save: }\n")
	res, err := e.Run(context.Background(), f, map[string]any{"customer": "ann"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if n := len(save.calls()); n != 1 {
		t.Errorf("save ran %d times, want once (in the plan)", n)
	}
	if len(rev.requests()) == 0 || len(m.rev.requests()) != 0 {
		t.Errorf("reviews: %d by the reviewer model, %d by the agent's model", len(rev.requests()), len(m.rev.requests()))
	}
	var events []*trace.Event
	for _, e := range fx.events.all() {
		events = append(events, &e)
	}
	turns, err := engine.FoldAgentTranscript(events, "helper", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 4 {
		t.Fatalf("%d turns", len(turns))
	}
	direct := turns[1].Calls[0]
	if direct.Status != agent.StatusBlocked || !strings.Contains(direct.Observation, "risk tier 3") || !strings.Contains(direct.Observation, "Call execute_plan with a plan") {
		t.Errorf("the direct save: %s %q", direct.Status, direct.Observation)
	}
	if c := turns[0].Calls[0]; c.Status != agent.StatusOK {
		t.Errorf("the read: %s %q", c.Status, c.Observation)
	}
	if c := turns[2].Calls[0]; c.Status != agent.StatusOK {
		t.Errorf("execute_plan: %s %q", c.Status, c.Observation)
	}
}

// supportsActions is a reviewer that supports the action claim of each of
// its tools that the request asks about.
type supportsActions []string

func (s supportsActions) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	var text strings.Builder
	for _, m := range req.Messages {
		text.WriteString(m.Content)
	}
	var claims []string
	for _, name := range s {
		if c := actionClaim(name); strings.Contains(text.String(), c) {
			claims = append(claims, c)
		}
	}
	b, err := json.Marshal(verdicts(true, "the input names ann", claims...))
	return &model.Response{Text: string(b)}, err
}
