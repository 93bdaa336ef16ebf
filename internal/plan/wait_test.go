package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// briefNeedsApproval: the gate asks a person before any brief is written.
var briefNeedsApproval = &safety.Policy{Rules: []safety.Rule{{Name: "brief-by-hand", Tools: []string{"write_brief"},
	Verdict: safety.RequireApproval, Reason: "briefs are checked"}}}

const parallelPlan = `{"goal": "Tokyo weather brief", "steps": [
	{"id": "weather", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
	{"id": "brief", "tool": "write_brief", "args": {"city": {"$ref": "weather.city"}, "celsius": {"$ref": "weather.temperature_c"},
		"fahrenheit": 64.4, "condition": {"$ref": "weather.condition"}}},
	{"id": "convert", "tool": "convert_temperature", "depends_on": ["weather"], "args": {"celsius": 18}},
	{"id": "brief2", "tool": "write_brief", "depends_on": ["brief"], "args": {"city": "Oslo", "celsius": 1, "fahrenheit": 33.8, "condition": "snow"}}]}`

// TestPausableExecutorWaitsForTheGatesApproval: a pausable executor stops
// a step the gate wants approved before its call, runs what does not
// depend on it, and names the step with its resolved args; continued with
// an approval it runs exactly that step (approved) and what depended on
// it, with a rejection the step fails with the person's comment; a
// changed args resolution does not run under the old approval. Without
// Pausable the gate's require_approval refuses the step.
func TestPausableExecutorWaitsForTheGatesApproval(t *testing.T) {
	t.Parallel()
	ctx := tool.WithCallInfo(context.Background(), &tool.CallInfo{RunID: "r", StepID: "s", Attempt: 1, IdempotencyKey: "r/s/1"})
	first := func(t *testing.T) (*world, *plan.Executor, *plan.Progress, *recorder) {
		w := newWorld(t)
		rec := &recorder{}
		ex := w.executor(t, plan.ExecutorConfig{Gate: briefNeedsApproval, Pausable: true, OnEvent: rec.on})
		st := &plan.State{}
		p := mustParse(t, parallelPlan)
		err := ex.Execute(ctx, p, st)
		var we *plan.WaitError
		if !errors.As(err, &we) || fault.ClassOf(err) != fault.Policy {
			t.Fatalf("want a WaitError, got %v", err)
		}
		if len(we.Steps) != 1 || we.Steps[0].ID != "brief" || we.Steps[0].Tool != "write_brief" ||
			we.Steps[0].Args != `{"celsius":18,"city":"Tokyo","condition":"cloudy","fahrenheit":64.4}` ||
			!strings.Contains(we.Steps[0].Reason, "rule brief-by-hand: briefs are checked") {
			t.Fatalf("waiting %+v", we.Steps)
		}
		if w.called("write_brief") != 0 || w.called("convert_temperature") != 1 || st.Executed() != 2 {
			t.Fatalf("calls %v executed %d: want the independent steps only", w.calls, st.Executed())
		}
		if !strings.Contains(strings.Join(rec.kinds(), ","), "plan_step_waiting brief waiting") {
			t.Fatalf("events %v", rec.kinds())
		}
		return w, ex, &plan.Progress{Plan: p, Number: 1, Completed: st.Completed(), Executed: st.Executed()}, rec
	}
	t.Run("approved", func(t *testing.T) {
		w, ex, prog, _ := first(t)
		prog.Decisions = map[string]plan.Decision{"brief": {Approved: true, Args: `{"celsius":18,"city":"Tokyo","condition":"cloudy","fahrenheit":64.4}`}}
		res, err := plan.RunFrom(ctx, plan.NewScripted(), ex, goal, plan.Limits{}, prog)
		var we *plan.WaitError
		// brief2 needs its own approval now that brief ran.
		if !errors.As(err, &we) || len(we.Steps) != 1 || we.Steps[0].ID != "brief2" {
			t.Fatalf("want brief2 waiting, got %v", err)
		}
		if w.called("write_brief") != 1 || w.called("read_backup_weather") != 1 || w.called("convert_temperature") != 1 || res.Executed != 3 {
			t.Fatalf("calls %v executed %d: completed steps ran again", w.calls, res.Executed)
		}
		if got := w.keys[len(w.keys)-1]; got != "r/s/1/plan1/brief" {
			t.Fatalf("the approved call's key %s", got)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		w, ex, prog, _ := first(t)
		prog.Decisions = map[string]plan.Decision{"brief": {Comment: "no briefs today"}}
		_, err := plan.RunFrom(ctx, plan.NewScripted(), ex, goal, plan.Limits{}, prog)
		var se *plan.StepError
		if !errors.As(err, &se) || se.StepID != "brief" || se.Cause() != "rejected by a person: no briefs today" || w.called("write_brief") != 0 {
			t.Fatalf("want brief rejected without a call, got %v (calls %v)", err, w.calls)
		}
	})
	t.Run("args changed", func(t *testing.T) {
		w, ex, prog, _ := first(t)
		prog.Decisions = map[string]plan.Decision{"brief": {Approved: true, Args: `{"celsius":19}`}}
		_, err := plan.RunFrom(ctx, plan.NewScripted(), ex, goal, plan.Limits{}, prog)
		var se *plan.StepError
		if !errors.As(err, &se) || fault.ClassOf(se.Err) != fault.Conflict || !strings.Contains(err.Error(), `approved with args "{\"celsius\":19}"`) || w.called("write_brief") != 0 {
			t.Fatalf("want a conflict without a call, got %v (calls %v)", err, w.calls)
		}
	})
	t.Run("not pausable", func(t *testing.T) {
		w := newWorld(t)
		ex := w.executor(t, plan.ExecutorConfig{Gate: briefNeedsApproval})
		err := ex.Execute(ctx, mustParse(t, parallelPlan), nil)
		var se *plan.StepError
		if !errors.As(err, &se) || se.StepID != "brief" || fault.ClassOf(err) != fault.Policy || w.called("write_brief") != 0 {
			t.Fatalf("want brief refused, got %v", err)
		}
	})
	t.Run("declared approval", func(t *testing.T) {
		w := newWorld(t)
		w.primaryDown = false
		ex := w.executor(t, plan.ExecutorConfig{Pausable: true, RequireApproval: map[string]bool{"convert_temperature": true}})
		err := ex.Execute(ctx, mustParse(t, primaryPlan), nil)
		var we *plan.WaitError
		if !errors.As(err, &we) || we.Steps[0].ID != "convert" || we.Steps[0].Reason != "its declaration says approval: required" || w.called("convert_temperature") != 0 {
			t.Fatalf("want convert waiting, got %v", err)
		}
	})
}
