package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func openSQLite(t testing.TB) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// keyCounter is a tool that counts its calls and remembers their keys.
type keyCounter struct {
	spec tool.Spec
	mu   sync.Mutex
	keys []string
	fail func(n int) error
}

func newKeyCounter(name string, idempotent bool) *keyCounter {
	return &keyCounter{spec: tool.Spec{Name: name, Effect: tool.EffectWrite, Idempotent: idempotent}}
}

func (c *keyCounter) Spec() tool.Spec { return c.spec }
func (c *keyCounter) Call(ctx context.Context, args any) (any, error) {
	c.mu.Lock()
	c.keys = append(c.keys, tool.CallInfoFrom(ctx).IdempotencyKey)
	n := len(c.keys)
	c.mu.Unlock()
	if c.fail != nil {
		if err := c.fail(n); err != nil {
			return nil, err
		}
	}
	return map[string]any{"n": float64(n), "tool": c.spec.Name}, nil
}

func (c *keyCounter) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.keys...)
}

func durableEngine(fx *fixture, st store.Store, owner string) *engine.Engine {
	return engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: st,
		Owner: owner, LeaseTTL: 2 * time.Second})
}

func TestDurableRunJournalsEveryEventAndOutput(t *testing.T) {
	t.Parallel()
	a, b := newKeyCounter("a", false), newKeyCounter("b", false)
	fx := newFixture(t, a, b)
	st := openSQLite(t)
	f := fx.parse("name: j\nsteps:\n  - {id: one, tool: a, args: {}}\n  - {id: two, tool: b, args: {x: \"{one.n}\"}}\n")
	res, err := durableEngine(fx, st, "p1").Run(context.Background(), f, nil, &engine.RunOptions{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	evs, err := st.Events(context.Background(), "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	traced := fx.events.all()
	if len(evs) != len(traced) {
		t.Fatalf("journal holds %d events, the trace %d", len(evs), len(traced))
	}
	for i := range evs {
		if evs[i].Seq != traced[i].Seq || evs[i].Kind != traced[i].Kind || evs[i].StepID != traced[i].StepID {
			t.Fatalf("event %d: journal %+v, trace %+v", i, evs[i], traced[i])
		}
	}
	run, err := st.GetRun(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != trace.RunSucceeded || run.FlowHash != engine.FlowHash(f) || string(run.FlowText) != string(f.Source) {
		t.Fatalf("run row %+v", run)
	}
	got, err := durableEngine(fx, st, "p2").Status(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Outputs, res.Outputs) {
		t.Fatalf("outputs from the store %v, from the run %v", got.Outputs, res.Outputs)
	}
}

// crashState commits by hand what a process that died mid-run would have
// left: step one succeeded, step two started (attempt 1) and never settled
// (the journal and the step rows agree, as the engine writes them).
func crashState(t *testing.T, st store.Store, e *engine.Engine, fx *fixture, src string, idempotentTwo bool) {
	t.Helper()
	ctx := context.Background()
	f := fx.parse(src)
	run, _, err := st.CreateRun(ctx, &store.CreateRunParams{ID: "r", Flow: f.Name, FlowHash: engine.FlowHash(f),
		FlowText: f.Source, Input: json.RawMessage(`{}`), Status: trace.RunRunning})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tx := &store.Transition{RunID: "r", Version: run.Version,
		Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted, RunID: "r", Time: now}, {Seq: 2, Kind: trace.StepStarted, RunID: "r", StepID: "one", Time: now, Status: "running", Attempt: 1},
			{Seq: 3, Kind: trace.StepSettled, RunID: "r", StepID: "one", Time: now, Status: "succeeded", Attempt: 1}, {Seq: 4, Kind: trace.StepStarted, RunID: "r", StepID: "two", Time: now, Status: "running", Attempt: 1}},
		Steps: []*store.Step{{RunID: "r", StepID: "one", Type: "tool", Status: trace.StepSucceeded, Attempt: 1, Output: json.RawMessage(`{"n":1,"tool":"a"}`), StartedAt: now, SettledAt: now},
			{RunID: "r", StepID: "two", Type: "tool", Status: trace.StepRunning, Attempt: 1, Idempotent: idempotentTwo, StartedAt: now}}}
	if err := st.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
}

const crashFlow = "name: c\nsteps:\n  - {id: one, tool: a, args: {}}\n  - {id: two, tool: b, args: {x: \"{one.n}\"}}\n  - {id: three, tool: a, args: {}}\n"

func TestResumeRerunsAnIdempotentStepWithTheSameKey(t *testing.T) {
	t.Parallel()
	a, b := newKeyCounter("a", false), newKeyCounter("b", true)
	fx := newFixture(t, a, b)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	crashState(t, st, e, fx, crashFlow, true)
	res, err := e.Resume(context.Background(), fx.parse(crashFlow), "r")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if got := b.calls(); !reflect.DeepEqual(got, []string{"r/two/1"}) {
		t.Fatalf("idempotent step calls %v, want one with the in-flight attempt's key r/two/1", got)
	}
	if got := a.calls(); !reflect.DeepEqual(got, []string{"r/three/1"}) {
		t.Fatalf("step one ran again or three did not run: %v", got)
	}
	if res.Outputs["one"].(map[string]any)["n"] != 1.0 {
		t.Fatalf("restored output %v", res.Outputs["one"])
	}
}

func TestResumeParksANonIdempotentStepAsUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, decision := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected, store.ApprovalSettled} {
		t.Run(string(decision), func(t *testing.T) {
			t.Parallel()
			a, b := newKeyCounter("a", false), newKeyCounter("b", false)
			fx := newFixture(t, a, b)
			st := openSQLite(t)
			e := durableEngine(fx, st, "p1")
			crashState(t, st, e, fx, crashFlow, false)
			f := fx.parse(crashFlow)
			res, err := e.Resume(ctx, f, "r")
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunWaiting)
			if res.Steps["two"].Status != trace.StepUnknown || len(res.Pending) != 1 || res.Pending[0].Kind != store.KindUnknown {
				t.Fatalf("step two %v, pending %+v", res.Steps["two"], res.Pending)
			}
			if n := len(b.calls()); n != 0 {
				t.Fatalf("a non-idempotent step was repeated on its own (%d calls)", n)
			}
			// resuming again without a decision changes nothing.
			if res, err = e.Resume(ctx, f, "r"); err != nil || res.Status != trace.RunWaiting || len(b.calls()) != 0 {
				t.Fatalf("second resume: %v %v, %d calls", res.Status, err, len(b.calls()))
			}
			p := &store.DecideApprovalParams{RunID: "r", StepID: "two", Status: decision, Comment: "checked", DecidedBy: "ops"}
			if decision == store.ApprovalSettled {
				p.Output = json.RawMessage(`{"n":7,"tool":"b"}`)
			}
			if _, err := st.DecideApproval(ctx, p); err != nil {
				t.Fatal(err)
			}
			res, err = e.Resume(ctx, f, "r")
			if err != nil {
				t.Fatal(err)
			}
			switch decision {
			case store.ApprovalApproved:
				wantStatus(t, res, trace.RunSucceeded)
				if got := b.calls(); !reflect.DeepEqual(got, []string{"r/two/2"}) {
					t.Fatalf("approved unknown step calls %v, want one new attempt r/two/2", got)
				}
			case store.ApprovalRejected:
				wantStatus(t, res, trace.RunFailed)
				if res.Error.Step != "two" || !strings.Contains(res.Error.Message, "rejected by ops: checked") {
					t.Fatalf("error %+v", res.Error)
				}
			case store.ApprovalSettled:
				wantStatus(t, res, trace.RunSucceeded)
				if len(b.calls()) != 0 || res.Outputs["two"].(map[string]any)["n"] != 7.0 {
					t.Fatalf("settled: calls %v, output %v", b.calls(), res.Outputs["two"])
				}
			}
		})
	}
}

func TestApprovalWaitsBeforeTheSideEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	send, log := newKeyCounter("send", false), newKeyCounter("log", false)
	fx := newFixture(t, send, log)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	src := `name: appr
steps:
  - {id: draft, tool: log, args: {}}
  - {id: ok_to_send, type: approval, requires: [draft], message: "send draft {draft.n}?"}
  - {id: send_it, tool: send, approval: required, requires: [draft], args: {to: "x@example.com"}}
  - {id: after, tool: log, requires: [ok_to_send, send_it], args: {}}
`
	f := fx.parse(src)
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 2 {
		t.Fatalf("pending %+v, want two approvals (parallel branches)", res.Pending)
	}
	if len(send.calls()) != 0 {
		t.Fatal("the tool ran before its approval")
	}
	for _, a := range res.Pending {
		if a.StepID == "ok_to_send" && a.Message != "send draft 1?" {
			t.Fatalf("message %q", a.Message)
		}
		if a.StepID == "send_it" && (a.Tool != "send" || string(a.Args) != `{"to":"x@example.com"}`) {
			t.Fatalf("approval does not record what would run: %+v", a)
		}
	}
	// approve one branch: the run continues that branch and waits again.
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "send_it", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Resume(ctx, f, "r"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(send.calls()) != 1 || len(res.Pending) != 1 || res.Pending[0].StepID != "ok_to_send" {
		t.Fatalf("send calls %d, pending %+v", len(send.calls()), res.Pending)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "ok_to_send", Status: store.ApprovalApproved, Comment: "fine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "ok_to_send", Status: store.ApprovalRejected}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("deciding twice: %v, want ErrConflict", err)
	}
	if res, err = e.Resume(ctx, f, "r"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if len(send.calls()) != 1 || len(log.calls()) != 2 {
		t.Fatalf("send %d, log %d calls", len(send.calls()), len(log.calls()))
	}
	if out := res.Outputs["ok_to_send"].(map[string]any); out["approved"] != true || out["comment"] != "fine" {
		t.Fatalf("approval output %v", out)
	}
}

func TestApprovalNeedsADurableStore(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, newKeyCounter("send", false))
	f := fx.parse("name: a\nsteps:\n  - {id: s, tool: send, approval: required, args: {}}\n")
	_, err := fx.engine().Run(context.Background(), f, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "durable store") {
		t.Fatalf("err %v", err)
	}
}

