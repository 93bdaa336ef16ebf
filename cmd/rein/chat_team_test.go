package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/chattest"
)

// teamFolders writes a team under root: triage calls billing as a tool
// and may hand the conversation to refunds, which may hand it back; each
// agent's model is openai/gpt-4o-mini (OPENAI_BASE_URL).
func teamFolders(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"triage/agent.yaml":  "name: triage\nmodel: openai/gpt-4o-mini\ninstructions: You are triage.\ntools:\n  billing: {agent: ../billing}\nhandoffs: [../refunds]\nexecute_plan: false\n",
		"billing/agent.yaml": "name: billing\nmodel: openai/gpt-4o-mini\ninstructions: You are billing.\ntools: {}\nexecute_plan: false\n",
		"refunds/agent.yaml": "name: refunds\nmodel: openai/gpt-4o-mini\ninstructions: You are refunds.\ntools: {}\nhandoffs: [../triage]\nexecute_plan: false\n",
	}
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// teamServer answers the team of teamFolders on the Chat Completions wire
// format, with native tool calls, by the agent asking (its system
// message), and records which agent asked, in order.
func teamServer(t *testing.T) (*chattest.Server, func() []string) {
	var mu sync.Mutex
	var asked []string
	srv := chattest.Serve(t, testOpenAIKey, func(req *chattest.Request) string {
		last := req.Messages[len(req.Messages)-1]
		user := "" // the user's latest message (not a handover note)
		for _, m := range req.Messages {
			if m.Role == "user" && !strings.HasPrefix(m.Content, "The conversation above was handed over") {
				user = m.Content
			}
		}
		mu.Lock()
		defer mu.Unlock()
		switch req.System() {
		case "You are billing.":
			asked = append(asked, "billing")
			return chattest.Text("ch_2 duplicates ch_1.")
		case "You are refunds.":
			asked = append(asked, "refunds")
			if strings.Contains(user, "parcel") {
				return chattest.Call("r1", "transfer_to_triage", `{"reason":"a parcel question"}`)
			}
			return chattest.Text("Refunded ch_2.")
		case "You are triage.":
			asked = append(asked, "triage")
			switch {
			case last.Role == "tool" && last.ToolCallID == "t1" && strings.Contains(last.Content, "ch_2 duplicates ch_1"):
				return chattest.Call("t2", "transfer_to_refunds", `{"reason":"a refund"}`)
			case last.Role == "tool" && strings.Contains(last.Content, `"handed_back_by":"refunds"`) && strings.Contains(last.Content, "a parcel question"):
				return chattest.Text("Your parcel ships on Friday.")
			case last.Role == "user" && strings.Contains(last.Content, "double charge"):
				return chattest.Call("t1", "billing", `{"task":"Is order 1042 charged twice?"}`)
			case last.Role == "user" && last.Content == "bye":
				return chattest.Text("Goodbye from triage.")
			}
		}
		return ""
	})
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// TestChatTeamRemembersWhoAnswered: rein chat with a team on an
// OpenAI-compatible server that streams. The first message goes to
// triage, which asks billing (an agent called as a tool: its text is not
// printed) and hands the conversation to refunds, whose answer is
// printed once, as written. The next message goes straight to refunds,
// the agent that answered last (no model call of triage's first), which
// hands it back to triage; triage answers, and takes the third message
// itself. rein sessions show says who answered each message.
func TestChatTeamRemembersWhoAnswered(t *testing.T) {
	// not parallel: it sets the environment rein reads.
	srv, asked := teamServer(t)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", testOpenAIKey)
	root := teamFolders(t)
	db := filepath.Join(t.TempDir(), "rein.db")
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"chat", filepath.Join(root, "triage"), "--session", "s1", "--db", db},
		strings.NewReader("refund my double charge on order 1042\nwhere is my parcel?\nbye\n"), &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	if srv.Streamed.Load() != srv.Calls.Load() {
		t.Errorf("%d of %d model calls streamed", srv.Streamed.Load(), srv.Calls.Load())
	}
	got := out.String()
	want := `  -> billing {"task":"Is order 1042 charged twice?"} -> ok: "ch_2 duplicates ch_1."
Refunded ch_2.
  -> transfer_to_refunds {"reason":"a refund"} -> refunds answered
  -> transfer_to_refunds {"reason":"the user's last message was answered by refunds: the conversation continues with it"} -> refunds handed the conversation back to triage
Your parcel ships on Friday.
Goodbye from triage.
`
	if got != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", got, want)
	}
	if a := strings.Join(asked(), ","); a != "triage,billing,triage,refunds,refunds,triage,triage" {
		t.Errorf("the agents asked, in order: %s", a)
	}
	code, show, stderr := cli(t, "sessions", "show", "s1", "--db", db)
	if code != exitOK {
		t.Fatalf("sessions show: exit %d: %s", code, stderr)
	}
	if strings.Count(show, "answered by: refunds") != 1 || strings.Count(show, "answered by: triage") != 2 ||
		strings.Index(show, "answered by: refunds") > strings.Index(show, "answered by: triage") {
		t.Errorf("sessions show:\n%s", show)
	}
	// --output json names the agent that answered
	code, out2, stderr := cli(t, "chat", filepath.Join(root, "triage"), "--session", "s2", "--db", db, "--output", "json", "--message", "refund my double charge on order 1042")
	var res struct {
		Answer     string   `json:"answer"`
		AnsweredBy []string `json:"answered_by"`
	}
	if code != exitOK {
		t.Fatalf("chat --output json: exit %d: %s", code, stderr)
	}
	decodeOne(t, out2, &res)
	if res.Answer != "Refunded ch_2." || strings.Join(res.AnsweredBy, ",") != "refunds" {
		t.Errorf("chat --output json: %s", out2)
	}
}
