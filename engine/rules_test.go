package engine

import (
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/trace"
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
		step2   recovery // recoverStep
		item    recovery // recoverItem
	}{
		{"business fails", flow.Step{}, fault.Business, false, failStep, failStep},
		{"budget stops even with skip", flow.Step{OnError: flow.Skip}, fault.Budget, false, stopWithRun, stopWithRun},
		{"policy stops even with fallback", flow.Step{OnError: flow.Fallback}, fault.Policy, false, stopWithRun, stopWithRun},
		{"a stopped run stops", flow.Step{OnError: flow.Skip}, fault.Transient, true, stopWithRun, stopWithRun},
		{"skip defaults", flow.Step{OnError: flow.Skip}, fault.Business, false, defaultStep, defaultStep},
		{"fallback falls back", flow.Step{OnError: flow.Fallback}, fault.Format, false, fallBack, fallBack},
		{"escalate parks", flow.Step{OnError: flow.Escalate}, fault.Business, false, escalateStep, failStep},
		{"for_each as a whole", flow.Step{OnError: flow.Skip, ForEach: items}, fault.Business, false, failWholeItems, defaultStep},
	} {
		if got := recoverStep(&c.step, c.class, c.stopped); got != c.step2 {
			t.Errorf("%s: recoverStep = %d, want %d", c.name, got, c.step2)
		}
		if got := recoverItem(&c.step, c.class, c.stopped); got != c.item {
			t.Errorf("%s: recoverItem = %d, want %d", c.name, got, c.item)
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
	biz, budget, cancel := &RunError{Class: fault.Business}, &RunError{Class: fault.Budget}, &RunError{Class: fault.Cancelled}
	for _, c := range []struct {
		failure            *RunError
		parked, callerDone bool
		want               trace.RunStatus
	}{
		{nil, false, false, trace.RunSucceeded},
		{nil, true, false, trace.RunWaiting},
		{biz, true, false, trace.RunFailed},
		{biz, false, true, trace.RunCancelled},
		{budget, false, true, trace.RunFailed},
		{cancel, false, false, trace.RunCancelled},
	} {
		if got := runOutcome(c.failure, c.parked, c.callerDone); got != c.want {
			t.Errorf("runOutcome(%v, %v, %v) = %s, want %s", c.failure, c.parked, c.callerDone, got, c.want)
		}
	}
}