func TestIdempotentStartReturnsTheExistingRun(t *testing.T) {
	t.Parallel()
	a := newKeyCounter("a", false)
	fx := newFixture(t, a)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	f := fx.parse("name: i\nidempotency: input_hash\nsteps:\n  - {id: one, tool: a, args: {}}\n")
	first, err := e.Run(context.Background(), f, map[string]any{"k": 1.0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.Run(context.Background(), f, map[string]any{"k": 1.0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.RunID != second.RunID || !second.Existing || first.Existing || second.Status != trace.RunSucceeded || len(a.calls()) != 1 {
		t.Fatalf("first %s, second %s (%s), %d calls", first.RunID, second.RunID, second.Status, len(a.calls()))
	}
	other, err := e.Run(context.Background(), f, map[string]any{"k": 2.0}, nil)
	if err != nil || other.RunID == first.RunID {
		t.Fatalf("another input must start another run: %v %v", other.RunID, err)
	}
}

func TestTwoEnginesRacingOnOneRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newKeyCounter("a", false)
	release := make(chan struct{})
	var started atomic.Int32
	b := newKeyCounter("b", true)
	b.fail = func(int) error {
		started.Add(1)
		<-release
		return nil
	}
	fx := newFixture(t, a, b)
	st := openSQLite(t)
	crashState(t, st, nil, fx, crashFlow, true)
	f := fx.parse(crashFlow)
	e1, e2 := durableEngine(fx, st, "p1"), durableEngine(fx, st, "p2")
	type res struct {
		r   *engine.Result
		err error
	}
	out := make(chan res, 2)
	for _, e := range []*engine.Engine{e1, e2} {
		go func() {
			r, err := e.Resume(ctx, f, "r")
			out <- res{r, err}
		}()
	}
	// one of them takes the lease and runs step two; the other is refused.
	first := <-out
	if first.err == nil || fault.ClassOf(first.err) != fault.Conflict {
		t.Fatalf("the loser got %v, want a conflict", first.err)
	}
	close(release)
	second := <-out
	if second.err != nil {
		t.Fatal(second.err)
	}
	wantStatus(t, second.r, trace.RunSucceeded)
	if started.Load() != 1 {
		t.Fatalf("step two ran %d times", started.Load())
	}
}

func TestStaleVersionStopsTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newKeyCounter("a", false)
	st := openSQLite(t)
	b := newKeyCounter("b", true)
	// while step two runs, another writer moves the run on (a person
	// cancels it from another process after stealing an expired lease).
	b.fail = func(int) error {
		run, err := st.GetRun(ctx, "r")
		if err != nil {
			return err
		}
		return st.Commit(ctx, &store.Transition{RunID: "r", Version: run.Version, Events: []*trace.Event{{Seq: run.LastSeq + 1, Kind: trace.RunSettled, RunID: "r"}},
			Run: &store.RunUpdate{Status: trace.RunCancelled}})
	}
	fx := newFixture(t, a, b)
	crashState(t, st, nil, fx, crashFlow, true)
	res, err := durableEngine(fx, st, "p1").Resume(ctx, fx.parse(crashFlow), "r")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunFailed || res.Error == nil || res.Error.Class != fault.Conflict {
		t.Fatalf("status %s, error %+v: the engine must stop when it loses the version race", res.Status, res.Error)
	}
	if n := len(a.calls()); n != 0 {
		t.Fatalf("step three ran after the conflict (%d calls)", n)
	}
}

func TestResumeRefusesAnotherFlow(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, newKeyCounter("a", false), newKeyCounter("b", true))
	st := openSQLite(t)
	crashState(t, st, nil, fx, crashFlow, true)
	_, err := durableEngine(fx, st, "p1").Resume(context.Background(), fx.parse(crashFlow+"  - {id: four, tool: a, args: {}}\n"), "r")
	if err == nil || !strings.Contains(err.Error(), "pinned flow") {
		t.Fatalf("err %v", err)
	}
}

func TestResumeDoesNotAskAnApprovedStepAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	send := newKeyCounter("send", true)
	fx := newFixture(t, send)
	st := openSQLite(t)
	e := durableEngine(fx, st, "p1")
	f := fx.parse("name: a\nsteps:\n  - {id: s, tool: send, approval: required, args: {}}\n")
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("%v %v", err, res.Status)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "s", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	// the process that took the decision up died while the tool ran.
	run, err := st.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, &store.Transition{RunID: "r", Version: run.Version,
		Events: []*trace.Event{{Seq: run.LastSeq + 1, Kind: trace.StepStarted, RunID: "r", StepID: "s"}},
		Steps:  []*store.Step{{RunID: "r", StepID: "s", Type: "tool", Status: trace.StepRunning, Attempt: 1, Idempotent: true, StartedAt: time.Now()}},
		Run:    &store.RunUpdate{Status: trace.RunRunning}}); err != nil {
		t.Fatal(err)
	}
	res, err = e.Resume(ctx, f, "r")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if got := send.calls(); !reflect.DeepEqual(got, []string{"r/s/1"}) {
		t.Fatalf("calls %v", got)
	}
}
