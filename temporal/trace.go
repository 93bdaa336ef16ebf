package temporal

import (
	"context"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/summary"
)

// Trace reads run runID's history and summarises it as rein runs trace
// summarises a local run's journal (summary.Summary, printed by the same
// code): per step its attempts, retries and failures (its activities'),
// its duration (from its first activity's scheduling to its last one's
// close: time waiting for a person between them included), and the tokens
// and model calls its activities reported (an llm, plan or route step's:
// activityRec.spent) or its agent's turns made. dc is the client's data
// converter.
func Trace(ctx context.Context, c client.Client, dc converter.DataConverter, ns, runID string) (*summary.Summary, error) {
	execs, err := ReadHistory(ctx, c, ns, runID)
	if err != nil {
		return nil, err
	}
	h, err := foldHistory(dc, runID, execs)
	if err != nil {
		return nil, err
	}
	return traceOf(h, time.Now()), nil
}

// notSteps are the activity kinds that are no attempt of their step: a
// for_each step's count and gate, the policy gate asked before, a check
// of a call in doubt, a saga's remediations.
var notSteps = map[string]bool{"items": true, "gate": true, "ask": true, "check": true, "compensate": true, "undo": true}

// traceOf summarises h; now ends what is still open.
func traceOf(h *runHistory, now time.Time) *summary.Summary {
	r := summary.Run{RunID: h.RunID, Flow: h.Start.Flow, Status: trace.RunStatus(h.Status)}
	end := h.Ended
	if h.Closed == "" || h.Closed == "WORKFLOW_EXECUTION_CONTINUED_AS_NEW" {
		end = now
		r.Status = trace.RunRunning
	}
	if !h.Began.IsZero() {
		r.Duration = end.Sub(h.Began)
	}
	final := map[string]StepStatus{}
	if h.Final != nil {
		for _, st := range h.Final.Steps {
			final[st.ID] = st
		}
		if e := h.Final.Error; e != nil {
			r.Failure = &summary.Failure{Class: e.Class, Message: e.Message}
		}
	}
	type span struct {
		first, last time.Time
		attempts    []int
		failed      []int
	}
	at := map[string]int{}
	spans := map[string]*span{}
	for _, a := range h.Activities {
		kind, _ := a.kind()
		if notSteps[kind] {
			continue
		}
		id := h.stepID(a.In.Step)
		i, ok := at[id]
		if !ok {
			i = len(r.Steps)
			at[id] = i
			r.Steps = append(r.Steps, summary.Step{StepID: id, Status: trace.StepRunning})
			spans[id] = &span{first: a.Scheduled}
		}
		s, sp := &r.Steps[i], spans[id]
		if kind != "call" && kind != "fallback" && s.Type == "" {
			s.Type = kind
		}
		if !slices.Contains(sp.attempts, a.In.Attempt) {
			sp.attempts = append(sp.attempts, a.In.Attempt)
		}
		closed := a.Closed
		if closed.IsZero() {
			closed = now
		}
		if closed.After(sp.last) {
			sp.last = closed
		}
		if a.Fail != nil {
			f := summary.Failure{Attempt: a.In.Attempt, Class: a.Fail.Class, Message: a.Fail.Message, Budget: a.Fail.Budget}
			if f.Class == "" {
				f.Class = string(fault.Transient) // a lost worker, as the workflow classes it
			}
			s.Failures = append(s.Failures, f)
			if !slices.Contains(sp.failed, a.In.Attempt) {
				sp.failed = append(sp.failed, a.In.Attempt)
			}
		}
		addSpentTo(s, a.spent()) // llm, plan and route steps' model calls
	}
	for _, ss := range sessionsOf(h) {
		i, ok := at[ss.Step]
		if !ok {
			continue
		}
		for _, t := range ss.Turns {
			r.Steps[i].TokensIn += t.Usage.In
			r.Steps[i].TokensOut += t.Usage.Out
			r.Steps[i].ModelCalls += t.LLMCalls
		}
	}
	for i := range r.Steps {
		s, sp := &r.Steps[i], spans[r.Steps[i].StepID]
		s.Attempts = len(sp.attempts)
		top := slices.Max(sp.attempts)
		for _, n := range sp.failed {
			if n < top {
				s.Retries++
			}
		}
		s.Duration = sp.last.Sub(sp.first)
		if st, ok := final[s.StepID]; ok {
			s.Status = trace.StepStatus(st.Status)
		}
		if n := len(s.Failures); n > 0 {
			f := s.Failures[n-1] // the last failed attempt's
			s.Failure = &f
		}
		r.TokensIn += s.TokensIn
		r.TokensOut += s.TokensOut
		r.ModelCalls += s.ModelCalls
	}
	if r.Steps == nil {
		r.Steps = []summary.Step{}
	}
	return &summary.Summary{Runs: []summary.Run{r}}
}
