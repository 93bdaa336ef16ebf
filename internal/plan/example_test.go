package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/tool"
)

// The primary weather source is down; the first plan fails at its first
// step, the planner is asked again with the failure, and the revision uses
// the backup source.
func ExampleRun() {
	weather := func(down bool) func(context.Context, map[string]any) (map[string]any, error) {
		return func(_ context.Context, in map[string]any) (map[string]any, error) {
			if down {
				return nil, fault.Errorf(fault.Transient, "upstream 503")
			}
			return map[string]any{"city": in["city"], "temperature_c": 18.0, "condition": "cloudy"}, nil
		}
	}
	out := json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"}, "condition": {"type": "string"}}}`)
	var reg tool.Registry
	for _, t := range []tool.Tool{
		tool.Typed(tool.Spec{Name: "read_primary_weather", OutputSchema: out}, weather(true)),
		tool.Typed(tool.Spec{Name: "read_backup_weather", OutputSchema: out}, weather(false)),
		tool.Typed(tool.Spec{Name: "convert_temperature",
			InputSchema:  json.RawMessage(`{"type": "object", "required": ["celsius"], "properties": {"celsius": {"type": "number"}}}`),
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"fahrenheit": {"type": "number"}}}`)},
			func(_ context.Context, in struct{ Celsius float64 }) (map[string]any, error) {
				return map[string]any{"fahrenheit": math.Round((in.Celsius*9/5+32)*10) / 10}, nil
			}),
		tool.Typed(tool.Spec{Name: "write_brief"}, func(_ context.Context, in map[string]any) (string, error) {
			return fmt.Sprintf("%s: %.1f°C / %.1f°F, %s.", in["city"], in["celsius"], in["fahrenheit"], in["condition"]), nil
		}),
	} {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	var specs []tool.Spec
	for _, n := range reg.Names() {
		t, _ := reg.Lookup(n)
		specs = append(specs, t.Spec())
	}
	cat, err := plan.NewCatalog(plan.CatalogConfig{Tools: specs, MaxSteps: 5})
	if err != nil {
		panic(err)
	}
	ex, err := plan.NewExecutor(plan.ExecutorConfig{Catalog: cat, Tools: &reg, MaxExecuted: 10})
	if err != nil {
		panic(err)
	}
	mustParse := func(s string) *plan.Plan {
		p, err := plan.Parse([]byte(s))
		if err != nil {
			panic(err)
		}
		return p
	}
	steps := `[{"id": "weather", "tool": "%s", "args": {"city": "Tokyo"}},
		{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}},
		{"id": "brief", "tool": "write_brief", "args": {"city": {"$ref": "weather.city"}, "celsius": {"$ref": "weather.temperature_c"},
			"fahrenheit": {"$ref": "convert.fahrenheit"}, "condition": {"$ref": "weather.condition"}}}]`
	planner := plan.NewScripted(
		mustParse(`{"goal": "brief", "steps": `+fmt.Sprintf(steps, "read_primary_weather")+`}`),
		mustParse(`{"goal": "brief", "steps": `+fmt.Sprintf(steps, "read_backup_weather")+`}`))

	res, err := plan.Run(context.Background(), planner, ex, "Tokyo weather brief", plan.Limits{MaxReplans: 1})
	fmt.Println(res.Output, err)
	fmt.Println("replans:", res.Replans, "tool calls:", res.Executed, "first failure:", res.Failures[0].StepID, res.Failures[0].Class)

	_, err = plan.Run(context.Background(), plan.NewScripted(planner.Requests()[1].Previous), ex, "Tokyo weather brief", plan.Limits{MaxReplans: 0})
	fmt.Println(fault.BudgetOf(err)+":", err)
	// Output:
	// Tokyo: 18.0°C / 64.4°F, cloudy. <nil>
	// replans: 1 tool calls: 4 first failure: weather transient
	// max_replans: plan step weather failed and the plan may not be revised again (max_replans=0): plan step weather (tool read_primary_weather) failed: upstream 503
}

func ExampleValidate() {
	cat, _ := plan.NewCatalog(plan.CatalogConfig{Tools: []tool.Spec{
		{Name: "read_weather", OutputSchema: json.RawMessage(`{"type": "object", "properties": {"temperature_c": {"type": "number"}}, "additionalProperties": false}`)},
		{Name: "convert_temperature", InputSchema: json.RawMessage(`{"type": "object", "required": ["celsius"], "properties": {"celsius": {"type": "number"}}}`)},
	}})
	p, _ := plan.Parse([]byte(`{"goal": "g", "steps": [
		{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}},
		{"id": "weather", "tool": "read_weather"},
		{"id": "weather", "tool": "read_weather"},
		{"id": "again", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temp"}}}]}`))
	err := plan.Validate(p, cat)
	var ve *plan.ValidationError
	errors.As(err, &ve)
	for _, pr := range ve.Problems {
		fmt.Println(pr)
	}
	// Output:
	// at /steps/0/args/celsius: $ref "weather.temperature_c" uses step "weather", which comes later (/steps/1): a step may only use earlier steps, so move "weather" before this one
	// at /steps/2/id: duplicate step id "weather" (/steps/1 has it): give every step its own id
	// at /steps/3/args/celsius: $ref "weather.temp": weather has no field "temp": declared fields are temperature_c (did you mean "temperature_c"?) (output of tool read_weather)
}
