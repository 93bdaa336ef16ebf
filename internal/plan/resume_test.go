package plan_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/tool"
)

// TestRunFromContinuesTheRecordedPlan: RunFrom does not ask the planner,
// runs the recorded plan under its own number (the same keys), and does
// not run the steps it was given as completed.
func TestRunFromContinuesTheRecordedPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pl := plan.NewScripted() // asked for nothing
	ctx := tool.WithCallInfo(context.Background(), &tool.CallInfo{RunID: "run7", StepID: "plan"})
	from := &plan.Progress{Plan: mustParse(t, backupPlan), Number: 2, Executed: 2, Completed: []plan.StepResult{
		{ID: "weather_backup", Tool: "read_backup_weather", Output: map[string]any{"city": "Tokyo", "temperature_c": 18.0, "condition": "cloudy"}}}}
	res, err := plan.RunFrom(ctx, pl, w.executor(t, plan.ExecutorConfig{}), goal, plan.Limits{MaxReplans: 1}, from)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Tokyo: 18.0°C / 64.4°F, cloudy." || res.Replans != 1 || res.Executed != 4 {
		t.Errorf("result %+v", res)
	}
	if n := len(pl.Requests()); n != 0 {
		t.Errorf("the planner was asked %d times", n)
	}
	if got := strings.Join(w.keys, " "); got != "run7/plan/plan2/convert run7/plan/plan2/brief" {
		t.Errorf("keys %s, want the rest of plan 2 only", got)
	}
}
