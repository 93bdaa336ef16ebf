package sched

import (
	"context"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
)

// TestRecoverStep pins the on_error rules a workflow interpreter shares
// with the workers: which failures stop the run, which on_error absorbs.
func TestRecoverStep(t *testing.T) {
	t.Parallel()
	items := &flow.ForEach{}
	for _, c := range []struct {
		name    string
		step    flow.Step
		class   fault.Class
		stopped bool
		step2   Recovery // RecoverStep
		item    Recovery // RecoverItem
	}{
		{"business fails", flow.Step{}, fault.Business, false, FailStep, FailStep},
		{"budget stops even with skip", flow.Step{OnError: flow.Skip}, fault.Budget, false, StopWithRun, StopWithRun},
		{"policy stops even with fallback", flow.Step{OnError: flow.Fallback}, fault.Policy, false, StopWithRun, StopWithRun},
		{"a stopped run stops", flow.Step{OnError: flow.Skip}, fault.Transient, true, StopWithRun, StopWithRun},
		{"skip defaults", flow.Step{OnError: flow.Skip}, fault.Business, false, DefaultStep, DefaultStep},
		{"fallback falls back", flow.Step{OnError: flow.Fallback}, fault.Format, false, FallBack, FallBack},
		{"escalate parks", flow.Step{OnError: flow.Escalate}, fault.Business, false, EscalateStep, FailStep},
		{"for_each as a whole", flow.Step{OnError: flow.Skip, ForEach: items}, fault.Business, false, FailWholeItems, DefaultStep},
	} {
		if got := RecoverStep(&c.step, c.class, c.stopped); got != c.step2 {
			t.Errorf("%s: RecoverStep = %d, want %d", c.name, got, c.step2)
		}
		if got := RecoverItem(&c.step, c.class, c.stopped); got != c.item {
			t.Errorf("%s: RecoverItem = %d, want %d", c.name, got, c.item)
		}
	}
}

func TestRetriesAndWait(t *testing.T) {
	t.Parallel()
	s := &flow.Step{ID: "s", Retries: 2, Backoff: flow.Backoff{Initial: time.Second, Max: 4 * time.Second, Multiplier: 2}}
	if !retries(s, fault.Transient, 1) || retries(s, fault.Transient, 2) || retries(s, fault.Business, 0) {
		t.Fatal("transient failures are retried up to retries, business ones not")
	}
	s.OnError = flow.Retry
	if !retries(s, fault.Business, 0) {
		t.Fatal("on_error: retry retries business failures")
	}
	w := retryWait(s, "r", 2, 0)
	if w < time.Second || w > 2*time.Second || w != retryWait(s, "r", 2, 0) {
		t.Fatalf("second retry waits %s: want 1s–2s, the same every time", w)
	}
	if w := retryWait(s, "r", 1, time.Minute); w != time.Minute {
		t.Fatalf("Retry-After of 1m gives %s", w)
	}
}

func TestRunOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		failed             bool
		class              fault.Class
		parked, callerDone bool
		want               journal.RunStatus
	}{
		{false, "", false, false, journal.RunSucceeded},
		{false, "", true, false, journal.RunWaiting},
		{true, fault.Business, true, false, journal.RunFailed},
		{true, fault.Business, false, true, journal.RunCancelled},
		{true, fault.Budget, false, true, journal.RunFailed},
		{true, fault.Cancelled, false, false, journal.RunCancelled},
	} {
		if got := runOutcome(c.failed, c.class, c.parked, c.callerDone); got != c.want {
			t.Errorf("runOutcome(%v, %s, %v, %v) = %s, want %s", c.failed, c.class, c.parked, c.callerDone, got, c.want)
		}
	}
}

// TestRetryCommands pins Retry's commands: attempt n+1 at now plus the
// jittered backoff (the same on every call), Retry-After when longer, and
// no retry once the retries are spent or for a class that stops the run.
func TestRetryCommands(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, "name: r\nsteps:\n  - {id: s, tool: x, args: {}, retries: 2, backoff: {initial: 1s, max: 4s, multiplier: 2}}\n")
	m := New(f, "run")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	got := m.Retry(0, fault.Transient, 3, 1, 0, false, now)
	if !got.Again || got.Attempt != 4 || got.At.Sub(now) < time.Second || got.At.Sub(now) > 2*time.Second {
		t.Fatalf("second retry after attempt 3: %+v, want attempt 4 in 1s–2s", got)
	}
	if again := m.Retry(0, fault.Transient, 3, 1, 0, false, now); again != got {
		t.Fatalf("the same failure decides %+v, then %+v", got, again)
	}
	if got := m.Retry(0, fault.Transient, 1, 0, time.Minute, false, now); got.At != now.Add(time.Minute) {
		t.Fatalf("Retry-After 1m: %+v", got)
	}
	for _, c := range []struct {
		class   fault.Class
		retries int
		stopped bool
	}{{fault.Transient, 2, false}, {fault.Business, 0, false}, {fault.Budget, 0, false}, {fault.Policy, 0, false}, {fault.Transient, 0, true}} {
		if got := m.Retry(0, c.class, 1, c.retries, 0, c.stopped, now); got.Again {
			t.Errorf("%s after %d retries (stopped %v): retried %+v", c.class, c.retries, c.stopped, got)
		}
	}
}

// TestAdmit pins when and mandatory: a false when skips, a mandatory step
// that would be skipped fails, and a when that cannot be evaluated fails.
func TestAdmit(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: a
steps:
  - {id: a, tool: x, args: {}}
  - {id: b, tool: x, args: {}, when: "a.n > 1"}
  - {id: c, tool: x, args: {}, when: "a.n > 1", mandatory: true}
  - {id: d, tool: x, args: {}, when: "a.n.deeper > 1"}
`)
	m := New(f, "r")
	env := map[string]any{"a": map[string]any{"n": 1.0}}
	for i, want := range []Verdict{Run, Skip, Fail, Fail} {
		if got := m.Admit(context.Background(), i, env); got.Verdict != want {
			t.Errorf("step %s: %+v, want verdict %d", f.Steps[i].ID, got, want)
		}
	}
	if got := m.Admit(context.Background(), 2, env); got.Reason != `mandatory step cannot be skipped: when "a.n > 1" was false` {
		t.Errorf("mandatory: %q", got.Reason)
	}
}

// TestBudget pins the budget ledger: a charge past a limit is a budget
// failure naming the limit, and restored spending counts.
func TestBudget(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, "name: b\nmax_iterations: 2\nbudgets: {max_llm_calls: 1, max_tokens: 10, timeout: 1m}\nsteps:\n  - {id: s, tool: x, args: {}}\n")
	var b Budget
	b.Reset(f)
	b.Restore(Spent{Iterations: 1, TokensIn: 4})
	if err := b.Iteration(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{"max_iterations": b.Iteration(), "max_tokens": b.Tokens(3, 4)} {
		if fault.ClassOf(err) != fault.Budget || fault.BudgetOf(err) != name {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := b.LLMCall(); err != nil {
		t.Fatal(err)
	}
	if err := b.LLMCall(); fault.BudgetOf(err) != "max_llm_calls" {
		t.Errorf("second model call: %v", err)
	}
	if d, err := b.Timeout(); d != time.Minute || fault.BudgetOf(err) != "timeout" {
		t.Errorf("timeout %s, %v", d, err)
	}
	if s := b.Spent(); s != (Spent{Iterations: 3, LLMCalls: 2, TokensIn: 7, TokensOut: 4}) {
		t.Errorf("spent %+v", s)
	}
}
