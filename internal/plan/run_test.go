package plan_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/tool"
)

const goal = "Read Tokyo's weather, convert Celsius to Fahrenheit, then write a short brief."

func TestRunReplansAroundAFailedSource(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rec := &recorder{}
	ex := w.executor(t, plan.ExecutorConfig{OnEvent: rec.on})
	pl := plan.NewScripted(mustParse(t, primaryPlan), mustParse(t, backupPlan))
	ctx := tool.WithCallInfo(context.Background(), &tool.CallInfo{RunID: "run7", StepID: "plan"})
	res, err := plan.Run(ctx, pl, ex, goal, plan.Limits{MaxReplans: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Tokyo: 18.0°C / 64.4°F, cloudy." {
		t.Errorf("output %v", res.Output)
	}
	if res.Replans != 1 || res.Executed != 4 || len(res.Failures) != 1 || res.Failures[0].StepID != "weather" || res.Failures[0].Class != fault.Transient {
		t.Errorf("result %+v", res)
	}
	reqs := pl.Requests()
	if len(reqs) != 2 || reqs[0].Failure != nil || reqs[1].Replan != 1 || reqs[1].Failure == nil ||
		!strings.Contains(reqs[1].Failure.Error, "upstream 503") || reqs[1].Previous == nil || reqs[1].RunID != "run7" {
		t.Fatalf("requests %+v", reqs)
	}
	want := []string{"plan_proposed", "plan_step_started weather", "plan_step_settled weather failed", "plan_replan weather",
		"plan_proposed", "plan_step_started weather_backup", "plan_step_settled weather_backup succeeded",
		"plan_step_started convert", "plan_step_settled convert succeeded", "plan_step_started brief", "plan_step_settled brief succeeded"}
	if got := rec.kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("events %q\nwant %q", got, want)
	}
	if got := strings.Join(w.keys, " "); got != "run7/plan/plan1/weather run7/plan/plan2/weather_backup run7/plan/plan2/convert run7/plan/plan2/brief" {
		t.Errorf("keys %s", got)
	}
}

func TestRunWithoutReplansFailsWithTheReplanBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pl := plan.NewScripted(mustParse(t, primaryPlan), mustParse(t, backupPlan))
	res, err := plan.Run(context.Background(), pl, w.executor(t, plan.ExecutorConfig{}), goal, plan.Limits{MaxReplans: 0})
	if fault.BudgetOf(err) != "max_replans" || fault.ClassOf(err) != fault.Budget {
		t.Fatalf("got %v, want the max_replans budget error", err)
	}
	want := "plan step weather failed and the plan may not be revised again (max_replans=0): plan step weather (tool read_primary_weather) failed: primary weather source: upstream 503"
	if err.Error() != want {
		t.Errorf("message %q\nwant %q", err, want)
	}
	var se *plan.StepError
	if !errors.As(err, &se) || se.StepID != "weather" {
		t.Errorf("the step failure is not in the chain: %v", err)
	}
	if len(pl.Requests()) != 1 || w.total() != 1 || res.Executed != 1 || len(res.Completed) != 0 {
		t.Errorf("%d plans asked, %d calls, result %+v", len(pl.Requests()), w.total(), res)
	}
}

func TestRunNeverExecutesACompletedStepAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addCheckUnit(t)
	first := mustParse(t, `{"goal": "g", "steps": [
		{"id": "unit", "tool": "check_unit", "args": {"value": 18, "unit": "C"}},
		{"id": "weather", "tool": "read_primary_weather", "depends_on": ["unit"], "args": {"city": "Tokyo"}}]}`)
	// The revision lists unit again (reused) and references it by $ref.
	second := mustParse(t, `{"goal": "g", "steps": [
		{"id": "unit", "tool": "check_unit", "args": {"value": 18, "unit": "C"}},
		{"id": "weather", "tool": "read_backup_weather", "depends_on": ["unit"], "args": {"city": "Tokyo"}},
		{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "unit.value"}}}]}`)
	rec := &recorder{}
	ex := w.executor(t, plan.ExecutorConfig{OnEvent: rec.on})
	res, err := plan.Run(context.Background(), plan.NewScripted(first, second), ex, "g", plan.Limits{MaxReplans: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n := w.called("check_unit"); n != 1 {
		t.Errorf("check_unit called %d times, want 1", n)
	}
	if got := res.Outputs["convert"]; !reflect.DeepEqual(got, map[string]any{"fahrenheit": 64.4}) {
		t.Errorf("convert = %v", got)
	}
	var reused int
	for _, ev := range rec.events {
		if ev.Kind == plan.StepReused && ev.PlanStep == "unit" && ev.Attempt == 2 {
			reused++
		}
	}
	if reused != 1 {
		t.Errorf("%d reuse events: %q", reused, rec.kinds())
	}
	if got := ids(res.Completed); got != "unit weather convert" {
		t.Errorf("completed %s", got)
	}
}

func ids(rs []plan.StepResult) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return strings.Join(out, " ")
}

func TestRunThreeBudgetsThreeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		plans  []string
		limits plan.Limits
		budget string
		msg    string
	}{
		{"plan length", []string{primaryPlan}, plan.Limits{MaxSteps: 2, MaxReplans: 3}, "max_steps", "the plan has 3 steps, more than max_steps=2"},
		{"executed steps", []string{primaryPlan, backupPlan}, plan.Limits{MaxReplans: 3, MaxExecuted: 3}, "max_executed_steps", "plan step brief would be tool call 4 of this run, more than max_executed_steps=3"},
		{"replans", []string{primaryPlan, primaryPlan, primaryPlan}, plan.Limits{MaxReplans: 2}, "max_replans", "(max_replans=2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			var ps []*plan.Plan
			for _, s := range tt.plans {
				ps = append(ps, mustParse(t, s))
			}
			pl := plan.NewScripted(ps...)
			_, err := plan.Run(context.Background(), pl, w.executor(t, plan.ExecutorConfig{}), goal, tt.limits)
			if got := fault.BudgetOf(err); got != tt.budget || fault.ClassOf(err) != fault.Budget {
				t.Fatalf("budget %q (class %s), want %s: %v", got, fault.ClassOf(err), tt.budget, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q does not contain %q", err, tt.msg)
			}
			if tt.budget == "max_steps" && w.total() != 0 {
				t.Errorf("%d tools ran for a plan that was too long", w.total())
			}
			if tt.budget == "max_replans" && len(pl.Requests()) != 3 {
				t.Errorf("%d plans asked for, want 3", len(pl.Requests()))
			}
		})
	}
}

func TestRunANewOperationNeedsNoExecutorChange(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.primaryDown = false
	w.addCheckUnit(t)
	p := mustParse(t, `{"goal": "g", "steps": [
		{"id": "weather", "tool": "read_primary_weather", "args": {"city": "Tokyo"}},
		{"id": "check", "tool": "check_unit", "args": {"value": {"$ref": "weather.temperature_c"}, "unit": "C"}},
		{"id": "convert", "tool": "convert_temperature", "depends_on": ["check"], "args": {"celsius": {"$ref": "check.value"}}}]}`)
	res, err := plan.Run(context.Background(), plan.NewScripted(p), w.executor(t, plan.ExecutorConfig{}), "g", plan.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Output, map[string]any{"fahrenheit": 64.4}) || res.Outputs["check"].(map[string]any)["ok"] != true {
		t.Errorf("result %+v", res)
	}
	bad := mustParse(t, `{"steps": [{"id": "check", "tool": "check_unit", "args": {"value": 1, "unit": "K"}}]}`)
	_, err = plan.Run(context.Background(), plan.NewScripted(bad), w.executor(t, plan.ExecutorConfig{}), "g", plan.Limits{})
	var ve *plan.ValidationError
	if !errors.As(err, &ve) || ve.Problems[0].Pointer != "/steps/0/args/unit" {
		t.Errorf("got %v", err)
	}
}

func TestRunStopsOnPlannerAndValidationErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ex := w.executor(t, plan.ExecutorConfig{})
	_, err := plan.Run(context.Background(), plan.NewScripted(), ex, "g", plan.Limits{MaxReplans: 5})
	if err == nil || !strings.Contains(err.Error(), "planner: scripted planner: asked for plan 1, has 0") {
		t.Errorf("got %v", err)
	}
	dup := mustParse(t, `{"steps": [{"id": "a", "tool": "lookup"}, {"id": "a", "tool": "lookup"}]}`)
	_, err = plan.Run(context.Background(), plan.NewScripted(mustParse(t, primaryPlan), dup), ex, "g", plan.Limits{MaxReplans: 5})
	var ve *plan.ValidationError
	if !errors.As(err, &ve) || fault.ClassOf(err) != fault.Format {
		t.Errorf("an invalid revision: got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := plan.Run(ctx, plan.NewScripted(mustParse(t, backupPlan)), ex, "g", plan.Limits{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled run: %v", err)
	}
}
