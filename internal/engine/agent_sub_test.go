package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// An agent called as a tool (billing) whose refund needs a person's
// approval: the approval parks the whole run; approved, the run resumes
// into the sub-run, and the process dies by SIGKILL inside the refund.
// However often the run is resumed then, the refund ran once: inside the
// sub-run, as anywhere, the call is unknown for a person.

const subRun = "sub"

const subFlow = `name: support
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: support
    type: agent
    model: m
    instructions: Help with orders.
    prompt_template: "{input.task}"
    tools: {status: , billing: }
`

// billingTool is the sub-agent billing as the caller's registry holds it.
type billingTool struct {
	tool.Tool
	def *agent.Definition
}

func (b *billingTool) AgentDefinition() *agent.Definition { return b.def }

func subEngine(t testing.TB, dir string, st store.Store, kill string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	inner := agentTools(dir, kill)
	refund, _ := inner.Lookup("refund")
	status, _ := inner.Lookup("status")
	def := &agent.Definition{Name: "billing", Path: "/agents/billing", Config: agent.Config{
		Model: agentTurns(dir, "", model.Response{ToolCalls: []model.ToolCall{call("r", "refund", `{"order":"1042"}`)}},
			model.Response{Text: "refunded 1042"}),
		ModelName: "sm", Tools: []agent.Tool{{Tool: refund, Approval: true}}}}
	reg := &tool.Registry{}
	for _, tl := range []tool.Tool{status, &billingTool{Tool: tool.Func(tool.Spec{Name: "billing", Effect: tool.EffectNone, Idempotent: true}, nil), def: def}} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	models := &model.Registry{}
	models.Register("m", agentTurns(dir, "", model.Response{ToolCalls: []model.ToolCall{call("b", "billing", `{"task":"refund order 1042"}`)}},
		model.Response{Text: "billing refunded order 1042"}))
	f, err := flow.Parse([]byte(subFlow), "support.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Clock: clock}), f
}

// TestAgentSubLedgerChild is the child of TestAgentSubApprovalSurvivesACrash.
func TestAgentSubLedgerChild(t *testing.T) {
	if os.Getenv("REIN_AGENT_SUB") == "" {
		t.Skip("the sub-agent ledger test's child process")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := subEngine(t, dir, st, "during:refund", nil)
	res, err := e.Run(ctx, f, agentInput, &engine.RunOptions{RunID: subRun})
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "support/turn1/call1/turn1/call1" {
		t.Fatalf("the run did not park on the sub-agent's refund: %v %+v", err, res)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: subRun, StepID: res.Pending[0].StepID, Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Resume(ctx, f, subRun)
	t.Fatalf("the child was meant to die in the refund, but its resume returned (%v)", err)
}

func TestAgentSubApprovalSurvivesACrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	childIn(t, dir, "TestAgentSubLedgerChild", "REIN_AGENT_SUB=1")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const doubt = "support/turn1/call1/turn1/call1"
	for range 2 {
		e, f := subEngine(t, dir, st, "", pastLease(t, st, subRun))
		res, err := e.Resume(ctx, f, subRun)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res, trace.RunWaiting)
		if len(res.Pending) != 1 || res.Pending[0].StepID != doubt || res.Pending[0].Kind != store.KindUnknown {
			t.Fatalf("pending %+v, want the sub-agent's refund unknown", res.Pending)
		}
		if n := refunds(t, dir); n != 1 {
			t.Fatalf("the refund ran %d times, want 1", n)
		}
	}
	// the dispatch is in the ledger: the refund's call record, started,
	// under the key of the sub-run's call.
	calls, err := st.Calls(ctx, subRun, "support")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range calls {
		found = found || c.Key == subRun+"/support/1/turn1/call1/billing/turn1/call1" && c.Name == "refund" && c.Status == store.CallStarted
	}
	if !found {
		t.Errorf("no started record of the dispatched refund: %+v", calls)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: subRun, StepID: doubt,
		Status: store.ApprovalSettled, Output: []byte(`{"refunded":true}`)}); err != nil {
		t.Fatal(err)
	}
	e, f := subEngine(t, dir, st, "", pastLease(t, st, subRun))
	res, err := e.Resume(ctx, f, subRun)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if n := refunds(t, dir); n != 1 {
		t.Fatalf("the refund ran %d times after the settle, want 1", n)
	}
	turns, err := engine.AgentTranscript(ctx, st, subRun, "support", 0)
	if err != nil {
		t.Fatal(err)
	}
	sr := turns[0].Calls[0].Sub
	if sr == nil || sr.Status != agent.SubAnswered || sr.Answer != "refunded 1042" || len(sr.Turns) != 2 ||
		sr.Turns[0].Calls[0].Observation != `{"refunded":true}` {
		t.Fatalf("the journal's sub-run: %+v", sr)
	}
	if turns[0].Calls[0].Observation != `"refunded 1042"` || !turns[1].Final {
		t.Errorf("the caller's transcript: %+v", turns)
	}
}
