package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

func TestExecuteRunsAPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rec := &recorder{}
	ex := w.executor(t, plan.ExecutorConfig{OnEvent: rec.on})
	ctx := tool.WithCallInfo(context.Background(), &tool.CallInfo{RunID: "run1", StepID: "planning", Attempt: 1})
	st := &plan.State{}
	if err := ex.Execute(ctx, mustParse(t, backupPlan), st); err != nil {
		t.Fatal(err)
	}
	if out, _ := st.Output("brief"); out != "Tokyo: 18.0°C / 64.4°F, cloudy." {
		t.Errorf("brief = %v", out)
	}
	var ids []string
	for _, r := range st.Completed() {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, " "); got != "weather_backup convert brief" || st.Executed() != 3 || st.Plans() != 1 {
		t.Errorf("completed %s, executed %d, plans %d", got, st.Executed(), st.Plans())
	}
	want := []string{"plan_step_started weather_backup", "plan_step_settled weather_backup succeeded",
		"plan_step_started convert", "plan_step_settled convert succeeded",
		"plan_step_started brief", "plan_step_settled brief succeeded"}
	if got := rec.kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("events %q\nwant %q", got, want)
	}
	if got := strings.Join(w.keys, " "); got != "run1/planning/1/plan1/weather_backup run1/planning/1/plan1/convert run1/planning/1/plan1/brief" {
		t.Errorf("idempotency keys %s", got)
	}
	ev := rec.events[4]
	if ev.RunID != "run1" || ev.StepID != "planning" || ev.Tool != "write_brief" || ev.Attempt != 1 || ev.IdempotencyKey != "run1/planning/1/plan1/brief" {
		t.Errorf("started event %+v", ev)
	}
	if args, _ := ev.Args.(map[string]any); args["fahrenheit"] != 64.4 || args["city"] != "Tokyo" {
		t.Errorf("started event args %v", ev.Args)
	}
	if rec.overlap.Load() {
		t.Error("OnEvent was called concurrently")
	}
}

func TestExecuteRejectsAnInvalidPlanBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"duplicate ids": `{"steps": [{"id": "weather", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
			{"id": "weather", "tool": "read_backup_weather", "args": {"city": "Osaka"}}]}`,
		"reference to a later step": `{"steps": [{"id": "weather", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
			{"id": "convert", "tool": "convert_temperature", "args": {"celsius": {"$ref": "brief.x"}}},
			{"id": "brief", "tool": "lookup"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			rec := &recorder{}
			ex := w.executor(t, plan.ExecutorConfig{OnEvent: rec.on})
			err := ex.Execute(context.Background(), mustParse(t, src), nil)
			var ve *plan.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			if n := w.total(); n != 0 {
				t.Errorf("%d tools called", n)
			}
			if got := rec.kinds(); !reflect.DeepEqual(got, []string{"plan_rejected"}) {
				t.Errorf("events %q", got)
			}
		})
	}
}

func TestExecuteEnforcesItsOwnStepBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ex := w.executor(t, plan.ExecutorConfig{MaxExecuted: 3, Concurrency: 2, Catalog: w.catalog(t, nil, 50)})
	p := mustParse(t, manySteps(5))
	err := ex.Execute(context.Background(), p, nil)
	if fault.BudgetOf(err) != "max_executed_steps" || fault.ClassOf(err) != fault.Budget {
		t.Fatalf("got %v, want the max_executed_steps budget error", err)
	}
	if !strings.Contains(err.Error(), "plan step s3 would be tool call 4 of this run, more than max_executed_steps=3") {
		t.Errorf("message %q", err)
	}
	if n := w.called("lookup"); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}

	// The budget spans the plans of one State, and a State may tighten it.
	st := &plan.State{MaxExecuted: 2}
	if err := ex.Execute(context.Background(), mustParse(t, manySteps(1)), st); err != nil {
		t.Fatal(err)
	}
	err = ex.Execute(context.Background(), mustParse(t, `{"steps": [{"id": "x", "tool": "lookup"}, {"id": "y", "tool": "lookup"}]}`), st)
	if fault.BudgetOf(err) != "max_executed_steps" || st.Executed() != 2 {
		t.Errorf("got %v after %d calls", err, st.Executed())
	}
}

// gatedTool blocks until released, counting how many run at once.
type gatedTool struct {
	name    string
	release chan struct{}
	started chan string
	running atomic.Int32
	peak    atomic.Int32
}

func (g *gatedTool) Spec() tool.Spec { return tool.Spec{Name: g.name} }

func (g *gatedTool) Call(ctx context.Context, args any) (any, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	g.started <- tool.CallInfoFrom(ctx).StepID
	select {
	case <-g.release:
		return args, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func gatedExecutor(t *testing.T, conc int) (*plan.Executor, *gatedTool) {
	t.Helper()
	g := &gatedTool{name: "wait", release: make(chan struct{}), started: make(chan string, 16)}
	var reg tool.Registry
	if err := reg.Register(g); err != nil {
		t.Fatal(err)
	}
	cat, err := plan.NewCatalog(plan.CatalogConfig{Tools: []tool.Spec{g.Spec()}})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := plan.NewExecutor(plan.ExecutorConfig{Catalog: cat, Tools: &reg, Concurrency: conc})
	if err != nil {
		t.Fatal(err)
	}
	return ex, g
}

func TestExecuteRunsIndependentStepsInParallelWithinTheBound(t *testing.T) {
	t.Parallel()
	ex, g := gatedExecutor(t, 2)
	p := mustParse(t, `{"steps": [{"id": "a", "tool": "wait"}, {"id": "b", "tool": "wait"}, {"id": "c", "tool": "wait"},
		{"id": "d", "tool": "wait", "depends_on": ["a", "b", "c"]}]}`)
	errc := make(chan error, 1)
	go func() { errc <- ex.Execute(context.Background(), p, nil) }()
	var first []string
	for range 2 {
		select {
		case id := <-g.started:
			first = append(first, id)
		case <-time.After(5 * time.Second):
			t.Fatalf("independent steps did not start together (started %v)", first)
		}
	}
	select {
	case id := <-g.started:
		t.Fatalf("step %s started beyond Concurrency=2", id)
	case <-time.After(20 * time.Millisecond):
	}
	go func() {
		for range 4 {
			g.release <- struct{}{}
		}
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if peak := g.peak.Load(); peak != 2 {
		t.Errorf("peak concurrency %d, want 2", peak)
	}
	if first[0]+first[1] != "ab" && first[0]+first[1] != "ba" {
		t.Errorf("first started %v, want a and b (plan order)", first)
	}
}

func TestExecuteHonoursContext(t *testing.T) {
	t.Parallel()
	ex, g := gatedExecutor(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	st := &plan.State{}
	go func() {
		errc <- ex.Execute(ctx, mustParse(t, `{"steps": [{"id": "a", "tool": "wait"}, {"id": "b", "tool": "wait", "depends_on": ["a"]}]}`), st)
	}()
	<-g.started
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || fault.ClassOf(err) != fault.Cancelled {
			t.Errorf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Execute did not return after cancel")
	}
	if st.Executed() != 1 {
		t.Errorf("executed %d, want 1", st.Executed())
	}
	if err := ex.Execute(ctx, mustParse(t, `{"steps": [{"id": "a", "tool": "wait"}]}`), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context ran the plan: %v", err)
	}
}

type gateFunc func(ctx context.Context, inv *safety.Invocation) (safety.Decision, error)

func (f gateFunc) Check(ctx context.Context, inv *safety.Invocation) (safety.Decision, error) {
	return f(ctx, inv)
}

func TestExecutePassesEveryCallThroughTheGate(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var mu sync.Mutex
	var seen []string
	gate := gateFunc(func(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
		mu.Lock()
		seen = append(seen, inv.RunID+" "+inv.StepID+" "+inv.Tool.Name)
		mu.Unlock()
		if inv.Tool.Name == "write_brief" {
			if a, _ := inv.Args.(map[string]any); a["fahrenheit"] != 64.4 {
				t.Errorf("the gate saw unresolved args %v", inv.Args)
			}
			return safety.Decision{Verdict: safety.Block, Reason: "briefs need review"}, nil
		}
		return safety.Decision{Verdict: safety.Allow}, nil
	})
	ex := w.executor(t, plan.ExecutorConfig{Gate: gate})
	err := ex.Execute(context.Background(), mustParse(t, backupPlan), &plan.State{RunID: "r", StepID: "s"})
	var se *plan.StepError
	if !errors.As(err, &se) || se.StepID != "brief" || fault.ClassOf(err) != fault.Policy {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "policy gate: block on tool write_brief: briefs need review") {
		t.Errorf("message %q", err)
	}
	if w.called("write_brief") != 0 {
		t.Error("a blocked tool was called")
	}
	if got := strings.Join(seen, ", "); got != "r s/weather_backup read_backup_weather, r s/convert convert_temperature, r s/brief write_brief" {
		t.Errorf("gate saw %s", got)
	}
}

func TestExecuteStepFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add(t, tool.Spec{Name: "boom"}, func(context.Context, map[string]any) (any, error) { panic("kaboom") })
	w.add(t, tool.Spec{Name: "liar", OutputSchema: json.RawMessage(`{"type": "object", "required": ["n"], "properties": {"n": {"type": "number"}}}`)},
		func(context.Context, map[string]any) (any, error) { return map[string]any{"n": "three"}, nil })
	w.add(t, tool.Spec{Name: "sparse", OutputSchema: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "number"}}}`)},
		func(context.Context, map[string]any) (any, error) { return map[string]any{}, nil })
	tests := []struct {
		name, plan, step string
		class            fault.Class
		msg              string
	}{
		{"a panic", `{"steps": [{"id": "b", "tool": "boom"}]}`, "b", fault.Business, "panicked: kaboom"},
		{"output breaks its schema", `{"steps": [{"id": "l", "tool": "liar"}]}`, "l", fault.Business, "tool liar output breaks schema liar output_schema: at /n: got string, want number"},
		{"resolved args break the input schema", `{"steps": [{"id": "l", "tool": "lookup"}, {"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "l"}}}]}`,
			"c", fault.Business, "args for tool convert_temperature breaks schema convert_temperature input_schema: at /celsius: got object, want number"},
		{"a declared field is absent", `{"steps": [{"id": "s", "tool": "sparse"}, {"id": "c", "tool": "convert_temperature", "args": {"celsius": {"$ref": "s.n"}}}]}`,
			"c", fault.Business, `args/celsius: $ref "s.n": field "n" not found in s (has: no fields)`},
		{"a failing source", `{"steps": [{"id": "w", "tool": "read_primary_weather", "args": {"city": "Tokyo"}}]}`, "w", fault.Transient, "upstream 503"},
	}
	ex := w.executor(t, plan.ExecutorConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ex.Execute(context.Background(), mustParse(t, tt.plan), nil)
			var se *plan.StepError
			if !errors.As(err, &se) || se.StepID != tt.step {
				t.Fatalf("got %v, want a failure of step %s", err, tt.step)
			}
			if c := fault.ClassOf(err); c != tt.class {
				t.Errorf("class %s, want %s", c, tt.class)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q does not contain %q", err, tt.msg)
			}
		})
	}
}

func TestExecuteStartsNothingAfterAFailure(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ex := w.executor(t, plan.ExecutorConfig{Concurrency: 1})
	err := ex.Execute(context.Background(), mustParse(t, `{"steps": [{"id": "w", "tool": "read_primary_weather", "args": {"city": "Tokyo"}},
		{"id": "other", "tool": "lookup"}]}`), nil)
	if err == nil || w.called("lookup") != 0 {
		t.Fatalf("got %v with %d lookups", err, w.called("lookup"))
	}
}

func TestNewExecutorRejects(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cat := w.catalog(t, nil, 0)
	if _, err := plan.NewExecutor(plan.ExecutorConfig{Tools: &w.reg}); err == nil {
		t.Error("no catalog accepted")
	}
	if _, err := plan.NewExecutor(plan.ExecutorConfig{Catalog: cat}); err == nil {
		t.Error("no registry accepted")
	}
	var empty tool.Registry
	if _, err := plan.NewExecutor(plan.ExecutorConfig{Catalog: cat, Tools: &empty}); err == nil || !strings.Contains(err.Error(), "not in the registry") {
		t.Errorf("got %v", err)
	}
}
