//go:build temporalserver

package servertest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExamplesWorker runs the commands as a user types them: a
// worker process (rein worker --temporal … examples/, over a SQLite run
// store) serving every example folder, and commands against it:
//
//   - the scripted resume-screen flow, twice on the same worker: each run
//     is answered from the whole script (the replies are used up per run);
//   - the process workflow, whose idempotency: is
//     session_workflow_input_hash: without --session the start is refused
//     (exit 2), with one it starts, and a second start with the same
//     session and input returns that run, saying so;
//   - the process clerk, an agent whose tool is the process workflow: the
//     worker serves the workflow tool over its run store.
func TestExamplesWorker(t *testing.T) {
	ts := server(t)
	prog := filepath.Join(t.TempDir(), "rein-temporal")
	if out, err := exec.Command("go", "build", "-o", prog, "github.com/reinhq/rein/temporal/cmd/rein-temporal").CombinedOutput(); err != nil {
		t.Fatalf("build rein-temporal: %v\n%s", err, out)
	}
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	conn := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "examples"}
	var werr bytes.Buffer
	w := exec.Command(prog, append([]string{"worker", examples, "--store", filepath.Join(t.TempDir(), "rein.db")}, conn...)...)
	w.Stderr = &werr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = w.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the worker's stderr:\n%s", werr.String())
		}
	})
	run := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errs bytes.Buffer
		cmd := exec.Command(prog, append(args, conn...)...)
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errs.String()
	}

	for i := range 2 {
		if code, out, errs := run("run", filepath.Join(examples, "resume-screen")); code != 0 || !strings.Contains(out, " succeeded\n") {
			t.Fatalf("rein run examples/resume-screen, run %d on one worker: exit %d\n%s\n%s", i+1, code, out, errs)
		}
	}

	process := filepath.Join(examples, "process-workflow")
	if code, _, errs := run("run", process); code != 2 || !strings.Contains(errs, "pass a session id with --session ID") {
		t.Errorf("rein run examples/process-workflow without --session: exit %d, want 2 naming --session\n%s", code, errs)
	}
	code, first, errs := run("run", process, "--session", "s1")
	if code != 3 || !strings.Contains(first, "waits: step parse (submission)") || strings.Contains(errs, "started earlier") {
		t.Fatalf("rein run examples/process-workflow --session s1: exit %d\n%s\n%s", code, first, errs)
	}
	code, again, errs := run("run", process, "--session", "s1")
	if code != 3 || again != first || !strings.Contains(errs, "was started earlier with the same idempotency key (session_workflow_input_hash)") {
		t.Errorf("the same start again: exit %d\n%s\n%s\nwant the first run's state:\n%s", code, again, errs, first)
	}
	if code, other, errs := run("run", process, "--session", "s2"); code != 3 || other == first {
		t.Errorf("a start in another session: exit %d\n%s\n%s\nwant a run other than\n%s", code, other, errs, first)
	}

	code, out, errs := run("agent", filepath.Join(examples, "process-clerk"), "file a welded steel frame")
	if code != 0 || !strings.Contains(out, "Workflow results (process_workflow):") || !strings.Contains(out, "(workflow process): waiting; waits on parse (submit)") {
		t.Errorf("rein agent examples/process-clerk: exit %d\n%s\n%s", code, out, errs)
	}
}
