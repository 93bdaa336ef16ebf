package engine

import (
	"encoding/json"

	"strconv"
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/trace"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// Call records (journal.Call, a call event each) hold the story of each
// call the run records: every call of a for_each item (tool or model,
// fallbacks included), of a repeat round (a tool's), of a step's fallback
// tool and of a plan step, with the plan itself as the
// record of the planner's answer — what a resume continues a half-done
// step from — and every other call the gate decided on or that reached a
// tool with an effect (a tool step's, a repeat round's, an agent's, a
// compensation's). A plain step's call with none of these has no record:
// its row says all a resume needs, and the hot path pays nothing.
//
// A settled record of an item or a plan step is committed as soon as its
// call returns, so a crash after item k (or plan step k) succeeded never
// runs it again — but for a pure tool (effect none, idempotent), whose
// record rides with the run's next commit, as every other record does;
// the call of a tool that is not idempotent is also committed as started
// before it is made, so a resumed run knows which call, if any, is in
// doubt. An undo or compensation is committed as started before it is
// made, whatever its tool, and its outcome in one commit with its
// remediation record as soon as it returns (remedy.go), so a remediation
// or saga carried on after a crash never makes a settled one again.

// wantsCall reports whether a call at at gets a record: a call of a
// for_each item, a repeat round or a plan step, or a step's fallback tool
// (a resumed step must know where its loop was and whether its fallback
// ran).
func (r *run) wantsCall(at *invoke.Position) bool {
	if !r.d.on || at.Turn != 0 {
		return false
	}
	return at.ForEach || at.PlanStep != "" || at.Round > 0 || at.Fallback
}

var _ invoke.Starter = (*callRecorder)(nil)

// Starting commits the start of a call that wants a record, when its tool
// is not idempotent, and of every undo and compensation (its dispatch,
// whatever its tool: remediation reads it, remedy_dispatch.go): the start
// is durable before the side effect. An error means the run can commit
// nothing more, and the call is not made.
func (c *callRecorder) Starting(rec invoke.Record, spec tool.Spec) error {
	r := (*run)(c)
	remedy := r.d.on && rec.At.Remedy != ""
	if !remedy && (spec.Idempotent || !r.wantsCall(&rec.At)) {
		return nil
	}
	r.recordCallEvent(r.callOf(&rec, store.CallStarted, nil, false), true)
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	return r.storeErr
}

// recordCall journals the record of a call that returned, when the run
// records it (see above). A call of an item or a plan step cancelled
// before its tool returned leaves no record: a start recorded for it stays
// in doubt, and without one the call is made again on resume (its tool is
// idempotent); one abandoned while its tool runs on is recorded as
// started, in doubt. A call that waits for a person's approval did not
// run: its record (waiting) carries the gate's decision, and its plan
// records where it waits. A late result is committed with the run's next
// transition. An agent's own call is recorded with its loop's record of
// it (agentJournal.CommitCall), which takes what this one knows.
func (r *run) recordCall(rec *invoke.Record) {
	want := r.wantsCall(&rec.At)
	spec, known := r.callSpec(rec)
	effect := known && reachedTool(rec) && safety.HasEffect(&spec)
	if effect && r.onEffect != nil && rec.At.Remedy == "" {
		r.onEffect(*effectOf(rec, &spec))
	}
	// an undo or compensation is always recorded: its outcome settles the
	// start Starting committed (with its remediation record: remedy.go).
	remedy := r.d.on && rec.At.Remedy != ""
	if !want && !effect && rec.Gate == nil && !remedy {
		return
	}
	status := store.CallFailed
	switch rec.Outcome {
	case invoke.OK, invoke.PremiseFailed:
		status = store.CallSucceeded
	case invoke.Late:
		status = store.CallLate
	case invoke.AwaitingApproval:
		status = store.CallWaiting
	case invoke.Cancelled:
		if !rec.Abandoned {
			return
		}
		status = store.CallStarted
	}
	var sp *tool.Spec
	if effect {
		sp = &spec
	}
	c := r.callOf(rec, status, sp, want)
	if rec.At.Turn > 0 && rec.At.PlanStep == "" {
		r.keepAgentCall(c)
		return
	}
	r.recordCallEvent(c, want && rec.Outcome != invoke.Late && !(known && spec.Effect == tool.EffectNone && spec.Idempotent))
}

// callOf is the record of the call rec with status: with its output when
// it succeeded and output is set (the record of an item or a plan step,
// which a resume reads), and with what the tool's effect touched when
// spec is set.
func (r *run) callOf(rec *invoke.Record, status store.CallStatus, spec *tool.Spec, output bool) *store.Call {
	cl := rec.Journal(status, nil, output)
	if spec != nil {
		e := effectOf(rec, spec)
		cl.Provenance = e.Provenance
		cl.Effect = &journal.DeclaredEffect{Effect: e.Effect, Reversibility: e.Reversibility, Idempotent: e.Idempotent,
			Tags: e.Tags, Reads: e.Reads, Writes: e.Writes, Sends: e.Sends, Unrendered: e.Unrendered, Compensation: e.Compensation}
	}
	return cl
}

// recordCallEvent journals c as a call event, unless the run has recorded
// its last event (a late result after the run settled); now commits it at
// once, else it rides with the run's next commit.
func (r *run) recordCallEvent(c *store.Call, now bool) {
	ev := trace.Event{Kind: trace.CallRecorded, StepID: c.StepID, PlanStep: c.PlanStep, Turn: c.Turn, Tool: c.Name,
		Attempt: c.Attempt, Status: string(c.Status), Call: c}
	if c.PlanStep != "" {
		ev.Attempt = c.Plan
	}
	r.recordMu.Lock()
	if r.closed {
		r.recordMu.Unlock()
		return
	}
	r.recordLocked(&ev)
	if now {
		r.flushLocked()
	}
	r.deliverLocked()
}

// recordModelCall journals and commits the record of one model call of a for_each item
// (callLLM: the request and, with an output_schema, its corrective one):
// out is the item's output when it succeeded.
func (r *run) recordModelCall(j *job, name string, in unitInput, attempt int, fallback bool, start time.Time, sc *callScope, out any, err error) {
	if !r.d.on || in.item < 0 {
		return
	}
	at := invoke.Position{RunID: r.id, StepID: j.step.ID, ForEach: true, Item: in.item, Round: in.round, Fallback: fallback, Attempt: attempt}
	cl := &store.Call{StepID: j.step.ID, Key: at.Key(), Item: in.item, Round: in.round, Fallback: fallback,
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
	r.recordCallEvent(cl, true)
}

// recordPlan journals and commits the plan a plan step's planner proposed, as the
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
	cl := &store.Call{StepID: s.ID, Key: parent.Key() + "/plan" + strconv.Itoa(ev.Attempt), Item: item, Round: parent.Round,
		Plan: ev.Attempt, Attempt: parent.Attempt, Kind: store.CallModel, Name: s.Model, Status: store.CallSucceeded, Output: out,
		StartedAt: r.e.cfg.Clock.Now()}
	r.recordCallEvent(cl, true)
}

// keepAgentCall keeps c, the record of an agent's call as the pipeline saw
// it, for the loop's record of the call (takeAgentCall).
func (r *run) keepAgentCall(c *store.Call) {
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	if r.d.agentCalls == nil {
		r.d.agentCalls = map[string]*store.Call{}
	}
	r.d.agentCalls[c.Key] = c
}

// takeAgentCall returns and forgets the record keepAgentCall kept for key
// (nil when the pipeline recorded nothing of it).
func (r *run) takeAgentCall(key string) *store.Call {
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	c := r.d.agentCalls[key]
	if c != nil {
		delete(r.d.agentCalls, key)
	}
	return c
}
