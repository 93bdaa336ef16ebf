package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// Without retries: a transient error is retried (flow.DefaultRetries), a
// business error is not, and retries: 0 set explicitly means no retry.
func TestTransientErrorsAreRetriedByDefault(t *testing.T) {
	t.Parallel()
	flaky, broken, once := &counter{}, &counter{}, &counter{}
	fx := newFixture(t, flaky.tool("flaky", 2, errTransient), broken.tool("broken", 1, fault.BusinessErr(errTransient)),
		once.tool("once", 1, errTransient))
	res := fx.run(`name: defaults
steps:
  - {id: a, tool: flaky, args: {}}
  - {id: b, tool: broken, args: {}, on_error: skip, fallback_value: {}}
  - {id: c, tool: once, args: {}, retries: 0, on_error: skip, fallback_value: {}}
`, nil)
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "a", trace.StepSucceeded, 3)
	wantStep(t, res, "b", trace.StepDefaulted, 1)
	wantStep(t, res, "c", trace.StepDefaulted, 1)
	if flaky.Calls() != 3 || broken.Calls() != 1 || once.Calls() != 1 {
		t.Fatalf("calls: flaky %d, broken %d, once %d", flaky.Calls(), broken.Calls(), once.Calls())
	}
}

// A step without timeout: gets the default, so a tool that never returns
// ends as a transient timeout; here the rein.yaml defaults shorten it.
func TestStepsTimeOutByDefault(t *testing.T) {
	t.Parallel()
	hang := tool.Func(tool.Spec{Name: "hang"}, func(ctx context.Context, _ any) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	fx := newFixture(t, hang)
	none := 0
	f, err := flow.Parse([]byte("name: hang\nsteps:\n  - {id: h, tool: hang, args: {}}\n"), "flow.yaml", &flow.Options{
		Tools:    func(string) (tool.Spec, bool) { return hang.Spec(), true },
		Defaults: &flow.Defaults{Retries: &none, Timeout: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := fx.engine().Run(context.Background(), f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	wantStep(t, res, "h", trace.StepFailed, 1)
	if res.Error.Class != fault.Transient || !strings.Contains(res.Error.Message, "timed out after 50ms") {
		t.Fatalf("error %+v, want the step's default timeout", res.Error)
	}
}
