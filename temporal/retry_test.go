package temporal

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/reinhq/rein/fault"
)

// execute runs in (a run's workflow input) to its end: its result, or the
// Closed its failure carries.
func (h *harness) execute(in Start) (*Status, *Closed) {
	h.t.Helper()
	h.env.ExecuteWorkflow(h.p.Flow.Name, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		cl, ok := ClosedOf(err)
		if !ok {
			h.t.Fatalf("workflow error without Closed: %v", err)
		}
		return nil, cl
	}
	var st Status
	if err := h.env.GetWorkflowResult(&st); err != nil {
		h.t.Fatal(err)
	}
	return &st, nil
}

// failedRun runs retryFlow with charge failing once, to its close: the
// failed workflow's Closed and error.
func failedRun(t *testing.T, l *ledger) (*Closed, error) {
	t.Helper()
	p := load(t, retryFlow, l.tool("ok", true), l.tool("charge", false), l.tool("audit", false))
	h := newHarness(t, p)
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	start := h.env.Now()
	h.env.ExecuteWorkflow(p.Flow.Name, in)
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the failed run's workflow did not close")
	}
	if d := h.env.Now().Sub(start); d >= time.Hour {
		t.Errorf("the failed run closed after %s of workflow time, want at once", d)
	}
	werr := h.env.GetWorkflowError()
	cl, ok := ClosedOf(werr)
	if !ok {
		t.Fatalf("a failed run's workflow error %v carries no Closed", werr)
	}
	return cl, werr
}

// TestRetryClosed: by default a failed run's workflow closes at once as a
// failed one (its error a non-retryable ApplicationError of the run's
// class and message) carrying its final status and state. A retry starts
// a new execution from that state: the failed step runs at its next
// attempt (a new key), the steps that succeeded do not run again, and the
// run succeeds; a retry the run cannot take closes it failed again, with
// the same state and nothing run.
func TestRetryClosed(t *testing.T) {
	l := newLedger()
	l.fails["charge"] = failPlan{n: 1, class: fault.Business}
	cl, werr := failedRun(t, l)
	var ae *temporal.ApplicationError
	if !errors.As(werr, &ae) || ae.Type() != string(fault.Business) || !ae.NonRetryable() || !strings.Contains(ae.Error(), "step charge: tool charge: charge: failure 1 of 1") {
		t.Errorf("workflow error %v: want a non-retryable %s ApplicationError with the run's error", werr, fault.Business)
	}
	if cl.Status.Status != "failed" || cl.Status.Error == nil || cl.Status.Error.Step != "charge" {
		t.Fatalf("closed status %+v", cl.Status)
	}
	c := cl.Next.Carry
	if c == nil || c.Status != "failed" || len(c.Steps) != 4 || c.Steps[0].Status != "succeeded" || c.Steps[1].Status != "failed" || c.Steps[1].Attempts != 1 {
		t.Fatalf("carried state %+v", c)
	}
	if cl.Next.FlowHash == "" || cl.Next.Retry != nil {
		t.Errorf("next input: flow hash %q, retry %+v", cl.Next.FlowHash, cl.Next.Retry)
	}
	p := load(t, retryFlow, l.tool("ok", true), l.tool("charge", false), l.tool("audit", false))
	before := l.count("ok") + l.count("charge") + l.count("audit")

	// a from that never ran: refused, the run as it failed.
	in := cl.Next
	in.Retry = &Decision{Step: "mail"}
	st, again := newHarness(t, p).execute(in)
	if st != nil || again == nil || again.Status.Error == nil || again.Status.Error.Step != "charge" {
		t.Fatalf("refused retry: run %+v, closed %+v", st, again)
	}
	if n := l.count("ok") + l.count("charge") + l.count("audit"); n != before {
		t.Errorf("a refused retry ran %d tool calls", n-before)
	}
	if again.Next.Carry == nil || again.Next.Carry.Steps[1].Status != "failed" {
		t.Errorf("refused retry's carried state %+v", again.Next.Carry)
	}

	// the retry, from the state the refused one carried on.
	in = again.Next
	in.Retry = &Decision{By: "ana"}
	st, failed := newHarness(t, p).execute(in)
	if failed != nil || st.Status != "succeeded" {
		t.Fatalf("retried run: %+v, closed %+v", st, failed)
	}
	if got := strings.Join(l.keys("charge"), " "); got != "run-1/charge/1 run-1/charge/2" {
		t.Errorf("charge keys %q: the retried attempt takes the next key", got)
	}
	if got := strings.Join(l.keys("ok"), " "); got != "run-1/fetch/1 run-1/mail/1" || l.count("audit") != 1 {
		t.Errorf("ok keys %q (fetch once, mail once), audit ran %d times: a step that succeeded ran again", got, l.count("audit"))
	}
	if s := stepOf(t, st, "charge"); s.Status != "succeeded" || s.Attempts != 2 || s.Error != "" {
		t.Errorf("charge: %+v", s)
	}
	if s := stepOf(t, st, "fetch"); s.Attempts != 1 || output(t, st, "fetch")["n"] != float64(1) {
		t.Errorf("fetch %+v: its carried output is the first attempt's", s)
	}
}

// TestRetryClosedFrom: a retry --from a step that succeeded re-runs it
// (attempt 2) and the steps downstream of it, not the others.
func TestRetryClosedFrom(t *testing.T) {
	l := newLedger()
	l.fails["charge"] = failPlan{n: 1, class: fault.Business}
	cl, _ := failedRun(t, l)
	p := load(t, retryFlow, l.tool("ok", true), l.tool("charge", false), l.tool("audit", false))
	in := cl.Next
	in.Retry = &Decision{Step: "fetch"}
	st, failed := newHarness(t, p).execute(in)
	if failed != nil || st.Status != "succeeded" {
		t.Fatalf("retried run: %+v, closed %+v", st, failed)
	}
	if got := strings.Join(l.keys("ok"), " "); got != "run-1/fetch/1 run-1/fetch/2 run-1/mail/1" {
		t.Errorf("ok keys %q: fetch re-ran at attempt 2, mail once", got)
	}
	if got := strings.Join(l.keys("charge"), " "); got != "run-1/charge/1 run-1/charge/2" || l.count("audit") != 1 {
		t.Errorf("charge keys %q, audit ran %d times", got, l.count("audit"))
	}
}
