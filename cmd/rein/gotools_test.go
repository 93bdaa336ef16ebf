package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestGoToolsRunIsNotResumedHere: a run a program started with its own Go
// tools can be shown and decided from the CLI, but the CLI never suggests
// a resume it cannot do: it names the tools and the program that resumes
// the run, which does so with rein.Runs and the same tools.
func TestGoToolsRunIsNotResumedHere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(`name: gotools
steps:
  - {id: review, type: approval, message: "go on?"}
  - {id: greet, tool: greet, approval: required, args: {name: ann}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	type in struct {
		Name string `json:"name"`
	}
	type out struct {
		Hello string `json:"hello"`
	}
	tools := []tool.Tool{tool.Typed(tool.Spec{Name: "greet", Effect: tool.EffectNone},
		func(_ context.Context, v in) (out, error) { return out{Hello: v.Name}, nil })}
	db := filepath.Join(dir, "rein.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := project.Load(dir, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rein.Open(ctx, rein.Config{Store: st, Load: &project.LoadOptions{Tools: tools}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, p, nil)
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("start: %v %v", res, err)
	}
	id := res.RunID
	advice := "started by a program with its own Go tools (greet), which the rein CLI does not have"

	code, stdout, stderr := cli(t, "runs", "show", id, "--db", db)
	if code != exitOK || !strings.Contains(stdout, advice) || !strings.Contains(stdout, "rein runs approve "+id+" review --db "+db+" --no-resume") {
		t.Fatalf("show: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "review --db "+db+"\n") {
		t.Fatalf("show suggests a decision with a resume that cannot work:\n%s", stdout)
	}
	code, stdout, stderr = cli(t, "runs", "resume", id, "--db", db)
	if code != exitUsage || !strings.Contains(stderr, advice) || strings.Contains(stderr, "rein runs resume") || stdout != "" {
		t.Fatalf("resume: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, "runs", "approve", id, "review", "--db", db)
	if code != exitWaiting || !strings.Contains(stdout, "step review of run "+id+" approved") || !strings.Contains(stderr, "the decision is recorded; run "+id+" was "+advice) ||
		strings.Contains(stdout+stderr, "rein runs resume") {
		t.Fatalf("approve: exit %d\n%s%s", code, stdout, stderr)
	}

	// the program resumes it with its tools.
	o, err := c.Resume(ctx, id, nil)
	if err != nil || o.Result.Status != trace.RunWaiting || o.Result.Pending[0].StepID != "greet" {
		t.Fatalf("resume with the tools: %v %+v", err, o)
	}
	code, stdout, stderr = cli(t, "runs", "approve", id, "greet", "--no-resume", "--db", db)
	if code != exitOK || !strings.Contains(stdout, "step greet of run "+id+" approved by") || !strings.Contains(stdout, advice) || strings.Contains(stdout, "rein runs resume") {
		t.Fatalf("approve --no-resume: exit %d\n%s%s", code, stdout, stderr)
	}
	if o, err = c.Resume(ctx, id, nil); err != nil || o.Result.Status != trace.RunSucceeded || o.Result.Outputs["greet"].(map[string]any)["hello"] != "ann" {
		t.Fatalf("resume with the tools: %v %+v", err, o)
	}
}
