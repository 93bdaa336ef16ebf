package temporal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
	"github.com/reinhq/rein/tool"
)

// hangTool is a tool that returns only when its context ends (bounded by
// a minute, after which it reports that it was not cancelled); cancelled
// says whether its context ended.
func hangTool(name string, cancelled chan<- bool) tool.Tool {
	return tool.Func(tool.Spec{Name: name, Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		select {
		case <-ctx.Done():
			cancelled <- true
			return nil, ctx.Err()
		case <-time.After(time.Minute): // a bound, not a timing: the test fails below
			cancelled <- false
			return nil, errors.New(name + ": the attempt was not cancelled")
		}
	})
}

// timedOut reports whether a run ended as one whose budgets.timeout
// (limit) passed while step ran: failed, class budget, the budget's
// message. Locally as on Temporal, the failure is the run's (no step) when
// the run's clock is seen first, or the step's, whose attempt reports the
// same budget error (its context's cause) first.
func timedOut(status, class, step, msg, running, limit string) bool {
	want := "the run ran past its budget timeout of " + limit
	if status != "failed" || class != string(fault.Budget) {
		return false
	}
	return step == "" && msg == want || step == running && strings.HasPrefix(msg, "tool "+running+": "+want)
}

const timeoutFlow = `name: slow
budgets: {timeout: 1s}
steps:
  - {id: slow, tool: slow, args: {}, retries: 3, on_error: skip}
  - {id: after, tool: after, args: {prev: "{slow}"}}
`

