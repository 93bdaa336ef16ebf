package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/chattest"
)

// TestOpenAIBaseURLAndKeyChecks: --model openai/… goes to the server
// OPENAI_BASE_URL names (an OpenAI-compatible one), not the public API;
// without OPENAI_API_KEY, rein run, rein agent and rein chat refuse before
// a run exists (exit 2, no model call, no store made) saying what to set,
// and rein validate reports it as a problem.
func TestOpenAIBaseURLAndKeyChecks(t *testing.T) {
	// not parallel: it sets the environment rein reads.
	srv := chattest.Turns(t, testOpenAIKey, chattest.SupportAgent...)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", testOpenAIKey)
	t.Setenv("REIN_OUTBOX", t.TempDir())
	agentDir := "../../examples/support-agent"
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "agent", agentDir, supportTask, "--model", "openai/gpt-4o-mini", "--db", db, "-o", "json")
	if code != exitWaiting || srv.Calls.Load() != 2 {
		t.Fatalf("agent with OPENAI_BASE_URL: exit %d (want 3), %d calls to the server (want 2); stderr: %s\n%s", code, srv.Calls.Load(), stderr, out)
	}

	flowDir := filepath.Dir(writeFlow(t, `name: ask
steps:
  - id: answer
    model: openai/gpt-4o-mini
    prompt_template: "Say hello"
`))
	t.Setenv("OPENAI_API_KEY", "")
	before := srv.Calls.Load()
	for _, args := range [][]string{
		{"run", flowDir},
		{"agent", agentDir, supportTask, "--model", "openai/gpt-4o-mini"},
		{"chat", agentDir, "--session", "s1", "--message", supportTask, "--model", "openai/gpt-4o-mini"},
	} {
		db := filepath.Join(t.TempDir(), "rein.db")
		code, out, stderr := cli(t, append(args, "--db", db)...)
		if code != exitUsage || !strings.Contains(stderr, "set the environment variable OPENAI_API_KEY") || !strings.Contains(stderr, "nothing was written") {
			t.Errorf("%s without the key: exit %d (want 2); stderr: %s\n%s", args[0], code, stderr, out)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s without the key made the store (%v)", args[0], err)
		}
	}
	if srv.Calls.Load() != before {
		t.Errorf("%d model calls without a key", srv.Calls.Load()-before)
	}
	code, out, stderr = cli(t, "validate", flowDir)
	if code != exitUsage || !strings.Contains(stderr, "flow.yaml:3:5: step answer: model openai/gpt-4o-mini: openai/gpt-4o-mini needs an API key: set the environment variable OPENAI_API_KEY") {
		t.Errorf("validate without the key: exit %d (want 2); stderr: %s\n%s", code, stderr, out)
	}
}
