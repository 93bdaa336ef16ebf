package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// heldAgentFlow: lookup's output contradicts its premise while agent, on
// another branch, is in flight: its first turn asked for two charges, run
// one at a time (concurrency 1), and the first is running.
const heldAgentFlow = `name: heldagent
concurrency: 2
steps:
  - id: lookup
    tool: lookup
    args: {}
    premise: {id: region-known, claim: "the registry knows the region", check: 'output.region != ""'}
  - id: agent
    type: agent
    model: m
    instructions: Charge the orders.
    prompt_template: go
    tools: {charge: }
    concurrency: 1
    requires: []
`

// heldAgentEngine builds the engine of heldAgentFlow on st. Each charge
// appends its key to dir/charge.log and each model turn its number to
// dir/model.log. With block set, the first charge starts, then waits until
// lookup's attempt has failed, and lookup waits until that charge started.
func heldAgentEngine(t testing.TB, dir string, st store.Store, block bool) (*engine.Engine, *flow.Flow) {
	var mu sync.Mutex
	logTo := func(name, line string) error {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(line + "\n")
		return err
	}
	started, release := make(chan struct{}), make(chan struct{})
	if !block {
		close(started)
		close(release)
	}
	var first sync.Once
	reg := &tool.Registry{}
	for _, tl := range []tool.Tool{
		tool.Func(tool.Spec{Name: "lookup", Effect: tool.EffectRead}, func(ctx context.Context, _ any) (any, error) {
			<-started
			return map[string]any{"region": ""}, nil
		}),
		// charge is not safe to repeat: a held call found in doubt would
		// wait for a person.
		tool.Func(tool.Spec{Name: "charge", Effect: tool.EffectWrite}, func(ctx context.Context, args any) (any, error) {
			if err := logTo("charge", tool.CallInfoFrom(ctx).IdempotencyKey); err != nil {
				return nil, err
			}
			if block {
				first.Do(func() {
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
					}
				})
			}
			return map[string]any{"charged": args.(map[string]any)["order"]}, nil
		}),
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	charge := func(order string) model.ToolCall {
		return model.ToolCall{Name: "charge", Args: `{"order":"` + order + `"}`}
	}
	replies := []scripted.Reply{
		{Step: "agent", Turn: 1, ToolCalls: []model.ToolCall{charge("o1"), charge("o2")}},
		{Step: "agent", Turn: 2, ToolCalls: []model.ToolCall{charge("o3")}},
		{Step: "agent", Turn: 3, Output: "done"},
	}
	turns := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if err := logTo("model", fmt.Sprintf("turn%d", req.Turn)); err != nil {
			return nil, err
		}
		return scripted.New(replies).Generate(ctx, req)
	})
	models := &model.Registry{}
	models.SetFallback(turns)
	f, err := flow.Parse([]byte(heldAgentFlow), "heldagent.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Tools: reg, Store: st, Models: models}
	if block {
		var once sync.Once
		cfg.Sink = sinkFunc(func(e *trace.Event) {
			if e.Kind == trace.AttemptFailed && e.StepID == "lookup" {
				once.Do(func() { close(release) })
			}
		})
	}
	return engine.New(cfg), f
}

// TestPremiseHoldsAgentInFlight: a premise that fails while an agent step
// runs its first turn's first call stops the agent there: that call
// finishes and is recorded, the turn's second call does not start, the
// model is asked no further turn, and the step stays running. Once a
// person settles the premise, a resume runs the held call (as never run:
// not in doubt, though its tool is not safe to repeat), then the next
// turns, each call once and no turn asked twice.
func TestPremiseHoldsAgentInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, f := heldAgentEngine(t, dir, st, true)
	res, err := e.Run(ctx, f, map[string]any{}, &engine.RunOptions{RunID: "hold-agent"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 1 || res.Pending[0].Kind != store.KindPremise {
		t.Fatalf("pending %+v, want the premise", res.Pending)
	}
	if got := readLines(t, filepath.Join(dir, "charge.log")); !slices.Equal(got, []string{"hold-agent/agent/1/turn1/call1"}) {
		t.Errorf("charges while held %v, want only turn1/call1 (in flight)", got)
	}
	if got := readLines(t, filepath.Join(dir, "model.log")); !slices.Equal(got, []string{"turn1"}) {
		t.Errorf("model turns while held %v, want turn1 only", got)
	}
	if got := res.Steps["agent"].Status; got != trace.StepRunning {
		t.Errorf("agent is %s, want running (held, not settled)", got)
	}

	settleLookup(t, st, "hold-agent")
	e, f = heldAgentEngine(t, dir, st, false)
	if res, err = e.Resume(ctx, f, "hold-agent"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	want := []string{"hold-agent/agent/1/turn1/call1", "hold-agent/agent/1/turn1/call2", "hold-agent/agent/1/turn2/call1"}
	if got := readLines(t, filepath.Join(dir, "charge.log")); !slices.Equal(got, want) {
		t.Errorf("charges %v, want %v (each once)", got, want)
	}
	if got := readLines(t, filepath.Join(dir, "model.log")); !slices.Equal(got, []string{"turn1", "turn2", "turn3"}) {
		t.Errorf("model turns %v, want turn1, turn2, turn3 (none asked twice)", got)
	}
}

// TestPremiseHoldAgentRejected: a person who rejects the premise fails
// the run; the agent it held takes no further turn nor call, and its step
// ends as a failed run ends the steps it had in flight: failed, class
// cancelled (not left running).
func TestPremiseHoldAgentRejected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, f := heldAgentEngine(t, dir, st, true)
	res, err := e.Run(ctx, f, map[string]any{}, &engine.RunOptions{RunID: "reject-agent"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "reject-agent", StepID: "lookup", Status: store.ApprovalRejected}); err != nil {
		t.Fatal(err)
	}
	e, f = heldAgentEngine(t, dir, st, false)
	if res, err = e.Resume(ctx, f, "reject-agent"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunFailed)
	if got := readLines(t, filepath.Join(dir, "charge.log")); len(got) != 1 {
		t.Errorf("charges %v, want only the one in flight when the premise failed", got)
	}
	if got := readLines(t, filepath.Join(dir, "model.log")); !slices.Equal(got, []string{"turn1"}) {
		t.Errorf("model turns %v, want turn1 only", got)
	}
	wantCancelledBy(t, st, res, "reject-agent", "agent", "lookup")
}

// wantCancelledBy checks that step id of run runID ended failed, class
// cancelled, stopped by step by, in the result and in its stored row.
func wantCancelledBy(t *testing.T, st store.Store, res *engine.Result, runID, id, by string) {
	t.Helper()
	sr := res.Steps[id]
	if sr.Status != trace.StepFailed || sr.Error == nil || sr.Error.Class != fault.Cancelled || !strings.Contains(sr.Error.Message, "step "+by+" failed") {
		t.Errorf("step %s: %s %+v, want failed, class cancelled, stopped by %s", id, sr.Status, sr.Error, by)
	}
	rows, err := st.Steps(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row.StepID == id && (row.Status != trace.StepFailed || !strings.Contains(string(row.Error), `"class":"cancelled"`)) {
			t.Errorf("stored step %s: %s %s, want failed, class cancelled", id, row.Status, row.Error)
		}
	}
}
