package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/chattest"
)

const testOpenAIKey = "sk-test-keys-0123456789abcdef"

// keyProc runs the built rein binary with the process's environment
// without OPENAI_API_KEY, plus env.
func keyProc(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_API_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// TestResumeWithoutTheModelKey: a support agent run on a hosted model
// parks on the refund's approval; approved in a shell without the model's
// key, the decision is recorded but the run is not resumed (it would run
// the refund and then fail at its next model call): rein says which
// variable to set and how to go on, and a resume without the key does
// nothing either. With the key, the resume runs the refund and answers.
// A first run without the key is refused before it exists (exit 2, no
// store made), saying what to set.
func TestResumeWithoutTheModelKey(t *testing.T) {
	t.Parallel()
	srv := chattest.Turns(t, testOpenAIKey, chattest.SupportAgent...)
	calls := &srv.Calls
	dir := filepath.Join(t.TempDir(), "support")
	if err := os.CopyFS(dir, os.DirFS("../../examples/support-agent")); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "rein.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = fmt.Appendf(cfg, "models:\n  real: {provider: openai, model: gpt-4o-mini, base_url: %q}\n", srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(dir, "rein.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	outbox := t.TempDir()
	db := filepath.Join(t.TempDir(), "rein.db")
	noKey := []string{"REIN_OUTBOX=" + outbox}
	withKey := append(noKey, "OPENAI_API_KEY="+testOpenAIKey)
	sent := func() int {
		entries, _ := os.ReadDir(outbox)
		return len(entries)
	}

	code, out, stderr := keyProc(t, withKey, "agent", dir, supportTask, "--model", "real", "--db", db, "-o", "json")
	if code != exitWaiting {
		t.Fatalf("agent: exit %d, want 3; stderr: %s\n%s", code, stderr, out)
	}
	var res agentResultJSON
	decodeOne(t, out, &res)
	if len(res.Pending) != 1 || res.Pending[0]["step_id"] != "agent/turn2/call1" || calls.Load() != 2 {
		t.Fatalf("agent: %+v after %d model calls", res, calls.Load())
	}

	code, out, stderr = keyProc(t, noKey, "runs", "approve", res.RunID, "agent/turn2/call1", "--db", db)
	for _, want := range []string{"the decision is recorded", "set the environment variable OPENAI_API_KEY", "once OPENAI_API_KEY is set, continue with: rein runs resume " + res.RunID} {
		if !strings.Contains(stderr, want) {
			t.Errorf("approve without the key: stderr lacks %q", want)
		}
	}
	if code != exitWaiting || sent() != 0 || calls.Load() != 2 {
		t.Fatalf("approve without the key: exit %d (want 3), %d refunds, %d model calls; stderr: %s\n%s", code, sent(), calls.Load(), stderr, out)
	}
	code, out, stderr = keyProc(t, noKey, "runs", "resume", res.RunID, "--db", db)
	if code != exitUsage || sent() != 0 || !strings.Contains(stderr, "cannot resume, nothing ran") ||
		!strings.Contains(stderr, "once OPENAI_API_KEY is set, continue with: rein runs resume "+res.RunID) {
		t.Fatalf("resume without the key: exit %d (want 2), %d refunds; stderr: %s\n%s", code, sent(), stderr, out)
	}
	code, out, stderr = keyProc(t, noKey, "runs", "show", res.RunID, "--db", db, "-o", "json")
	var view struct {
		Run struct{ Status string } `json:"run"`
	}
	decodeOne(t, out, &view)
	if code != exitOK || view.Run.Status != "pending" {
		t.Fatalf("show: exit %d, status %q (want pending: decided, not resumed); stderr: %s", code, view.Run.Status, stderr)
	}

	code, out, stderr = keyProc(t, withKey, "runs", "resume", res.RunID, "--db", db)
	if code != exitOK || sent() != 1 || !strings.Contains(out, "I refunded the duplicate charge") {
		t.Fatalf("resume with the key: exit %d, %d refunds; stderr: %s\n%s", code, sent(), stderr, out)
	}

	before := calls.Load()
	db2 := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr = keyProc(t, noKey, "agent", dir, supportTask, "--model", "real", "--db", db2, "-o", "json")
	if code != exitUsage || !strings.Contains(stderr, "set the environment variable OPENAI_API_KEY") ||
		!strings.Contains(stderr, "nothing was written") || calls.Load() != before {
		t.Fatalf("first run without the key: exit %d (want 2), %d model calls; stderr: %s\n%s", code, calls.Load()-before, stderr, out)
	}
	if _, err := os.Stat(db2); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a run refused before it started made the store %s (%v)", db2, err)
	}
}
