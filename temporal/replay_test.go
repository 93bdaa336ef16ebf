package temporal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

// TestReplayHistories feeds every committed history
// (testdata/histories/RUN.json, recorded from a real server by the
// temporalserver tests) to the SDK's replayer with today's workflow: a
// change to the workflow code that would take an old run another way fails
// here (a non-determinism error), and needs workflow.GetVersion.
func TestReplayHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no committed history under testdata/histories")
	}
	// the histories' flows, with tools of their names: replay runs no
	// activity, but binds the flow's tools (engine.Repeatable).
	stub := func(name string, idempotent bool) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Effect: tool.EffectWrite, Idempotent: idempotent}, func(context.Context, any) (any, error) {
			t.Errorf("replay called tool %s", name)
			return nil, nil
		})
	}
	// a tool whose check: the workflow consults (engine.ReconcilesCall):
	// replay asks none.
	checkedStub := func(tt tool.Tool) tool.Tool {
		return tool.WithCheck(tt, func(context.Context, tool.CheckRequest) (tool.CheckResult, error) {
			t.Errorf("replay called the check of %s", tt.Spec().Name)
			return tool.CheckResult{}, nil
		})
	}
	fs := NewFlows()
	for _, d := range []string{"approve", "takeover", "agent", "agentkill", "features", "saga", "gate", "eachkill", "handover", "premise", "timed", "plankill"} {
		p, err := project.Load(filepath.Join("testdata", "flows", d), &project.LoadOptions{Tools: []tool.Tool{
			stub("ok", true), stub("pay", false), stub("slow_safe", true), stub("slow_charge", false), checkedStub(stub("slow_refund", false)), stub("charge_once", false),
			stub("charge", false), stub("refund", true), stub("ship", true), stub("lookup", true), stub("item", true), stub("hang", true), stub("after", true)}})
		if err != nil {
			t.Fatal(err)
		}
		fs.Add(p)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			RegisterWorkflow(r, &Workflow{Flows: fs})
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// a history is named after its run: the run id is the workflow id,
			// and the activities' ids (idempotency keys) carry it.
			id := strings.TrimSuffix(filepath.Base(f), ".json")
			if err := r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: id, RunID: "replay"}}); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}
