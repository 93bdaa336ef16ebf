// Package sessiontest is the conformance suite of package session: a
// Service over every store backend (store/sqlite, store/postgres, …)
// passes Run, and a new behaviour of sessions goes into this suite first.
//
//	func TestConformance(t *testing.T) {
//		sessiontest.Run(t, sessiontest.Harness{
//			New: func(t *testing.T) store.Store { … },
//		})
//	}
//
// The suite talks to an agent folder of its own (testdata/notes) answered
// by the scripted model from its script.yaml, with one Go tool, save_note,
// that waits for a person's approval: nothing leaves the machine. It pins
// down:
//
//   - the history budget: the latest exchanges, oldest first, within
//     Config.MaxMessages messages and Config.MaxBytes bytes of content; an
//     exchange that does not fit is left out whole, and so is every older
//     one; a failed run adds nothing; the run's recorded input holds the
//     history History returned;
//   - sessions kept apart: a session's runs see only its own exchanges, and
//     a message without a session sees none and joins none;
//   - a session whose newest run waits for a person refuses the next
//     message with a conflict *fault.Error (fault.HintSessionWaiting, the
//     run, its waiting steps) wrapping a *session.WaitingError, and starts
//     no run;
//   - once a person approves (Client.Decide with Resume) the run goes on
//     with the approved call, and the next message sees its answer;
//   - the history holds full items: a turn's tool calls and the
//     observations the model was shown, so a follow-up's request holds an
//     earlier run's tool result (the script answers "which charge was it?"
//     only then), with call ids unique across runs.
package sessiontest

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

//go:embed testdata/notes
var notesAgent embed.FS

// Harness gives the suite its stores.
type Harness struct {
	// New returns a new, empty store for one subtest and closes it when
	// the subtest ends (t.Cleanup). Subtests run in parallel.
	New func(t *testing.T) store.Store
}

// Run runs the conformance suite against the stores h makes.
func Run(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *rig)
	}{
		{"HistoryMessages", testHistoryMessages},
		{"HistoryBytes", testHistoryBytes},
		{"SessionsApart", testSessionsApart},
		{"WaitingThenApproved", testWaitingThenApproved},
		{"ToolResultRemembered", testToolResultRemembered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newRig(t, h))
		})
	}
}

// rig is one subtest's client, over a store of its own, and the notes
// agent loaded from a copy of testdata/notes.
type rig struct {
	ctx context.Context
	st  store.Store
	c   *rein.Client
	p   *project.Project

	mu    sync.Mutex
	notes []string // what save_note was called with
}

