package plan_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/tool"
)

const weatherOut = `{"type": "object", "required": ["city", "temperature_c", "condition"], "additionalProperties": false,
	"properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"}, "condition": {"type": "string"},
	"hourly": {"type": "array", "items": {"type": "object", "properties": {"hour": {"type": "integer"}, "temperature_c": {"type": "number"}}}}}}`

// world is a set of tools for the weather-brief examples, counting calls.
type world struct {
	mu    sync.Mutex
	calls map[string]int
	keys  []string
	// primaryDown makes read_primary_weather fail with a transient error.
	primaryDown bool
	reg         tool.Registry
	specs       []tool.Spec
}

func (w *world) called(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[name]
}

func (w *world) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.calls {
		n += c
	}
	return n
}

func (w *world) add(t testing.TB, spec tool.Spec, fn func(ctx context.Context, args map[string]any) (any, error)) {
	t.Helper()
	err := w.reg.Register(tool.Func(spec, func(ctx context.Context, args any) (any, error) {
		w.mu.Lock()
		w.calls[spec.Name]++
		w.keys = append(w.keys, tool.CallInfoFrom(ctx).IdempotencyKey)
		w.mu.Unlock()
		m, _ := args.(map[string]any)
		return fn(ctx, m)
	}))
	if err != nil {
		t.Fatal(err)
	}
	w.specs = append(w.specs, spec)
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{calls: map[string]int{}, primaryDown: true}
	cityIn := json.RawMessage(`{"type": "object", "required": ["city"], "additionalProperties": false, "properties": {"city": {"type": "string"}}}`)
	read := func(source string) func(context.Context, map[string]any) (any, error) {
		return func(_ context.Context, a map[string]any) (any, error) {
			if source == "primary" && w.primaryDown {
				return nil, fault.Errorf(fault.Transient, "primary weather source: upstream 503")
			}
			return map[string]any{"city": a["city"], "temperature_c": 18.0, "condition": "cloudy",
				"hourly": []any{map[string]any{"hour": 9, "temperature_c": 16.5}}}, nil
		}
	}
	w.add(t, tool.Spec{Name: "read_primary_weather", Description: "current weather from the primary source", Effect: tool.EffectRead,
		InputSchema: cityIn, OutputSchema: json.RawMessage(weatherOut)}, read("primary"))
	w.add(t, tool.Spec{Name: "read_backup_weather", Description: "current weather from the backup source", Effect: tool.EffectRead,
		InputSchema: cityIn, OutputSchema: json.RawMessage(weatherOut)}, read("backup"))
	w.add(t, tool.Spec{Name: "convert_temperature", Description: "Celsius to Fahrenheit",
		InputSchema:  json.RawMessage(`{"type": "object", "required": ["celsius"], "additionalProperties": false, "properties": {"celsius": {"type": "number"}}}`),
		OutputSchema: json.RawMessage(`{"type": "object", "required": ["fahrenheit"], "properties": {"fahrenheit": {"type": "number"}}}`),
	}, func(_ context.Context, a map[string]any) (any, error) {
		c, _ := a["celsius"].(float64)
		return map[string]any{"fahrenheit": math.Round((c*9/5+32)*10) / 10}, nil
	})
	w.add(t, tool.Spec{Name: "write_brief", Description: "a one-line weather brief",
		InputSchema: json.RawMessage(`{"type": "object", "required": ["city", "celsius", "fahrenheit", "condition"], "additionalProperties": false,
			"properties": {"city": {"type": "string"}, "celsius": {"type": "number"}, "fahrenheit": {"type": "number"}, "condition": {"type": "string"}}}`),
		OutputSchema: json.RawMessage(`{"type": "string"}`),
	}, func(_ context.Context, a map[string]any) (any, error) {
		return fmt.Sprintf("%s: %.1f°C / %.1f°F, %s.", a["city"], a["celsius"], a["fahrenheit"], a["condition"]), nil
	})
	w.add(t, tool.Spec{Name: "lookup", Description: "anything; declares no output schema"},
		func(_ context.Context, a map[string]any) (any, error) { return map[string]any{"any": "thing"}, nil })
	w.add(t, tool.Spec{Name: plan.MetaTool, Description: "runs a plan"},
		func(context.Context, map[string]any) (any, error) { return nil, nil })
	return w
}

// addCheckUnit registers the check_unit tool: a new operation the executor
// knows nothing about.
func (w *world) addCheckUnit(t testing.TB) {
	w.add(t, tool.Spec{Name: "check_unit", Description: "checks that a temperature is plausible in a unit",
		InputSchema:  json.RawMessage(`{"type": "object", "required": ["value", "unit"], "properties": {"value": {"type": "number"}, "unit": {"enum": ["C", "F"]}}}`),
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"ok": {"type": "boolean"}, "value": {"type": "number"}}}`),
	}, func(_ context.Context, a map[string]any) (any, error) {
		v, _ := a["value"].(float64)
		return map[string]any{"ok": v > -90 && v < 60, "value": v}, nil
	})
}

func (w *world) catalog(t testing.TB, allowed []string, maxSteps int) *plan.Catalog {
	t.Helper()
	c, err := plan.NewCatalog(plan.CatalogConfig{Tools: w.specs, Allowed: allowed, MaxSteps: maxSteps})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (w *world) executor(t testing.TB, cfg plan.ExecutorConfig) *plan.Executor {
	t.Helper()
	if cfg.Catalog == nil {
		cfg.Catalog = w.catalog(t, nil, 0)
	}
	cfg.Tools = &w.reg
	ex, err := plan.NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func mustParse(t testing.TB, s string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse([]byte(s))
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return p
}

const primaryPlan = `{"goal": "Tokyo weather brief", "steps": [
	{"id": "weather", "tool": "read_primary_weather", "depends_on": [], "args": {"city": "Tokyo"}},
	{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather.temperature_c"}}},
	{"id": "brief", "tool": "write_brief", "args": {"city": {"$ref": "weather.city"}, "celsius": {"$ref": "weather.temperature_c"},
		"fahrenheit": {"$ref": "convert.fahrenheit"}, "condition": {"$ref": "weather.condition"}}}]}`

const backupPlan = `{"goal": "Tokyo weather brief", "steps": [
	{"id": "weather_backup", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
	{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather_backup.temperature_c"}}},
	{"id": "brief", "tool": "write_brief", "args": {"city": {"$ref": "weather_backup.city"}, "celsius": {"$ref": "weather_backup.temperature_c"},
		"fahrenheit": {"$ref": "convert.fahrenheit"}, "condition": {"$ref": "weather_backup.condition"}}}]}`

// recorder collects events; OnEvent is called from one goroutine at a time,
// the mutex only guards reads from the test.
type recorder struct {
	mu      sync.Mutex
	events  []plan.Event
	busy    atomic.Int32
	overlap atomic.Bool
}

func (r *recorder) on(ev plan.Event) {
	if r.busy.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.busy.Add(-1)
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		s := string(e.Kind)
		if e.PlanStep != "" {
			s += " " + e.PlanStep
		}
		if e.Status != "" {
			s += " " + e.Status
		}
		out = append(out, s)
	}
	return out
}
