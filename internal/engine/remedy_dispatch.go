package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// An undo or compensation is made once. Its call record is committed as
// started (dispatched: its key, the call's key with "/undo" or
// "/compensate", its args' digest and its tool) before its tool runs
// (callRecorder.Starting), and settled — succeeded or failed — in one
// commit with its remediation record as soon as it returns (remediate
// commits each remedy's records before the next). A remediation carried
// on later (rein runs remediate again, the saga of a resumed run) finds,
// for each call it takes back, the latest record of its undo or
// compensation; when that record is later in the journal than the call's
// latest remediation record, the process stopped between the two, and
// settleDispatch decides from it:
//
//	succeeded  done: it is not made again
//	failed     failed, escalated to a person as any failure
//	started    in doubt: made again with the same key when its tool is
//	           idempotent or read-only; otherwise unknown, escalated to a
//	           person (approve: make it once more; settle: it was taken
//	           back, by hand if need be; reject: leave it)
//	waiting    not made (the gate asked for a person): acted on afresh

// dispatched is the latest record of the undo or compensation of a call,
// and where the journal holds it.
type dispatched struct {
	call *journal.Call
	seq  int64
}

// noteDispatch keeps ev's call record when it is an undo or compensation
// (a late record, the second of a call given up at its deadline, adds
// nothing: the record before it settled the call).
func (st *remedyState) noteDispatch(ev *trace.Event) {
	c := ev.Call
	if ev.Kind != trace.CallRecorded || c == nil || c.Status == journal.CallLate {
		return
	}
	if k := c.TakesBack(); k != "" {
		st.dispatch[k] = dispatched{call: c, seq: ev.Seq}
	}
}

// unsettled returns the record of the undo or compensation of the call
// keyed key that was dispatched after the call's latest remediation record
// — the process stopped before it recorded that dispatch's remediation —
// or nil when there is none, or it was not made (waiting for a person).
func (st *remedyState) unsettled(key string) *journal.Call {
	d, ok := st.dispatch[key]
	if !ok || d.seq < st.lastSeq[key] || d.call.Status == journal.CallWaiting {
		return nil
	}
	return d.call
}

// settleDispatch records rec, the remedy rm whose undo or compensation c
// was dispatched and whose remediation was not recorded, from c (see
// above). It reports whether rm is settled by that (done is false when
// the call is to be made again, with the same key), and returns the
// escalation it raised, if any (esc).
func (r *run) settleDispatch(ctx context.Context, rm *Remedy, rec *journal.Remediation, esc string, c *journal.Call) (done bool, a *store.Approval) {
	eff := &rm.Effect
	rec.Call = eff.Compensation
	switch c.Status {
	case journal.CallSucceeded:
		rec.Status = journal.RemedyDone
		if x := c.Effect; x != nil {
			rec.Touched = slices.Concat(x.Writes, x.Sends, x.Reads)
		}
		rec.Reason = fmt.Sprintf("its call %s returned ok before the process stopped; it is not made again", c.Key)
		r.recordRemedy(rec)
		return true, nil
	case journal.CallFailed:
		return true, r.remedyFailed(rm, rec, esc, c.Error)
	case journal.CallStarted:
		res := invoke.Resolution{Verdict: invoke.Person}
		if req, spec, err := r.remedyRequest(&rm.Effect, eff.Compensation, string(rm.Action)); err == nil {
			res = r.resolveRemedy(ctx, req, &spec, c, rec.Decision == string(store.ApprovalApproved))
		}
		switch res.Verdict {
		case invoke.Again:
			return false, nil // made again with the same key
		case invoke.Happened:
			rec.Status = journal.RemedyDone
			rec.Reason = fmt.Sprintf("its call %s was dispatched and the process stopped before it returned; its tool's check found that it took effect", c.Key)
			r.recordRemedy(rec)
			return true, nil
		}
		rec.Status, rec.Escalation = journal.RemedyUnknown, esc
		rec.Reason = fmt.Sprintf("its call %s was dispatched and the process stopped before it returned", c.Key)
		why := "whether it happened is unknown, and tool " + c.Name + " is neither idempotent nor read-only, so it is not made again blindly"
		if res.Reason != "" {
			why = res.Reason
		}
		a := r.escalateRemedy(rec, fmt.Sprintf("the %s of call %s (tool %s, by tool %s, idempotency key %s) was dispatched and the process stopped before it returned: %s; approve to make it once more, settle once a person made sure it was taken back (by hand if need be), or reject to leave it",
			rm.Action, eff.Key, eff.Tool, c.Name, c.Key, why))
		r.recordRemedy(rec)
		return true, a
	}
	return false, nil
}

