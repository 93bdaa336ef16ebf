package plan_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
)

// spy records the requests a model gets.
type spy struct {
	mu   sync.Mutex
	reqs []*model.Request
	m    model.Model
}

func (s *spy) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return s.m.Generate(ctx, req)
}

func raw(s string) *string { return &s }

func (s *spy) lastUser(i int) string {
	msgs := s.reqs[i].Messages
	return msgs[len(msgs)-1].Content
}

func TestModelPlannerCorrectsAnInvalidPlanOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	m := &spy{m: scripted.New([]scripted.Reply{
		{Step: "plan", Raw: raw(`{"goal": "g", "steps": [{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}},
			{"id": "weather", "tool": "read_primary_weather", "args": {"city": "Tokyo"}}]}`)},
		{Step: "plan", Raw: raw("```json\n" + primaryPlan + "\n```")},
	})}
	mp := &plan.ModelPlanner{Model: m, ModelName: "gpt-4o-mini"}
	p, err := mp.Plan(context.Background(), &plan.Request{Goal: goal, Catalog: w.catalog(t, nil, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 3 || p.Steps[0].ID != "weather" {
		t.Errorf("plan %s", p.JSON())
	}
	if len(m.reqs) != 2 || !m.reqs[1].Corrective || m.reqs[0].Model != "gpt-4o-mini" {
		t.Fatalf("%d requests", len(m.reqs))
	}
	corr := m.lastUser(1)
	if !strings.Contains(corr, `at /steps/0/args/celsius: $ref "weather.temperature_c" uses step "weather", which comes later (/steps/1)`) {
		t.Errorf("the corrective request does not carry the validation error:\n%s", corr)
	}
	first := m.reqs[0]
	if !strings.Contains(first.Messages[0].Content, `"depends_on"`) || len(first.Schema) == 0 {
		t.Errorf("the request carries no plan schema: %+v", first)
	}
	prompt := m.lastUser(0)
	for _, want := range []string{"Goal: " + goal, "- read_backup_weather: current weather from the backup source", `output schema: {"additionalProperties":false`, `{"$ref": "step_id.field"}`} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "execute_plan") {
		t.Errorf("the prompt offers the meta tool:\n%s", prompt)
	}
}

func TestModelPlannerGivesUpAfterTheCorrection(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for name, replies := range map[string][2]string{
		"prose":      {"First I will read the weather, then convert it.", "Sure! Here is the plan: read, convert, write."},
		"extra keys": {`{"goal": "g", "steps": [{"id": "a", "tool": "lookup", "why": "because"}]}`, `{"goal": "g", "steps": [], "notes": "x"}`},
	} {
		m := &spy{m: scripted.New([]scripted.Reply{{Step: "plan", Raw: raw(replies[0])}, {Step: "plan", Raw: raw(replies[1])}})}
		mp := &plan.ModelPlanner{Model: m}
		_, err := mp.Plan(context.Background(), &plan.Request{Goal: "g", Catalog: w.catalog(t, nil, 0)})
		var rej *model.RejectedError
		if !errors.As(err, &rej) || fault.ClassOf(err) != fault.Format || rej.Calls != 2 {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestModelPlannerTooLongIsThePlanLengthBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	long := manySteps(30)
	m := scripted.New([]scripted.Reply{{Step: "plan", Raw: raw(long)}, {Step: "plan", Raw: raw(long)}})
	_, err := plan.Run(context.Background(), &plan.ModelPlanner{Model: m}, w.executor(t, plan.ExecutorConfig{}), "g", plan.Limits{MaxSteps: 10})
	if fault.BudgetOf(err) != "max_steps" || fault.ClassOf(err) != fault.Budget {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "the plan has 30 steps, more than max_steps=10") || w.total() != 0 {
		t.Errorf("got %v after %d calls", err, w.total())
	}
}

func TestModelPlannerReplanPromptCarriesTheObservation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addCheckUnit(t)
	m := &spy{m: scripted.New([]scripted.Reply{
		{Step: "plan", Raw: raw(`{"goal": "g", "steps": [{"id": "unit", "tool": "check_unit", "args": {"value": 18, "unit": "C"}},
			{"id": "weather", "tool": "read_primary_weather", "depends_on": ["unit"], "args": {"city": "Tokyo"}}]}`)},
		{Step: "plan", Contains: "read_primary_weather) failed with a transient error", Raw: raw(backupPlan)},
	})}
	res, err := plan.Run(context.Background(), &plan.ModelPlanner{Model: m}, w.executor(t, plan.ExecutorConfig{}), goal, plan.Limits{MaxReplans: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Tokyo: 18.0°C / 64.4°F, cloudy." {
		t.Errorf("output %v", res.Output)
	}
	prompt := m.lastUser(1)
	for _, want := range []string{`- unit (tool check_unit): {"ok":true,"value":18}`, "step weather (tool read_primary_weather) failed with a transient error: primary weather source: upstream 503", "Propose a revised plan"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("replan prompt lacks %q:\n%s", want, prompt)
		}
	}
	if m.reqs[1].Attempt != 2 {
		t.Errorf("replan request attempt %d", m.reqs[1].Attempt)
	}
}
