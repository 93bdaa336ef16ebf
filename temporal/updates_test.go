package temporal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/reinhq/rein/fault"
)

// send sends update name with d (update, for any of the run's updates).
func (h *harness) send(name string, d Decision) *updated {
	u := &updated{}
	h.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject:   func(err error) { u.done, u.err = true, err },
		OnAccept:   func() {},
		OnComplete: func(_ any, err error) { u.done, u.err = true, err },
	}, d)
	return u
}

const submitFlow = `name: submit
schemas:
  parsed: {type: object, properties: {total: {type: number}}, required: [total], additionalProperties: false}
steps:
  - {id: parse, skill: parse-input, output_schema: parsed, gate: "output.total > 0"}
  - {id: book, tool: ok, args: {total: "{parse.total}"}}
`

// TestSubmit: a submit step waits for an agent's output; next_actions
// offers the submit update; the validator refuses a submission without
// data, an output that breaks the step's output_schema or its gate, and a
// step that waits for no submission, with nothing written; an accepted
// submission settles the step and the run goes on with it.
func TestSubmit(t *testing.T) {
	l := newLedger()
	p := load(t, submitFlow, l.tool("ok", true))
	h := newHarness(t, p)
	var notJSON, badSchema, badGate, notWaiting, ok *updated
	var next []NextAction
	h.env.RegisterDelayedCallback(func() {
		h.query(QueryNextActions, &next)
		notJSON = h.send(UpdateSubmit, Decision{Step: "parse"})
		badSchema = h.send(UpdateSubmit, Decision{Step: "parse", Output: json.RawMessage(`{"total":"ten"}`)})
		badGate = h.send(UpdateSubmit, Decision{Step: "parse", Output: json.RawMessage(`{"total":0}`)})
		notWaiting = h.send(UpdateSubmit, Decision{Step: "book", Output: json.RawMessage(`{}`)})
		ok = h.send(UpdateSubmit, Decision{Step: "parse", Output: json.RawMessage(`{"total":10}`), By: "agent-7"})
	}, time.Minute)
	st := h.run(map[string]any{})
	if len(next) == 0 || next[0].Update != UpdateSubmit || next[0].Step != "parse" {
		t.Errorf("next_actions %+v", next)
	}
	for name, c := range map[string]struct {
		u    *updated
		want string
	}{"no data": {notJSON, "needs data"}, "schema": {badSchema, "total"}, "gate": {badGate, "does not hold"}, "not waiting": {notWaiting, "waits for no submission"}} {
		if !c.u.done || c.u.err == nil || !strings.Contains(c.u.err.Error(), c.want) {
			t.Errorf("%s: %+v, want an error with %q", name, c.u, c.want)
		}
	}
	if !ok.done || ok.err != nil {
		t.Fatalf("submission: %+v", ok)
	}
	if st.Status != "succeeded" || string(st.Outputs["parse"]) != `{"total":10}` {
		t.Fatalf("run: %+v %s", st, st.Outputs["parse"])
	}
	if got := output(t, st, "book")["args"].(map[string]any)["total"]; got != float64(10) {
		t.Errorf("book read total %v", got)
	}
}

const retryFlow = `name: retry-run
steps:
  - {id: fetch, tool: ok, args: {}}
  - {id: charge, tool: charge, args: {from: "{fetch.n}"}}
  - {id: mail, tool: ok, args: {after: "{charge.n}"}}
  - {id: audit, tool: audit, args: {}, requires: []}
`

