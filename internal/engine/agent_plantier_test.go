package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// planTierFlow runs its agent at risk tier 3 without a reviewer: every
// side-effect call, execute_plan's included, waits for a person.
const planTierFlow = `name: support
inputs: {type: object, properties: {task: {type: string}}}
risk: {min_tier: 3}
steps:
  - id: support
    type: agent
    model: m
    prompt_template: "{input.task}"
    tools: {status: , charge: }
`

// planTierScript: a plan whose first step's args are literal and whose
// second takes the order from the first's output ($ref), then an answer.
var planTierScript = []model.Response{
	{ToolCalls: []model.ToolCall{call("p", "execute_plan", `{"objective":"charge the order","steps":[
		{"id":"look","tool":"status","args":{"order":"1042"}},
		{"id":"pay","tool":"charge","args":{"order":{"$ref":"look.order"}}}]}`)}},
	{Text: "charged order 1042"},
}

// TestAgentPlanAtTierThreeAsksOnce: approving the execute_plan call runs
// the plan steps the person saw (literal args) without asking again; the
// step whose args come from another step's output asks once, and
// approving it continues the plan without asking about the execute_plan
// call again. Two approvals in all, each tool called once.
func TestAgentPlanAtTierThreeAsksOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st := openSQLite(t)
	newEngine := func() (*engine.Engine, *flow.Flow) {
		reg := planTierTools(dir)
		models := &model.Registry{}
		models.Register("m", agentTurns(dir, "", planTierScript...))
		f, err := flow.Parse([]byte(planTierFlow), "support.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		return engine.New(engine.Config{Tools: reg, Models: models, Store: st}), f
	}
	e, f := newEngine()
	res, err := e.Run(ctx, f, agentInput, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	asked := []string{}
	for round := 0; res.Status == trace.RunWaiting; round++ {
		if round == 4 {
			t.Fatalf("still asking after 4 approvals: %v", asked)
		}
		if len(res.Pending) != 1 {
			t.Fatalf("pending %+v", res.Pending)
		}
		p := res.Pending[0]
		asked = append(asked, p.StepID+" "+p.Tool)
		if !strings.Contains(p.Message, "args sha256 ") {
			t.Errorf("the approval does not name the args digest: %q", p.Message)
		}
		if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: p.StepID, Status: store.ApprovalApproved}); err != nil {
			t.Fatal(err)
		}
		e, f = newEngine()
		if res, err = e.Resume(ctx, f, "r"); err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, res, trace.RunSucceeded)
	if got, want := strings.Join(asked, ", "), "support/turn1/call1 execute_plan, support/turn1/call1/pay charge"; got != want {
		t.Errorf("asked %s, want %s", got, want)
	}
	for _, name := range []string{"status", "charge"} {
		if got := readLines(t, filepath.Join(dir, name+".log")); len(got) != 2 {
			t.Errorf("%s calls %v, want one", name, got)
		}
	}
	if got := strings.Join(readLines(t, filepath.Join(dir, "model.log")), " "); got != "turn1 turn2" {
		t.Errorf("model asked for %s", got)
	}
}

// planTierTools are agentTools' status and charge, with status's output
// schema declared (a plan may take its order field).
func planTierTools(dir string) *tool.Registry {
	base := agentTools(dir, "")
	reg := &tool.Registry{}
	for _, name := range []string{"status", "charge"} {
		tl, _ := base.Lookup(name)
		spec := tl.Spec()
		if name == "status" {
			spec.OutputSchema = json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"},"tool":{"type":"string"}}}`)
		}
		if err := reg.Register(tool.Func(spec, tl.Call)); err != nil {
			panic(err)
		}
	}
	return reg
}
