package engine

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// Call records (store.Call) are kept for the calls a step's row alone
// cannot describe: each call of a for_each item (tool or model, fallbacks
// included) and each call of a plan step, with the plan itself as the
// record of the planner's answer. A plain step of one call has none: its
// row says all a resume needs, and the hot path pays nothing.
//
// A settled record is committed as soon as its call returns, so a crash
// after item k (or plan step k) succeeded never runs it again — but for a
// pure tool (effect none, idempotent), whose record rides with the run's
// next commit; the call of a tool that is not idempotent is also committed
// as started before it is made, so a resumed run knows which call, if
// any, is in doubt.

// wantsCall reports whether a call at at gets a record: a call of a
// for_each item or a plan step, or the fallback tool of a plan step (a
// resumed plan step must know whether its fallback ran).
func (r *run) wantsCall(at *invoke.Position) bool {
	if !r.d.on || at.Turn != 0 {
		return false
	}
	if at.ForEach || at.PlanStep != "" {
		return true
	}
	if at.Fallback {
		s := r.f.StepByID(at.StepID)
		return s != nil && s.Type == flow.Plan
	}
	return false
}

var _ invoke.Starter = (*callRecorder)(nil)

// Starting commits the start of a call that wants a record, when its tool
// is not idempotent: the start is durable before the side effect. An error
// means the run can commit nothing more, and the call is not made.
func (c *callRecorder) Starting(rec invoke.Record, spec tool.Spec) error {
	r := (*run)(c)
	if spec.Idempotent || !r.wantsCall(&rec.At) {
		return nil
	}
	cl := r.toolCall(&rec, store.CallStarted)
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	r.d.pendCalls = append(r.d.pendCalls, cl)
	r.flushLocked()
	return r.storeErr
}

// recordCall commits the record of a call that returned. A call cancelled
// before its tool returned leaves no record: a start recorded for it stays
// in doubt, and without one the call is made again on resume (its tool is
// idempotent). A call that waits for a person's approval did not run and
// leaves none either: its plan records where it waits. A late result is
// committed with the run's next transition.
func (r *run) recordCall(rec *invoke.Record) {
	if !r.wantsCall(&rec.At) || rec.Outcome == invoke.Cancelled || rec.Outcome == invoke.AwaitingApproval {
		return
	}
	status := store.CallFailed
	switch rec.Outcome {
	case invoke.OK:
		status = store.CallSucceeded
	case invoke.Late:
		status = store.CallLate
	}
	cl := r.toolCall(rec, status)
	lazy := rec.Outcome == invoke.Late || r.pureCall(rec)
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	r.d.pendCalls = append(r.d.pendCalls, cl)
	if !lazy {
		r.flushLocked()
	}
}

// pureCall reports whether rec's tool has no effect and is idempotent.
// Such a call's record rides with the run's next commit, as a pure step's
// start does: were a crash to lose it, the call would be made again with
// the same key, and a fan-out of pure calls costs no commit per call.
func (r *run) pureCall(rec *invoke.Record) bool {
	spec, ok := r.callSpec(rec)
	return ok && spec.Effect == tool.EffectNone && spec.Idempotent
}

// toolCall is the store record of a tool call.
func (r *run) toolCall(rec *invoke.Record, status store.CallStatus) *store.Call {
	at := &rec.At
	cl := &store.Call{RunID: r.id, StepID: at.StepID, Key: rec.Key, Item: -1, Round: at.Round, Plan: at.Plan,
		PlanStep: at.PlanStep, Turn: at.Turn, Index: at.Call, Fallback: at.Fallback, Attempt: at.Attempt,
		Kind: store.CallTool, Name: rec.Tool, ArgsSHA: rec.ArgsDigest(), Status: status, StartedAt: rec.Start, Duration: rec.Duration}
	if at.ForEach {
		cl.Item = at.Item
	}
	if status == store.CallSucceeded {
		cl.Output, _ = value.AppendCanonical(nil, rec.Output)
	}
	if rec.Err != nil && status != store.CallStarted {
		cl.ErrorClass, cl.Error = string(fault.ClassOf(rec.Err)), rec.Err.Error()
	}
	return cl
}

// recordModelCall commits the record of one model call of a for_each item
// (callLLM: the request and, with an output_schema, its corrective one):
// out is the item's output when it succeeded.
func (r *run) recordModelCall(j *job, name string, in unitInput, attempt int, fallback bool, start time.Time, sc *callScope, out any, err error) {
	if !r.d.on || in.item < 0 {
		return
	}
	at := invoke.Position{RunID: r.id, StepID: j.step.ID, ForEach: true, Item: in.item, Round: in.round, Fallback: fallback, Attempt: attempt}
	cl := &store.Call{RunID: r.id, StepID: j.step.ID, Key: at.Key(), Item: in.item, Round: in.round, Fallback: fallback,
		Attempt: attempt, Kind: store.CallModel, Name: name, Status: store.CallSucceeded, TokensIn: sc.tokensIn, TokensOut: sc.tokensOut,
		StartedAt: start, Duration: r.e.cfg.Clock.Now().Sub(start)}
	if b, derr := value.AppendCanonical(nil, in.prompt); derr == nil {
		cl.ArgsSHA = value.Digest(b)
	}
	if err != nil {
		cl.Status, cl.ErrorClass, cl.Error = store.CallFailed, string(fault.ClassOf(err)), err.Error()
	} else {
		cl.Output, _ = value.AppendCanonical(nil, out)
	}
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	r.d.pendCalls = append(r.d.pendCalls, cl)
	r.flushLocked()
}

// recordPlan commits the plan a plan step's planner proposed, as the
// record of the planner's call (key: the step attempt's, then "/plan" n),
// before any of its steps runs: a resumed run continues this plan.
func (r *run) recordPlan(s *flow.Step, parent *invoke.Position, ev *plan.Event) {
	if !r.d.on || ev.Plan == nil {
		return
	}
	out, err := json.Marshal(ev.Plan)
	if err != nil {
		return
	}
	item := -1
	if parent.ForEach {
		item = parent.Item
	}
	cl := &store.Call{RunID: r.id, StepID: s.ID, Key: parent.Key() + "/plan" + strconv.Itoa(ev.Attempt), Item: item, Round: parent.Round,
		Plan: ev.Attempt, Attempt: parent.Attempt, Kind: store.CallModel, Name: s.Model, Status: store.CallSucceeded, Output: out,
		StartedAt: r.e.cfg.Clock.Now()}
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	r.d.pendCalls = append(r.d.pendCalls, cl)
	r.flushLocked()
}
