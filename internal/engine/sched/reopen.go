package sched

import (
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
)

// Reopens is what a retry of a failed run of f (rein runs retry, with id
// runID) puts back to pending, as step indexes in flow order: its failed
// steps, the steps that waited for a decision when it failed (their
// approvals were closed with the run: they ask again), and with from,
// from and the settled steps downstream of it (that require it,
// transitively). status(i) is step i's status, and false for a step that
// never ran (it has no record).
//
// Errors: a business error for a step the policy gate blocked (it would
// be blocked again), for a step left unknown (a retry would repeat its
// effect without a person) and for a from that never ran; a not_found
// error naming the steps for a from f does not have (did-you-mean). The
// local engine (its stored step rows) and a workflow driver (its machine)
// both decide with it.
func Reopens(f *flow.Flow, runID, from string, status func(i int) (journal.StepStatus, bool)) ([]int, error) {
	return ReopensTaken(f, runID, from, status, nil)
}

// ReopensTaken is Reopens for a run whose saga (on_failure: compensate)
// took back what some of its settled steps did: taken(i) reports that
// every effect of step i was undone or compensated. Such a step is put
// back to pending too, and so is every settled step downstream of it
// (its output no longer stands in the world), so the retry makes its
// calls again, at the next attempt, with new keys. A call that was frozen
// (it could not be taken back) still stands: its step keeps its output.
// A nil taken is Reopens.
func ReopensTaken(f *flow.Flow, runID, from string, status func(i int) (journal.StepStatus, bool), taken func(i int) bool) ([]int, error) {
	var failed []string
	reopen := make([]bool, len(f.Steps))
	for i, s := range f.Steps {
		st, ok := status(i)
		if !ok {
			continue
		}
		switch st {
		case journal.StepBlocked:
			return nil, fault.New(fault.Business, fmt.Errorf("run %s: step %s was blocked by the policy gate, and a retry would be blocked again: change the policy or the flow and start a new run", runID, s.ID))
		case journal.StepFailed:
			failed = append(failed, s.ID)
			reopen[i] = true
		case journal.StepUnknown:
			return nil, fault.New(fault.Business, fmt.Errorf("run %s: step %s was in doubt (unknown: its effect may have happened) when the run failed, and a retry would make it again without a person deciding: start a new run, or settle its effect outside rein", runID, s.ID))
		case journal.StepWaiting:
			// its approval was closed when the run failed: it asks again.
			reopen[i] = true
		}
	}
	if from != "" {
		s := f.StepByID(from)
		if s == nil {
			ids := make([]string, len(f.Steps))
			for k, st := range f.Steps {
				ids[k] = st.ID
			}
			return nil, fault.New(fault.NotFound, fmt.Errorf("run %s: flow %s has no step %q%s; its steps: %s", runID, f.Name, from, flow.DidYouMean(from, ids), strings.Join(ids, ", ")))
		}
		if st, ok := status(s.Index); !ok || !st.Settled() {
			return nil, fault.New(fault.Business, fmt.Errorf("run %s: step %s never ran, so it cannot be retried from: retry from a step that failed (%s) or one that settled before", runID, from, strings.Join(failed, ", ")))
		}
		reopen[s.Index] = true
		downstream(f, reopen)
	}
	if taken != nil {
		back := make([]bool, len(f.Steps))
		some := false
		for i := range f.Steps {
			if st, ok := status(i); ok && st.Settled() && taken(i) {
				back[i], some = true, true
			}
		}
		if some {
			downstream(f, back)
			for i, b := range back {
				reopen[i] = reopen[i] || b
			}
		}
	}
	var out []int
	for i := range f.Steps {
		if st, ok := status(i); reopen[i] && ok && (st.Settled() || st == journal.StepWaiting) {
			out = append(out, i)
		}
	}
	return out, nil
}

// downstream marks in set every step that requires a marked one,
// transitively.
func downstream(f *flow.Flow, set []bool) {
	for _, i := range f.Order { // upstream first
		for _, k := range f.Steps[i].RequireIdx {
			if set[k] {
				set[i] = true
			}
		}
	}
}
