package rein_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// Editing a flow file, or a schema file it uses, never changes a run in
// flight: the resume reads what the run pinned when it started.
func TestResumeUsesThePinnedFlowAndSchemaFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("flow.yaml", "name: pinned\nsteps:\n  - {id: ask, type: approval}\n  - {id: make, tool: make, args: {}, output_schema: out}\n")
	write("schemas/out.json", `{"type": "object", "required": ["x"]}`)
	mk := tool.Func(tool.Spec{Name: "make", Effect: tool.EffectNone}, func(context.Context, any) (any, error) {
		return map[string]any{"x": 1.0}, nil
	})
	opts := &project.LoadOptions{Tools: []tool.Tool{mk}}
	p, err := project.Load(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(ctx, filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := &engine.Config{Store: st}
	res, err := clientOf(cfg).Start(ctx, p, nil, &engine.RunOptions{RunID: "r"})
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("%v %v", err, res.Status)
	}
	// both files change on disk while the run waits
	write("flow.yaml", "name: pinned\nsteps:\n  - {id: other, tool: make, args: {}}\n")
	write("schemas/out.json", `{"type": "object", "required": ["y"]}`)
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "ask", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	p2, err := project.LoadRun(ctx, st, "r", opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err = resumeWith(ctx, cfg, p2, "r")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded || res.Outputs["make"] == nil {
		t.Fatalf("status %s, outputs %v, error %+v", res.Status, res.Outputs, res.Error)
	}
}