// resolveRemedy decides c, the undo or compensation req (spec) found
// dispatched without an outcome, by the one rule for a call in doubt
// (invoke.Resolve): approved says a person had it made once more. What
// its tool's check found is recorded as c's record (Reconciled set).
func (r *run) resolveRemedy(ctx context.Context, req *invoke.Request, spec *tool.Spec, c *journal.Call, approved bool) invoke.Resolution {
	start := r.e.cfg.Clock.Now()
	cctx, cancel := r.e.cfg.Clock.WithDeadline(ctx, start.Add(CheckTimeout))
	defer cancel()
	cctx = tool.WithCallInfo(cctx, &tool.CallInfo{RunID: r.id, StepID: c.StepID, Attempt: c.Attempt, IdempotencyKey: c.Key})
	var valid func(any) error
	if spec.OutputSchema != nil {
		valid = func(out any) error { return checkOutput(spec, out) }
	}
	res := invoke.Resolve(cctx, req.Tool, spec, tool.CheckRequest{Args: req.Args, IdempotencyKey: c.Key, OutputSchema: spec.OutputSchema}, approved, valid)
	if res.Reconciled != "" {
		rc := *c
		rc.Status, rc.Reconciled, rc.Duration = journal.CallFailed, res.Reconciled, r.e.cfg.Clock.Now().Sub(start)
		if res.Verdict == invoke.Happened {
			rc.Status = journal.CallSucceeded
		} else {
			rc.Error = "its tool's check found that the call did not take effect"
		}
		r.recordCallEvent(&rc, false)
	}
	return res
}

// RemediationInFlight is a remediation whose process stopped in the
// middle of an undo or compensation: a run's journal holds their
// dispatches without their outcomes.
type RemediationInFlight struct {
	// Premise is the premise of the run's latest remediation record (not
	// the saga's); "" when none names one yet (the process stopped in its
	// first call).
	Premise string
	// Dispatched are the keys of the undo and compensation calls
	// dispatched without an outcome, in key order.
	Dispatched []string
}

// InFlightRemediation reports the remediation of run runID that a stopped
// process left in flight (nil when there is none): an undo or
// compensation it dispatched and whose outcome, and remediation record,
// it did not record. Only rein runs remediate (Remediate) carries such a
// remediation on, given its premise again: its plan comes from the
// premise (and the assumptions a caller gave), which the journal does not
// hold, so a resume cannot rebuild it. It reads the journal only, no
// sealed payload.
func (e *Engine) InFlightRemediation(ctx context.Context, runID string) (*RemediationInFlight, error) {
	events, err := e.cfg.Store.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("engine: read the journal of run %s: %w", runID, err)
	}
	st := &remedyState{lastSeq: map[string]int64{}, dispatch: map[string]dispatched{}, last: map[string]*journal.Remediation{}}
	for _, ev := range events {
		switch ev.Kind {
		case trace.CallRecorded:
			st.noteDispatch(ev)
		case trace.Remediated:
			m, err := journal.DecodeRemediation(ev)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", store.ErrDamaged, err)
			}
			st.last[m.Key], st.lastSeq[m.Key] = m, ev.Seq
		}
	}
	in := &RemediationInFlight{}
	for key := range st.dispatch {
		if c := st.unsettled(key); c != nil && c.Status == journal.CallStarted {
			in.Dispatched = append(in.Dispatched, c.Key)
		}
	}
	if len(in.Dispatched) == 0 {
		return nil, nil
	}
	slices.Sort(in.Dispatched)
	var seq int64
	for k, m := range st.last {
		if m.Premise != "" && m.Premise != SagaPremise && st.lastSeq[k] >= seq {
			seq, in.Premise = st.lastSeq[k], m.Premise
		}
	}
	return in, nil
}
