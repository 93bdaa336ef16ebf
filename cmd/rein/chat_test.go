package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/session"
)

// chatProc runs the built rein binary with stdin and returns its exit code
// and output.
func chatProc(t *testing.T, dir, stdin string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// jsonLines decodes stdout as one agent object per line.
func jsonLines(t *testing.T, out string) []agentResultJSON {
	t.Helper()
	var res []agentResultJSON
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var r agentResultJSON
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q is not one JSON object: %v\n%s", line, err, out)
		}
		res = append(res, r)
	}
	return res
}

// TestChatSession runs rein chat as separate processes on one --session
// and --db: each message sees the session's earlier ones (testdata/chat's
// script answers a later message only when the earlier one is in the
// request), a message whose call waits for approval stops the chat with
// exit 3, and after rein runs approve the next chat sees its answer.
func TestChatSession(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chat")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "chat"))); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	chat := func(stdin string, args ...string) (int, string, string) {
		return chatProc(t, dir, stdin, append([]string{"chat", dir, "--session", "s1", "--db", db, "--output", "json"}, args...)...)
	}

	code, out, stderr := chat("remember: the password is swordfish\n")
	if code != exitOK {
		t.Fatalf("first message: exit %d: %s\n%s", code, stderr, out)
	}
	first := jsonLines(t, out)
	if len(first) != 1 || first[0].Status != "answered" || first[0].Answer != "Noted: the password is swordfish." {
		t.Fatalf("first chat %+v", first)
	}

	// a second process: the reply that calls save_note needs the first
	// message before this one; the call waits for a person.
	code, out, stderr = chat("write it down\nnever sent\n")
	if code != exitWaiting {
		t.Fatalf("second message: exit %d, want 3: %s\n%s", code, stderr, out)
	}
	second := jsonLines(t, out)
	if len(second) != 1 || second[0].Status != "waiting" || len(second[0].Pending) != 1 || second[0].Pending[0]["step_id"] != "agent/turn1/call1" {
		t.Fatalf("second chat %+v", second)
	}
	// the line after it is refused out loud, not dropped.
	if want := `rein chat: not sent: "never sent": run ` + second[0].RunID + ` of session s1 is waiting`; !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "1 message(s) not sent") {
		t.Errorf("second chat's stderr does not refuse the line after the waiting run (%q):\n%s", want, stderr)
	}
	runID := second[0].RunID
	code, out, _ = cli(t, "runs", "show", runID, "--db", db, "--output", "json")
	var shown struct {
		Run struct {
			Session string `json:"session"`
			Input   struct {
				History []session.Message `json:"history"`
			} `json:"input"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != exitOK || err != nil {
		t.Fatalf("runs show: exit %d, %v\n%s", code, err, out)
	}
	want := []session.Message{{Role: "user", Content: "remember: the password is swordfish"}, {Role: "assistant", Content: "Noted: the password is swordfish."}}
	if shown.Run.Session != "s1" || !reflect.DeepEqual(shown.Run.Input.History, want) {
		t.Fatalf("the second run's session %q and history %+v, want s1 and %+v", shown.Run.Session, shown.Run.Input.History, want)
	}

	// while the run waits, the session does not go on.
	code, out, _ = chatProc(t, dir, "", "chat", dir, "--session", "s1", "--db", db, "--message", "is it saved?")
	if code != exitWaiting || !strings.Contains(out, "run "+runID+" is waiting") || !strings.Contains(out, "rein runs approve "+runID+" agent/turn1/call1") {
		t.Fatalf("chat while waiting: exit %d\n%s", code, out)
	}

	if code, out, stderr = chatProc(t, dir, "", "runs", "approve", runID, "agent/turn1/call1", "--db", db); code != exitOK || !strings.Contains(out, "Saved the note.") {
		t.Fatalf("approve: exit %d: %s\n%s", code, stderr, out)
	}
	code, out, stderr = chat("", "--message", "is it saved?")
	if code != exitOK {
		t.Fatalf("after approval: exit %d: %s\n%s", code, stderr, out)
	}
	if third := jsonLines(t, out); len(third) != 1 || third[0].Answer != "Yes: your note is saved." {
		t.Fatalf("after approval %+v", third)
	}
	if notes, err := os.ReadFile(filepath.Join(dir, "notes.log")); err != nil || !strings.Contains(string(notes), "swordfish") {
		t.Errorf("notes.log %q, %v: want the approved note once", notes, err)
	}

	// another session starts empty: the reply to "write it down" needs
	// the first message, so it has none.
	code, out, _ = chatProc(t, dir, "", "chat", dir, "--session", "s2", "--db", db, "--message", "write it down")
	if code == exitOK || code == exitWaiting {
		t.Fatalf("session s2 saw s1's conversation: exit %d\n%s", code, out)
	}

	// rein sessions and runs list --session read the conversations back.
	code, out, stderr = cli(t, "sessions", "list", "--db", db, "--output", "json")
	var listed []struct {
		ID, Flow, Status, LastRun string
		Runs                      int
	}
	if err := json.Unmarshal([]byte(out), &listed); code != exitOK || err != nil {
		t.Fatalf("sessions list: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	if len(listed) != 2 || listed[0].ID != "s2" || listed[0].Status != "failed" || listed[1].ID != "s1" || listed[1].Runs != 3 ||
		listed[1].Flow != "notes" || listed[1].Status != "succeeded" {
		t.Errorf("sessions list %+v, want s2 (failed, newest) then s1 (3 runs of notes, succeeded)", listed)
	}
	code, out, _ = cli(t, "sessions", "show", "s1", "--db", db)
	for _, want := range []string{"user: remember: the password is swordfish", "call save_note {\"text\":\"the password is swordfish\"}",
		"-> save_note ok: {\"saved\":true}", "assistant: Saved the note.", "assistant: Yes: your note is saved."} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("sessions show s1: exit %d, no %q in\n%s", code, want, out)
		}
	}
	code, out, _ = cli(t, "runs", "list", "--session", "s1", "--db", db, "--output", "json")
	var sessionRuns []struct{ Session string }
	if err := json.Unmarshal([]byte(out), &sessionRuns); code != exitOK || err != nil || len(sessionRuns) != 3 || sessionRuns[2].Session != "s1" {
		t.Errorf("runs list --session s1: exit %d, %v, %d runs\n%s", code, err, len(sessionRuns), out)
	}
	if code, out, stderr = cli(t, "sessions", "delete", "s1", "--db", db); code != exitOK || !strings.Contains(out, "deleted session s1: 3 run(s)") {
		t.Errorf("sessions delete s1: exit %d: %s\n%s", code, stderr, out)
	}
	if code, _, stderr = cli(t, "sessions", "show", "s1", "--db", db); code != exitUsage || !strings.Contains(stderr, `no session "s1"`) {
		t.Errorf("sessions show after delete: exit %d\n%s", code, stderr)
	}
	// the other session is untouched.
	if code, out, _ = cli(t, "runs", "list", "--session", "s2", "--db", db, "--output", "json"); code != exitOK || strings.Count(out, `"session": "s2"`) != 1 {
		t.Errorf("runs list --session s2 after deleting s1: exit %d\n%s", code, out)
	}
}

func TestChatUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chat", "testdata/chat"}, "--session is required"},
		{[]string{"chat", "testdata/chat", "--session", "s", "--message", " "}, "--message is empty"},
		{[]string{"chat", "testdata/approval", "--session", "s"}, "holds no agent.yaml"},
	} {
		code, out, stderr := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q: %s%s", tc.args, code, tc.want, stderr, out)
		}
	}
}
