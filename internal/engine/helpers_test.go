package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// fixture builds an engine over Go tools and a scripted model, and parses
// flows against them.
type fixture struct {
	t      *testing.T
	tools  *tool.Registry
	models *model.Registry
	clock  *fakeClock
	events *recorder
}

func newFixture(t *testing.T, tools ...tool.Tool) *fixture {
	t.Helper()
	fx := &fixture{t: t, tools: &tool.Registry{}, models: &model.Registry{}, clock: &fakeClock{}, events: &recorder{}}
	for _, tl := range tools {
		if err := fx.tools.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

func (fx *fixture) script(replies ...scripted.Reply) *scripted.Model {
	m := scripted.New(replies)
	fx.models.SetFallback(m)
	return m
}

func (fx *fixture) parse(src string) *flow.Flow {
	fx.t.Helper()
	f, err := flow.Parse([]byte(src), "test.yaml", &flow.Options{
		Tools: func(name string) (tool.Spec, bool) {
			t, ok := fx.tools.Lookup(name)
			if !ok {
				return tool.Spec{}, false
			}
			return t.Spec(), true
		},
		Models: func(string) bool { return true },
	})
	if err != nil {
		fx.t.Fatalf("parse flow: %v", err)
	}
	return f
}

func (fx *fixture) engine() *engine.Engine {
	return engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events})
}

func (fx *fixture) run(src string, input any) *engine.Result {
	fx.t.Helper()
	res, err := fx.engine().Run(context.Background(), fx.parse(src), input, nil)
	if err != nil {
		fx.t.Fatalf("run: %v", err)
	}
	return res
}

// fakeClock never sleeps; it records the waits asked of it. Its time and
// timers are the wall clock's.
type fakeClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time { return time.Now() }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) engine.Timer {
	return engine.SystemClock.AfterFunc(d, f)
}

func (c *fakeClock) WithDeadline(ctx context.Context, at time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, at)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return context.Cause(ctx)
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// recorder is a trace sink keeping copies of every event.
type recorder struct {
	mu     sync.Mutex
	events []trace.Event
}

func (r *recorder) Emit(_ context.Context, e *trace.Event) {
	r.mu.Lock()
	r.events = append(r.events, *e)
	r.mu.Unlock()
}

// BorrowsEvents: the recorder keeps copies, so the engine may reuse the
// events' memory (and the engine's tests run that path).
func (r *recorder) BorrowsEvents() {}

func (r *recorder) all() []trace.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]trace.Event(nil), r.events...)
}

// goTool is a Go tool from a function over map args.
func goTool(name string, fn func(ctx context.Context, args map[string]any) (any, error)) tool.Tool {
	return tool.Func(tool.Spec{Name: name, Effect: tool.EffectNone}, func(ctx context.Context, args any) (any, error) {
		m, _ := args.(map[string]any)
		return fn(ctx, m)
	})
}

// counter is a tool that fails the first n calls with err, then echoes its args.
type counter struct {
	mu    sync.Mutex
	calls int
	keys  []string
}

func (c *counter) tool(name string, failFirst int, err error) tool.Tool {
	return goTool(name, func(ctx context.Context, args map[string]any) (any, error) {
		c.mu.Lock()
		c.calls++
		n := c.calls
		c.keys = append(c.keys, tool.CallInfoFrom(ctx).IdempotencyKey)
		c.mu.Unlock()
		if n <= failFirst {
			return nil, err
		}
		return map[string]any{"call": float64(n), "args": args}, nil
	})
}

func (c *counter) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func raw(s string) *string { return &s }

func wantStatus(t *testing.T, res *engine.Result, want trace.RunStatus) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("run status = %s, want %s (error: %v)", res.Status, want, res.Error)
	}
}

func wantStep(t *testing.T, res *engine.Result, id string, status trace.StepStatus, attempts int) {
	t.Helper()
	st, ok := res.Steps[id]
	if !ok {
		t.Fatalf("no step %s in result", id)
	}
	if st.Status != status || (attempts >= 0 && st.Attempts != attempts) {
		t.Fatalf("step %s = %s after %d attempts, want %s after %d (error: %v)", id, st.Status, st.Attempts, status, attempts, st.Error)
	}
}

func wantErrorClass(t *testing.T, res *engine.Result, class fault.Class, contains string) {
	t.Helper()
	if res.Error == nil {
		t.Fatalf("run error = nil, want class %s", class)
	}
	if res.Error.Class != class || !strings.Contains(res.Error.Error(), contains) {
		t.Fatalf("run error = [%s] %q, want [%s] containing %q", res.Error.Class, res.Error.Error(), class, contains)
	}
}

var errTransient = fault.TransientErr(fmt.Errorf("upstream 503"))

// gateDecisions are the gate's decisions in evs (the call records' and
// any gate_decision event's), as the views read them.
func gateDecisions(evs []trace.Event) []journal.Gated {
	ptrs := make([]*trace.Event, len(evs))
	for i := range evs {
		ptrs[i] = &evs[i]
	}
	return journal.GateDecisions(ptrs)
}

// effectsOf are the effect records in evs (the call records'), in order.
func effectsOf(t testing.TB, evs []trace.Event) []*journal.Effect {
	t.Helper()
	var out []*journal.Effect
	for i := range evs {
		e, ok, err := journal.EffectOf(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out = append(out, e)
		}
	}
	return out
}