// TestRetry: a failed run stays open for the retry update (a worker's
// retry window); its validator
// refuses a run that is not failed and a from that never ran; retry
// re-opens the failed step, which runs at its next attempt (a new key),
// and the run goes on, the other settled steps keeping their outputs
// (called once). A second retry, --from fetch, re-runs fetch and every
// step downstream of it, not audit.
func TestRetry(t *testing.T) {
	l := newLedger()
	l.fails["charge"] = failPlan{n: 1, class: fault.Business}
	p := load(t, retryFlow, l.tool("ok", true), l.tool("charge", false), l.tool("audit", false))
	h := newHarnessOf(t, p, &Workflow{RetryWindow: 24 * time.Hour})
	var early, never, retry *updated
	var failed Status
	var next []NextAction
	h.env.RegisterDelayedCallback(func() {
		early = h.send(UpdateRetry, Decision{})
	}, 0)
	h.env.RegisterDelayedCallback(func() {
		h.query(QueryStatus, &failed)
		h.query(QueryNextActions, &next)
		never = h.send(UpdateRetry, Decision{Step: "mail"})
		retry = h.send(UpdateRetry, Decision{By: "ana"})
	}, time.Hour)
	st := h.run(map[string]any{})
	if !early.done || early.err == nil || !strings.Contains(early.err.Error(), "not failed") {
		t.Errorf("retry of a running run: %+v", early)
	}
	if failed.Status != "failed" || failed.Error == nil || failed.Error.Step != "charge" {
		t.Fatalf("status before the retry: %+v", failed)
	}
	if len(next) != 1 || next[0].Update != UpdateRetry || next[0].Step != "charge" {
		t.Errorf("next_actions of the failed run %+v", next)
	}
	if !never.done || never.err == nil || !strings.Contains(never.err.Error(), "never ran") {
		t.Errorf("retry from a step that never ran: %+v", never)
	}
	if !retry.done || retry.err != nil {
		t.Fatalf("retry: %+v", retry)
	}
	if st.Status != "succeeded" {
		t.Fatalf("run after the retry: %+v %+v", st, st.Error)
	}
	if got := strings.Join(l.keys("charge"), " "); got != "run-1/charge/1 run-1/charge/2" {
		t.Errorf("charge keys %q: the retried attempt takes a new key", got)
	}
	if l.count("ok") != 2 || l.count("audit") != 1 {
		t.Errorf("ok ran %d times (fetch once, mail once), audit %d", l.count("ok"), l.count("audit"))
	}
	if s := stepOf(t, st, "charge"); s.Status != "succeeded" || s.Attempts != 2 || s.Error != "" {
		t.Errorf("charge: %+v", s)
	}
}

// TestRetryFrom: --from re-opens a step that settled and every step
// downstream of it; the failed run closes after the retry window when no
// retry came (failed, carrying its state).
func TestRetryFrom(t *testing.T) {
	l := newLedger()
	l.fails["charge"] = failPlan{n: 1, class: fault.Business}
	p := load(t, retryFlow, l.tool("ok", true), l.tool("charge", false), l.tool("audit", false))
	h := newHarnessOf(t, p, &Workflow{RetryWindow: 24 * time.Hour})
	var retry *updated
	h.env.RegisterDelayedCallback(func() {
		retry = h.send(UpdateRetry, Decision{Step: "fetch", Action: ActionRetry})
	}, time.Hour)
	st := h.run(map[string]any{})
	if !retry.done || retry.err != nil || st.Status != "succeeded" {
		t.Fatalf("retry %+v, run %+v %+v", retry, st, st.Error)
	}
	if got := strings.Join(l.keys("ok"), " "); got != "run-1/fetch/1 run-1/fetch/2 run-1/mail/1" {
		t.Errorf("ok keys %q: fetch re-ran at attempt 2, mail once", got)
	}
	if l.count("audit") != 1 {
		t.Errorf("audit (not downstream of fetch) ran %d times", l.count("audit"))
	}

	// no retry: the failed run closes when its window passes.
	l2 := newLedger()
	l2.fails["charge"] = failPlan{n: 1, class: fault.Business}
	p2 := load(t, retryFlow, l2.tool("ok", true), l2.tool("charge", false), l2.tool("audit", false))
	h2 := newHarnessOf(t, p2, &Workflow{RetryWindow: 24 * time.Hour})
	start := h2.env.Now()
	st2 := h2.run(map[string]any{})
	if st2.Status != "failed" || h2.env.Now().Sub(start) < 24*time.Hour {
		t.Errorf("run %s closed after %s, want failed after the retry window", st2.Status, h2.env.Now().Sub(start))
	}
}