func newRig(t *testing.T, h Harness) *rig {
	t.Helper()
	r := &rig{ctx: context.Background(), st: h.New(t)}
	dir := t.TempDir()
	sub, err := fs.Sub(notesAgent, "testdata/notes")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, sub); err != nil {
		t.Fatal(err)
	}
	save := tool.Func(tool.Spec{Name: "save_note", Description: "Saves a note.", Effect: tool.EffectWrite,
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}`)},
		func(_ context.Context, args any) (any, error) {
			text, _ := args.(map[string]any)["text"].(string)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.notes = append(r.notes, text)
			return map[string]any{"saved": true}, nil
		})
	charges := tool.Func(tool.Spec{Name: "find_charges", Description: "Finds an order's duplicate charge.", Effect: tool.EffectRead,
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}`)},
		func(_ context.Context, _ any) (any, error) { return map[string]any{"charge": "ch_981"}, nil })
	r.c, err = rein.Open(r.ctx, rein.Config{Store: r.st, Load: &project.LoadOptions{Tools: []tool.Tool{save, charges}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.p, err = r.c.Load(dir); err != nil {
		t.Fatalf("load the notes agent: %v", err)
	}
	t.Cleanup(func() {
		if err := r.p.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// saved returns what save_note was called with.
func (r *rig) saved() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notes...)
}

// service returns a Service of the rig's agent with cfg.
func (r *rig) service(t *testing.T, cfg *session.Config) *session.Service {
	t.Helper()
	svc, err := session.New(r.c, r.p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// ask sends message and requires a run with status want.
func (r *rig) ask(t *testing.T, svc *session.Service, sessionID, message string, want trace.RunStatus) *session.Reply {
	t.Helper()
	rep, err := svc.Ask(r.ctx, sessionID, message)
	if err != nil {
		t.Fatalf("Ask(%q, %q): %v", sessionID, message, err)
	}
	if rep.Result.Status != want {
		t.Fatalf("Ask(%q, %q): run %s is %s (%v), want %s", sessionID, message, rep.Result.RunID, rep.Result.Status, rep.Result.Error, want)
	}
	return rep
}

// input is the input run id was recorded with, and its session.
func (r *rig) input(t *testing.T, id string) (session.Input, string) {
	t.Helper()
	run, err := r.st.GetRun(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var in session.Input
	if err := json.Unmarshal(run.Input, &in); err != nil {
		t.Fatalf("run %s input %s: %v", id, run.Input, err)
	}
	return in, run.Session
}

// exchanges lists user message, answer, user message, … as a history.
func exchanges(texts ...string) []session.Message {
	out := []session.Message{}
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out = append(out, session.Message{Role: role, Content: text})
	}
	return out
}

// wantHistory requires History(sessionID) of svc to be want.
func (r *rig) wantHistory(t *testing.T, svc *session.Service, what, sessionID string, want []session.Message) {
	t.Helper()
	got, err := svc.History(r.ctx, sessionID)
	if err != nil {
		t.Fatalf("%s: History(%q): %v", what, sessionID, err)
	}
	if got == nil {
		got = []session.Message{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: History(%q) =\n  %+v\nwant\n  %+v", what, sessionID, got, want)
	}
}

func testHistoryMessages(t *testing.T, r *rig) {
	svc := r.service(t, nil)
	for _, m := range []string{"note alpha", "note bravo", "note charlie", "note delta"} {
		r.ask(t, svc, "s", m, trace.RunSucceeded)
	}
	// a failed run (the script has no reply to it) adds nothing and does
	// not hold the session up.
	r.ask(t, svc, "s", "note foxtrot", trace.RunFailed)

	all := exchanges("note alpha", "ok alpha", "note bravo", "ok bravo", "note charlie", "ok charlie", "note delta", "ok delta")
	for _, tc := range []struct {
		max  int
		want []session.Message
	}{
		{0, all}, // the default, 20
		{8, all},
		{6, all[2:]},
		{5, all[4:]}, // an exchange is two messages: never half of one
		{4, all[4:]},
		{3, all[6:]},
		{1, exchanges()},
	} {
		r.wantHistory(t, r.service(t, &session.Config{MaxMessages: tc.max}), "MaxMessages "+strconv.Itoa(tc.max), "s", tc.want)
	}

	// the run's recorded input holds the history, within the budget.
	rep := r.ask(t, r.service(t, &session.Config{MaxMessages: 4}), "s", "note echo", trace.RunSucceeded)
	if rep.Answer != "ok echo" {
		t.Errorf("answer %v, want ok echo", rep.Answer)
	}
	in, sess := r.input(t, rep.Result.RunID)
	if sess != "s" || in.Task != "note echo" || !reflect.DeepEqual(in.History, all[4:]) {
		t.Errorf("run recorded with session %q, input %+v; want session s, task note echo, history %+v", sess, in, all[4:])
	}
}

func testHistoryBytes(t *testing.T, r *rig) {
	svc := r.service(t, nil)
	var answers []string
	for _, m := range []string{"tiny echo", "big echo", "third echo", "fourth echo"} {
		rep := r.ask(t, svc, "s", m, trace.RunSucceeded)
		text, ok := rep.Answer.(string)
		if !ok || text == "" {
			t.Fatalf("the answer to %q is %#v, want text", m, rep.Answer)
		}
		answers = append(answers, text)
	}
	all := exchanges("tiny echo", answers[0], "big echo", answers[1], "third echo", answers[2], "fourth echo", answers[3])
	size := func(m []session.Message) int {
		n := 0
		for _, e := range m {
			n += len(e.Content)
		}
		return n
	}
	latest2 := size(all[4:]) // third and fourth
	if big := size(all[2:4]); big <= 200 || size(all[:2])+latest2 > 200 {
		t.Fatalf("the script's exchanges are %d, %d and %d bytes: the cases below need the second over 200, the others under", size(all[:2]), big, latest2)
	}
	for _, tc := range []struct {
		name string
		max  int
		want []session.Message
	}{
		{"the default, 16 KiB", 0, all},
		{"all of it, exactly", size(all), all},
		// the big exchange does not fit: left out whole, and the tiny one
		// before it too, though it would fit.
		{"the latest two and room for the tiny one", latest2 + size(all[:2]), all[4:]},
		{"the latest two, exactly", latest2, all[4:]},
		{"one byte short of the latest two", latest2 - 1, all[6:]},
		{"one byte short of the latest", size(all[6:]) - 1, exchanges()},
	} {
		r.wantHistory(t, r.service(t, &session.Config{MaxBytes: tc.max}), tc.name, "s", tc.want)
	}
	rep := r.ask(t, r.service(t, &session.Config{MaxBytes: latest2}), "s", "fifth echo", trace.RunSucceeded)
	if in, _ := r.input(t, rep.Result.RunID); !reflect.DeepEqual(in.History, all[4:]) {
		t.Errorf("run recorded with history %+v, want %+v", in.History, all[4:])
	}
}

func testSessionsApart(t *testing.T, r *rig) {
	svc := r.service(t, nil)
	r.ask(t, svc, "s1", "remember: the code is 4711", trace.RunSucceeded)
	r.ask(t, svc, "s2", "hello from s2", trace.RunSucceeded)
	// the script answers "write it down" only after the code: s2 never
	// saw it, so the model has no reply and the run fails.
	rep := r.ask(t, svc, "s2", "write it down", trace.RunFailed)
	s2 := exchanges("hello from s2", "Hello.")
	if in, sess := r.input(t, rep.Result.RunID); sess != "s2" || !reflect.DeepEqual(in.History, s2) {
		t.Errorf("s2's run recorded with session %q, history %+v; want s2, %+v", sess, in.History, s2)
	}
	r.wantHistory(t, svc, "s1", "s1", exchanges("remember: the code is 4711", "Noted: the code is 4711."))
	r.wantHistory(t, svc, "s2", "s2", s2)

	// no session: no history, and the run joins none.
	rep = r.ask(t, svc, "", "greetings alone", trace.RunSucceeded)
	if in, sess := r.input(t, rep.Result.RunID); sess != "" || in.History != nil || in.Task != "greetings alone" {
		t.Errorf("a run without a session recorded with session %q, input %+v", sess, in)
	}
	r.wantHistory(t, svc, "no session", "", exchanges())
	r.wantHistory(t, svc, "s2 after a run without a session", "s2", s2)
}

func testWaitingThenApproved(t *testing.T, r *rig) {
	svc := r.service(t, nil)
	r.ask(t, svc, "s", "remember: the code is 4711", trace.RunSucceeded)
	waiting := r.ask(t, svc, "s", "write it down", trace.RunWaiting)
	runID := waiting.Result.RunID
	const step = project.AgentStep + "/turn1/call1"
	if p := waiting.Result.Pending; len(p) != 1 || p[0].StepID != step || p[0].Tool != "save_note" {
		t.Fatalf("pending %+v, want one approval of %s for save_note", p, step)
	}
	if tr := waiting.Turns; len(tr) != 1 || len(tr[0].Calls) != 1 || tr[0].Calls[0].Tool != "save_note" || tr[0].Calls[0].Status != session.StatusWaiting {
		t.Fatalf("the waiting run's transcript %+v, want turn 1 with save_note waiting", tr)
	}
	if n := r.saved(); len(n) != 0 {
		t.Fatalf("save_note ran before its approval: %q", n)
	}

	// the session takes no message while the run waits, and starts no run.
	_, err := svc.Ask(r.ctx, "s", "is it saved?")
	var we *session.WaitingError
	if !errors.As(err, &we) {
		t.Fatalf("Ask while run %s waits: %v, want a *session.WaitingError", runID, err)
	}
	if we.Session != "s" || we.Run.ID != runID || len(we.Pending) != 1 || we.Pending[0].StepID != step {
		t.Errorf("WaitingError session %q, run %s, pending %+v; want s, %s and %s", we.Session, we.Run.ID, we.Pending, runID, step)
	}
	want := "session s: run " + runID + " is waiting; the conversation goes on once it finishes"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	h := fault.HintOf(err)
	if fault.ClassOf(err) != fault.Conflict || !fault.Retryable(err) || h.Code != fault.HintSessionWaiting || h.RunID != runID ||
		h.Status != string(trace.RunWaiting) || !reflect.DeepEqual(h.Waiting, []string{step}) {
		t.Errorf("class %s (retryable %v), hint %+v; want a retryable conflict, %s of run %s waiting on %s", fault.ClassOf(err), fault.Retryable(err), h, fault.HintSessionWaiting, runID, step)
	}
	if _, err := svc.Next(r.ctx, "s", "is it saved?"); !errors.As(err, &we) {
		t.Errorf("Next while the run waits: %v, want a *session.WaitingError", err)
	}
	if list, err := r.st.ListRuns(r.ctx, &store.ListRunsParams{Session: "s"}); err != nil || len(list) != 2 {
		t.Errorf("the session has %d runs (%v) after a refused message, want 2", len(list), err)
	}

	// a person approves; the run goes on, here as in any other process.
	out, err := r.c.Decide(r.ctx, runID, step, rein.Decision{Status: store.ApprovalApproved, By: "sessiontest"}, &rein.DecideOptions{Resume: true})
	if err != nil {
		t.Fatalf("approve %s of run %s: %v", step, runID, err)
	}
	if out.Result == nil || out.Result.Status != trace.RunSucceeded {
		t.Fatalf("the approved run: %+v", out.Result)
	}
	if n := r.saved(); !reflect.DeepEqual(n, []string{"the code is 4711"}) {
		t.Errorf("save_note calls %q, want the approved note once", n)
	}
	turns, err := svc.Transcript(r.ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].Calls[0].Status != session.StatusOK || !turns[1].Final || turns[1].Text != "Saved the note." {
		t.Errorf("the approved run's transcript %+v, want save_note ok, then the answer Saved the note.", turns)
	}
	if u := session.UsageOf(turns); u.Turns != 2 || u.ToolCalls != 1 || u.LLMCalls != 2 {
		t.Errorf("usage %+v, want 2 turns, 1 tool call, 2 model calls", u)
	}

	// the next message sees the approved run's answer: the script answers
	// "is it saved?" only after "write it down".
	rep := r.ask(t, svc, "s", "is it saved?", trace.RunSucceeded)
	if rep.Answer != "Yes: your note is saved." {
		t.Errorf("answer %v, want Yes: your note is saved.", rep.Answer)
	}
	// the approved run's exchange holds its call and what it returned.
	history := append(exchanges("remember: the code is 4711", "Noted: the code is 4711.", "write it down"),
		session.Message{Role: "assistant", ToolCalls: []session.ToolCall{{ID: turns[0].Calls[0].ID, Tool: "save_note", Args: `{"text":"the code is 4711"}`}}},
		session.Message{Role: "tool", ToolCallID: turns[0].Calls[0].ID, Tool: "save_note", Content: turns[0].Calls[0].Observation},
		session.Message{Role: "assistant", Content: "Saved the note."})
	if in, _ := r.input(t, rep.Result.RunID); !reflect.DeepEqual(in.History, history) {
		t.Errorf("the next run's history %+v, want %+v", in.History, history)
	}
	if len(rep.Turns) != 1 || !rep.Turns[0].Final || rep.Usage.Turns != 1 || rep.Usage.ToolCalls != 0 {
		t.Errorf("the next run's transcript %+v, usage %+v; want one final turn", rep.Turns, rep.Usage)
	}
	if n := r.saved(); len(n) != 1 {
		t.Errorf("save_note calls %q after the next message, want the one approved", n)
	}
}

func testToolResultRemembered(t *testing.T, r *rig) {
	svc := r.service(t, nil)
	first := r.ask(t, svc, "s", "what did I pay twice?", trace.RunSucceeded)
	if first.Answer != "You were charged twice for order 1042." {
		t.Fatalf("first answer %v", first.Answer)
	}
	// the follow-up's reply is scripted only for a request that holds the
	// first run's observation: today's answer-only history fails the run.
	rep := r.ask(t, svc, "s", "which charge was it?", trace.RunSucceeded)
	if rep.Answer != "It was ch_981, on order 1042." {
		t.Errorf("follow-up answer %v, want It was ch_981, on order 1042.", rep.Answer)
	}
	obs := first.Turns[0].Calls[0].Observation
	want := []session.Message{
		{Role: "user", Content: "what did I pay twice?"},
		{Role: "assistant", ToolCalls: []session.ToolCall{{ID: "c1", Tool: "find_charges", Args: `{"order":"1042"}`}}},
		{Role: "tool", ToolCallID: "c1", Tool: "find_charges", Content: obs},
		{Role: "assistant", Content: "You were charged twice for order 1042."},
	}
	if in, _ := r.input(t, rep.Result.RunID); !reflect.DeepEqual(in.History, want) {
		t.Errorf("the follow-up's recorded history\n  %+v\nwant\n  %+v", in.History, want)
	}
	// a third message: both earlier exchanges, the second's call id kept,
	// and the budget counts every item.
	full := append(append([]session.Message(nil), want...), session.Message{Role: "user", Content: "which charge was it?"},
		session.Message{Role: "assistant", Content: "It was ch_981, on order 1042."})
	r.wantHistory(t, svc, "both exchanges", "s", full)
	r.wantHistory(t, r.service(t, &session.Config{MaxMessages: 5}), "five items: the latest exchange only", "s", full[4:])
	r.wantHistory(t, r.service(t, &session.Config{MaxMessages: 6}), "six items: both", "s", full)
}