// TestRunTimeoutInFlight: a run whose budgets.timeout passes while an
// attempt runs ends as a local run of the same flow does: failed, class
// budget, the budget's message, on no step; the attempt's context is
// cancelled, it is not retried, and no step starts after.
func TestRunTimeoutInFlight(t *testing.T) {
	l := newLedger()
	sawCancel := make(chan bool, 4)
	p := load(t, timeoutFlow, hangTool("slow", sawCancel), l.tool("after", true))
	st := newHarness(t, p).run(map[string]any{})
	if st.Error == nil || !timedOut(st.Status, st.Error.Class, st.Error.Step, st.Error.Message, "slow", "1s") {
		t.Fatalf("Temporal run: %s %+v", st.Status, st.Error)
	}
	if !<-sawCancel {
		t.Error("the running attempt's context did not end")
	}
	if len(sawCancel) != 0 {
		t.Errorf("the attempt ran again %d times after the timeout", len(sawCancel))
	}
	if l.count("after") != 0 {
		t.Errorf("after ran %d times after the timeout", l.count("after"))
	}

	ll := newLedger()
	localCancel := make(chan bool, 4)
	lp := load(t, timeoutFlow, hangTool("slow", localCancel), ll.tool("after", true))
	res, err := wire.Engine(lp, engine.Config{}).Run(context.Background(), lp.Flow, map[string]any{}, &engine.RunOptions{RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || !timedOut(string(res.Status), string(res.Error.Class), res.Error.Step, res.Error.Message, "slow", "1s") || res.Error.Budget != "timeout" {
		t.Errorf("local run %s %+v, Temporal %s %+v", res.Status, res.Error, st.Status, st.Error)
	}
	if !<-localCancel || ll.count("after") != 0 {
		t.Errorf("local run: the attempt was not cancelled, or after ran (%d)", ll.count("after"))
	}
}

const timeoutWaitFlow = `name: waits
budgets: {timeout: 1s}
steps:
  - {id: sign, type: approval, message: "sign?"}
  - {id: slow, tool: slow, args: {ok: "{sign.approved}"}}
`

// TestRunTimeoutWaiting: the run's clock does not run while the run waits
// for a person (a local run waiting is parked: no process, no clock), so
// a decision an hour later is carried out; the clock starts again in full
// when the run goes on, and passes during the next slow attempt.
func TestRunTimeoutWaiting(t *testing.T) {
	sawCancel := make(chan bool, 1)
	p := load(t, timeoutWaitFlow, hangTool("slow", sawCancel))
	h := newHarness(t, p)
	var approve *updated
	h.env.RegisterDelayedCallback(func() {
		var st Status
		h.query(QueryStatus, &st)
		if st.Status != "waiting" {
			t.Errorf("status an hour in %s %+v, want waiting", st.Status, st.Error)
		}
		approve = h.update(Decision{Step: "sign", Action: ActionApprove, By: "ana"})
	}, time.Hour)
	st := h.run(map[string]any{})
	if approve == nil || !approve.done || approve.err != nil {
		t.Fatalf("the approval: %+v", approve)
	}
	if st.Error == nil || !timedOut(st.Status, st.Error.Class, st.Error.Step, st.Error.Message, "slow", "1s") {
		t.Fatalf("run: %s %+v", st.Status, st.Error)
	}
	if s := stepOf(t, st, "sign"); s.Status != "succeeded" {
		t.Errorf("sign: %+v", s)
	}
	if !<-sawCancel {
		t.Error("the slow attempt's context did not end")
	}
}

// TestRunTimeoutCarried: a continue-as-new carries the run's deadline:
// the new run fails when the first run's clock passes (10 minutes from
// its start), not 10 minutes after it began itself. Time is the test
// suite's: the second run starts when the first ended.
func TestRunTimeoutCarried(t *testing.T) {
	l := newLedger()
	l.fails["t2"] = failPlan{n: 2, class: fault.Transient}
	l.fails["t3"] = failPlan{n: 1000, class: fault.Transient}
	p := load(t, `name: long
budgets: {timeout: 10m}
steps:
  - {id: s1, tool: t1, args: {}}
  - {id: s2, tool: t2, args: {prev: "{s1.n}"}, retries: 3, backoff: {initial: 1m, max: 1m}}
  - {id: s3, tool: t3, args: {prev: "{s2.n}"}, retries: 10, backoff: {initial: 2m, max: 2m}}
`, l.tool("t1", true), l.tool("t2", true), l.tool("t3", true))
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := start
	for gen := 0; ; gen++ {
		h := newHarness(t, p)
		h.env.SetStartTime(at)
		if gen == 0 {
			h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 30*time.Second)
		}
		h.env.ExecuteWorkflow(p.Flow.Name, in)
		err := h.env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			if gen > 0 {
				t.Fatal("the run continued as new more than once")
			}
			in = Start{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.Carry == nil || in.Carry.Deadline == nil || !in.Carry.Deadline.Equal(start.Add(10*time.Minute)) {
				t.Fatalf("the continuation carried no deadline 10m from the start: %+v", in.Carry)
			}
			at = h.env.Now()
			continue
		}
		if gen != 1 {
			t.Fatalf("the run settled in generation %d, want 1 (after one continue-as-new)", gen)
		}
		cl, ok := ClosedOf(err)
		if !ok {
			t.Fatalf("workflow error %v, want a failed run", err)
		}
		st := cl.Status
		if st.Status != "failed" || st.Error == nil || st.Error.Class != string(fault.Budget) || st.Error.Message != "the run ran past its budget timeout of 10m0s" {
			t.Fatalf("run: %s %+v", st.Status, st.Error)
		}
		if end := h.env.Now(); !end.Equal(start.Add(10 * time.Minute)) {
			t.Errorf("the run failed %s after its start, want 10m (the second run began %s in)", end.Sub(start), at.Sub(start))
		}
		return
	}
}

// TestRunTimeoutRetry: a run that failed on its timeout closes failed
// (class budget); rein runs retry starts its clock again in full, as a
// local retry does: the retried step, now succeeding after a minute's
// backoff, settles and the run succeeds.
func TestRunTimeoutRetry(t *testing.T) {
	l := newLedger()
	l.fails["t1"] = failPlan{n: 1000, class: fault.Transient}
	p := load(t, `name: again
budgets: {timeout: 10m}
steps:
  - {id: s1, tool: t1, args: {}, retries: 10, backoff: {initial: 2m, max: 2m}}
  - {id: s2, tool: t2, args: {prev: "{s1.n}"}}
`, l.tool("t1", true), l.tool("t2", true))
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, p)
	st, cl := h.execute(in)
	if st != nil || cl == nil || cl.Status.Error == nil || cl.Status.Error.Class != string(fault.Budget) ||
		cl.Status.Error.Message != "the run ran past its budget timeout of 10m0s" {
		t.Fatalf("first run: %+v, closed %+v", st, cl)
	}
	if cl.Next.Carry == nil || cl.Next.Carry.Deadline != nil {
		t.Errorf("a closed run carries no deadline: %+v", cl.Next.Carry)
	}
	l.mu.Lock()
	l.fails["t1"] = failPlan{n: l.fails["t1"].n - 1000 + len(l.calls["t1"]) + 1, class: fault.Transient} // the retry's first attempt fails, its second succeeds
	l.mu.Unlock()
	next := cl.Next
	next.Retry = &Decision{By: "ana"}
	h2 := newHarness(t, p)
	h2.env.SetStartTime(h.env.Now())
	st, failed := h2.execute(next)
	if failed != nil || st.Status != "succeeded" {
		t.Fatalf("retried run: %+v, closed %+v", st, failed)
	}
	if l.count("t2") != 1 {
		t.Errorf("t2 ran %d times", l.count("t2"))
	}
}
