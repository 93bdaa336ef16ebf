package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/chattest"
)

// TestAgentStreamsTheAnswer: rein agent on an OpenAI-compatible server
// asks it to stream, and prints the conversation on stdout as it happens:
// each tool call as one line once it settled, then the answer as it was
// written, then the run's report.
func TestAgentStreamsTheAnswer(t *testing.T) {
	// not parallel: it sets the environment rein reads.
	srv := chattest.Turns(t, testOpenAIKey, chattest.SupportAgent[0], `{"role":"assistant","content":"Order 1042 was charged twice: ch_1 and ch_2."}`)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", testOpenAIKey)
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "agent", "../../examples/support-agent", supportTask, "--model", "openai/gpt-4o-mini", "--db", db)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if srv.Streamed.Load() != 2 {
		t.Fatalf("%d of %d model calls streamed, want 2", srv.Streamed.Load(), srv.Calls.Load())
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 5 {
		t.Fatalf("stdout:\n%s", out)
	}
	calls := slices.Sorted(slices.Values(lines[:2])) // the turn's two calls run in parallel
	if !strings.HasPrefix(calls[0], `  -> list_charges {"order":"1042"} -> ok: `) || !strings.HasPrefix(calls[1], `  -> lookup_order {"order":"1042"} -> ok: `) ||
		lines[2] != "Order 1042 was charged twice: ch_1 and ch_2." || !strings.HasPrefix(lines[3], "run ") {
		t.Fatalf("stdout:\n%s", out)
	}
	if strings.Count(out, "charged twice: ch_1") != 1 {
		t.Fatalf("the answer printed more than once:\n%s", out)
	}
}

// TestChatPrintsEachAnswerOnce: rein chat in text prints each answer once,
// as the scripted model delivers it (one delta: the streaming path,
// offline), and a tool call as one line; no run report per message.
func TestChatPrintsEachAnswerOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chat")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "chat"))); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := chatProc(t, dir, "remember: the password is swordfish\n", "chat", dir, "--session", "s1", "--db", db)
	if code != exitOK || out != "Noted: the password is swordfish.\n" {
		t.Fatalf("exit %d, stdout %q, want the answer alone: %s", code, out, stderr)
	}
	code, out, _ = chatProc(t, dir, "write it down\n", "chat", dir, "--session", "s1", "--db", db)
	if code != exitWaiting || !strings.HasPrefix(out, `  -> save_note {"text":"the password is swordfish"} -> waiting (`) || strings.Contains(out, "attempts=") {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}
}
