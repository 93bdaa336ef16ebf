package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/chattest"
)

// TestApprovalStoryFromCassettes: an approval story recorded once against
// a model server (rein agent --record, then rein runs approve --record)
// replays offline: rein agent --replay parks on the approval, and rein
// runs approve --replay resumes the run from the cassette, with no call
// to the model. rein runs resume, reject and settle take the same flags.
func TestApprovalStoryFromCassettes(t *testing.T) {
	// not parallel: it sets the environment rein reads.
	srv := chattest.Turns(t, testOpenAIKey, chattest.SupportAgent...)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", testOpenAIKey)
	t.Setenv("REIN_OUTBOX", t.TempDir())
	dir, step := t.TempDir(), "agent/turn2/call1"
	// the example's refund answers with a path holding the run id, which
	// a replay of another run could not match: this one answers the same.
	agentDir := filepath.Join(dir, "support")
	if err := os.CopyFS(agentDir, os.DirFS("../../examples/support-agent")); err != nil {
		t.Fatal(err)
	}
	refund := "#!/bin/sh\ncat > /dev/null\necho '{\"refunded\": 59.9}'\n"
	if err := os.WriteFile(filepath.Join(agentDir, "tools", "issue_refund.sh"), []byte(refund), 0o755); err != nil {
		t.Fatal(err)
	}
	first, second := filepath.Join(dir, "first.yaml"), filepath.Join(dir, "after-approval.yaml")

	db := filepath.Join(dir, "recorded.db")
	code, out, stderr := cli(t, "agent", agentDir, supportTask, "--model", "openai/gpt-4o-mini", "--record", first, "--db", db, "-o", "json")
	var res agentResultJSON
	decodeOne(t, out, &res)
	if code != exitWaiting {
		t.Fatalf("recording agent: exit %d; stderr: %s", code, stderr)
	}
	if code, out, stderr := cli(t, "runs", "approve", res.RunID, step, "--record", second, "--db", db); code != exitOK || !strings.Contains(out, "succeeded") {
		t.Fatalf("recording approve: exit %d\n%s\n%s", code, out, stderr)
	}
	live := srv.Calls.Load()
	if live != 3 {
		t.Fatalf("the recorded story made %d model calls, want 3", live)
	}

	db = filepath.Join(dir, "replayed.db")
	code, out, stderr = cli(t, "agent", agentDir, supportTask, "--replay", first, "--db", db, "-o", "json")
	decodeOne(t, out, &res)
	if code != exitWaiting {
		t.Fatalf("replayed agent: exit %d; stderr: %s", code, stderr)
	}
	for _, cmd := range []string{"resume", "reject", "settle"} {
		code, help, _ := cli(t, "runs", cmd, "--help")
		for _, flag := range []string{"--replay", "--record", "--script", "--model"} {
			if code != exitOK || !strings.Contains(help, flag) {
				t.Errorf("rein runs %s has no %s", cmd, flag)
			}
		}
	}
	code, out, stderr = cli(t, "runs", "approve", res.RunID, step, "--replay", second, "--db", db)
	if code != exitOK || !strings.Contains(out, "I refunded the duplicate charge") {
		t.Fatalf("replayed approve: exit %d\n%s\n%s", code, out, stderr)
	}
	if srv.Calls.Load() != live {
		t.Fatalf("the replayed story called the model %d times", srv.Calls.Load()-live)
	}
}
