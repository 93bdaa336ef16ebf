package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/value"
)

// Workflow is the one workflow every flow runs as: it drives the
// scheduler's machine (package sched, the same code as the local
// engine's runner) from workflow code, and hands each attempt to a worker
// as an activity. It is registered as a dynamic workflow, so that a run's
// workflow type is its flow's name.
type Workflow struct {
	Flows *Flows
	// Heartbeat is the attempts' heartbeat interval (Activities.Heartbeat);
	// an attempt whose worker is silent for three of them is lost. Zero:
	// 2 s.
	Heartbeat time.Duration
	// NoTimeout bounds an attempt of a step without a timeout of its own
	// (tool and plan steps). Zero: one hour.
	NoTimeout time.Duration
	// ContinueAfterUnits continues a run as new after an agent step made
	// that many units since the run (or its last continuation) began,
	// besides when the server suggests it (carry.go). Zero: only then.
	ContinueAfterUnits int
	// RetryWindow is how long a failed run stays open for UpdateRetry
	// (rein runs retry) before its workflow closes. Zero or negative: it
	// closes as it fails (then rein runs retry starts it again: RetryRun).
	RetryWindow time.Duration
	// ContinueAsNewAfter continues a run as new once its history holds
	// this many events (at the next point where nothing is in flight);
	// zero: only when Temporal suggests it.
	ContinueAsNewAfter int
}

// lostReruns bounds how often an attempt whose worker was lost runs again
// with the same key before its step fails.
const lostReruns = 3

// Run is the dynamic workflow function.
func (w *Workflow) Run(ctx workflow.Context, args converter.EncodedValues) (*Status, error) {
	var in Start
	if err := args.Get(&in); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("workflow input: "+err.Error(), string(fault.Business), err)
	}
	sum := sha256.Sum256([]byte(in.FlowText))
	if hex.EncodeToString(sum[:]) != in.FlowHash {
		return nil, temporal.NewNonRetryableApplicationError("the pinned flow's text does not match its hash "+in.FlowHash, string(fault.Business), nil)
	}
	e, err := w.Flows.get(in.FlowHash)
	if err != nil {
		// a workflow task failure: Temporal retries it, so a worker that
		// holds the flow takes the run over.
		panic(err)
	}
	r := &wrun{w: w, e: e, f: e.p.Flow, runID: workflow.GetInfo(ctx).WorkflowExecution.ID, in: in,
		raw: map[string]json.RawMessage{}, errs: map[string]string{}, answers: map[int]*answer{}, agents: map[int]*agentRun{}, gateArgs: map[int]json.RawMessage{}}
	if len(in.Input) > 0 {
		if err := json.Unmarshal(in.Input, &r.input); err != nil {
			return nil, temporal.NewNonRetryableApplicationError("run input: "+err.Error(), string(fault.Business), err)
		}
	}
	r.outputs = map[string]any{}
	r.m.Reset(r.f, r.runID)
	r.budget.Reset(r.f)
	if in.Carry != nil {
		r.restore(in.Carry)
	}
	if in.Retry != nil {
		if err := r.retryClosed(*in.Retry); err != nil {
			return nil, r.closed(ctx, err)
		}
	}
	if err := r.handlers(ctx); err != nil {
		return nil, err
	}
	st, err := r.drive(ctx)
	return r.ended(ctx, st, err)
}

// wrun is one run's state in workflow code. Coroutines of one workflow
// run one at a time, so it needs no lock.
type wrun struct {
	w      *Workflow
	e      *entry
	f      *flow.Flow
	runID  string
	in     Start
	input  any
	m      sched.Machine
	budget sched.Budget
	// outputs and raw are the settled steps' outputs, decoded and as
	// canonical JSON; errs each step's last error.
	outputs map[string]any
	raw     map[string]json.RawMessage
	errs    map[string]string
	// answers are the decisions taken (UpdateDecide), by step index, not
	// yet carried out; inbox the steps decided since the run last waited.
	answers map[int]*answer
	inbox   []int
	// agents are the sessions of agent steps (agent.go), by step index.
	agents map[int]*agentRun
	// rounds are the rounds a repeat step settled before one of them
	// parked it in doubt, by step index (runRepeat).
	rounds map[int][]json.RawMessage
	// roundAt is, by step index, where a repeat step's rounds stopped,
	// for its fallback (stoppedAt).
	roundAt map[int]call
	// kept are a for_each step's items that settled before it parked in
	// doubt, by step and item; fbDoubt a step parked because its fallback
	// call is in doubt (doubt.go).
	kept    map[int]map[int]json.RawMessage
	fbDoubt map[int]*fbPending
	// plans are the plans of plan steps parked in doubt, from their lost
	// attempts' heartbeats, by step index (lostwork.go).
	plans map[int]*lostPlan
	// first is the first attempt of a step a retry re-opened (its last
	// attempt's number + 1), by step index, until it starts.
	first map[int]int
	// retryOpen: the failed run takes UpdateRetry; retryReq is the one it
	// took, not yet carried out.
	retryOpen bool
	retryReq  *Decision
	// closeFailed: a failed run closes as a failed workflow carrying its
	// state (closed), not as a completed one.
	closeFailed bool
	// closedFailed: the failed run's workflow is closing (closed); its
	// queries, answered on the closed workflow, offer the retry as a new
	// execution (closedRetry).
	closedFailed bool
	// published is the status last published as AttrStatus (publish).
	published journal.RunStatus
	// saga is the remediation of a run with on_failure: compensate
	// (saga.go).
	saga saga
	// gateArgs are the calls a step parked by the policy gate waits to
	// have approved, by step index; gated whether the run's flow has a
	// gate (askgate.go).
	gateArgs map[int]json.RawMessage
	gated    *bool
	// awaiting counts the step coroutines waiting on a premise
	// (awaitUnits).
	awaiting int
	// stoppedHeld are the steps a rejected premise stopped (heldStop),
	// until the rejection failed the run (endHeld).
	stoppedHeld []outcome
	// failure is the run's first failure.
	failure *RunError
	status  journal.RunStatus
	// clock is the run's budgets.timeout (runtimeout.go).
	clock runClock
}

type answer struct {
	a sched.Answered
	d Decision
}

// outcome is what a step's coroutine reports.
type outcome struct {
	i        int
	status   journal.StepStatus
	out      json.RawMessage
	attempts int
	err      *failure
	// lastErr is the failure on_error absorbed (defaulted, fell_back).
	lastErr string
	// park, when set, parks the step for a person (an escalation, or an
	// attempt in doubt: KindUnknown).
	park store.ApprovalKind
	// calls, with park, are an agent step's calls that wait: the step
	// waits on each (approval "step/turn<t>/call<c>").
	calls []agent.Pending
	// carry: the run continues as new (carry.go); the step did not settle.
	carry bool
	// gateArgs, with park, are the calls the policy gate asks approval of
	// (askgate.go).
	gateArgs json.RawMessage
}

// drive carries out the machine's commands until the run settles.
func (r *wrun) drive(ctx workflow.Context) (*Status, error) {
	r.status = journal.RunRunning
	r.publish(ctx)
	r.m.SettleRun(journal.RunRunning)
	r.m.Seed()
	sctx := r.startClock(ctx) // the steps' context: cancelled when the run's timeout passes
	results := workflow.NewChannel(ctx)
	inFlight := 0
	for {
		switch cmd := r.m.Next(inFlight); cmd.Op {
		case sched.Start:
			if r.shouldContinue(ctx, inFlight) {
				return nil, r.continueAsNew(ctx, -1) // the step starts in the new run
			}
			if r.dispatch(sctx, cmd.Step, results) {
				inFlight++
			}
			continue
		case sched.Await:
			var o outcome
			results.Receive(ctx, &o)
			inFlight--
			if o.carry {
				return nil, r.continueAsNew(ctx, o.i)
			}
			r.settle(o)
			continue
		}
		// sched.Finish
		r.endHeld()
		r.stopClock()
		class := fault.Class("")
		if r.failure != nil {
			class = fault.Class(r.failure.Class)
		}
		st := r.m.Outcome(r.failure != nil, class, false)
		if st == journal.RunFailed && r.compensates(ctx) {
			if err := r.compensate(ctx); err != nil {
				return nil, err
			}
		}
		r.m.SettleRun(st)
		r.status = st
		r.publish(ctx)
		if st == journal.RunFailed && r.awaitRetry(ctx) {
			r.status = journal.RunRunning
			r.publish(ctx)
			r.m.SettleRun(journal.RunRunning)
			r.m.Recount()
			r.m.Seed()
			sctx = r.rearmClock(ctx)
			continue
		}
		if st == journal.RunFailed && r.closeFailed {
			return nil, r.closed(ctx, nil)
		}
		if st != journal.RunWaiting {
			return r.snapshot(), nil
		}
		if len(r.inbox) == 0 && r.shouldContinue(ctx, inFlight) {
			return nil, r.continueAsNew(ctx, -1)
		}
		// a person (or an agent) answers through UpdateDecide.
		if err := workflow.Await(ctx, func() bool { return len(r.inbox) > 0 }); err != nil {
			return nil, err
		}
		for _, i := range r.inbox {
			r.m.Requeue(i)
		}
		r.inbox = r.inbox[:0]
		r.status = journal.RunRunning
		r.publish(ctx)
		r.m.SettleRun(journal.RunRunning)
		r.m.Recount()
		r.m.Seed()
		sctx = r.rearmClock(ctx)
	}
}

// dispatch decides whether step i runs (Admit, then Answer with its latest
// decision) and starts its coroutine; false when it settled or parked here.
func (r *wrun) dispatch(ctx workflow.Context, i int, results workflow.Channel) bool {
	s := r.f.Steps[i]
	adm := r.m.Admit(context.Background(), i, r.scope())
	switch adm.Verdict {
	case sched.Skip:
		r.m.Settle(i, journal.StepSkipped, r.m.Attempts(i), "")
		return false
	case sched.Fail:
		r.fail(s.ID, fault.Business, adm.Reason)
		r.m.Settle(i, journal.StepFailed, r.m.Attempts(i), "")
		return false
	}
	first, approved := 1, false
	if n := r.first[i]; n > 0 {
		first = n // re-opened by a retry: its next attempt
		delete(r.first, i)
	}
	var got sched.Answered
	a := r.answers[i]
	if a != nil {
		got = a.a
	}
	ans := r.m.Answer(i, got)
	if ans.Decided {
		delete(r.answers, i)
	}
	switch ans.Do {
	case sched.AskPerson:
		r.m.Park(i, store.KindApproval, r.m.Attempts(i))
		return false
	case sched.AskAgent:
		r.m.Park(i, store.KindSubmission, r.m.Attempts(i))
		return false
	case sched.Approve:
		out := map[string]any{"approved": true, "comment": a.d.Comment, "decided_by": a.d.By}
		r.settleOutput(i, out, journal.StepSucceeded, r.m.Attempts(i))
		return false
	case sched.SettleOutput:
		var out any
		if err := json.Unmarshal(a.d.Output, &out); err != nil {
			r.settleFailed(i, r.m.Attempts(i), &failure{Class: string(fault.Business), Message: "settled output is not JSON: " + err.Error()})
			return false
		}
		if err := engine.CheckSettled(r.f, i, out); err != nil {
			r.settleFailed(i, r.m.Attempts(i), &failure{Class: string(fault.ClassOf(err)), Message: err.Error()})
			return false
		}
		r.settleOutput(i, out, journal.StepSucceeded, r.m.Attempts(i))
		return false
	case sched.Reject:
		msg := "rejected"
		if a.d.By != "" {
			msg += " by " + a.d.By
		}
		if a.d.Comment != "" {
			msg += ": " + a.d.Comment
		}
		if ans.Escalated && r.errs[s.ID] != "" {
			msg = r.errs[s.ID] + " (escalated to a person, and " + msg + ")"
		}
		r.settleFailed(i, r.m.Attempts(i), &failure{Class: string(fault.Business), Message: msg})
		return false
	case sched.RunAgain:
		first = ans.Attempt
	case sched.RunApproved:
		approved = true
	}
	r.m.Start(i, first)
	st := r.settledView()
	workflow.Go(ctx, func(ctx workflow.Context) {
		results.Send(ctx, r.runStep(ctx, i, first, approved, st))
	})
	return true
}

// settle takes a step's outcome.
func (r *wrun) settle(o outcome) {
	if o.park != "" && len(o.calls) > 0 {
		for _, p := range o.calls {
			kind := store.KindApproval
			if p.Kind == string(store.KindUnknown) {
				kind = store.KindUnknown
			}
			r.m.ParkCall(o.i, r.f.Steps[o.i].ID+"/"+p.Ref, kind, o.attempts)
		}
		return
	}
	if o.park != "" {
		r.m.Park(o.i, o.park, o.attempts)
		if o.gateArgs != nil {
			r.gateArgs[o.i] = o.gateArgs
		}
		if o.err != nil {
			r.errs[r.f.Steps[o.i].ID] = o.err.Message
		}
		return
	}
	if o.err != nil {
		r.settleFailed(o.i, o.attempts, o.err)
		return
	}
	if o.status == journal.StepFailed { // stopped by a rejected premise: settled once the run failed (endHeld)
		r.stoppedHeld = append(r.stoppedHeld, o)
		return
	}
	if o.lastErr != "" {
		r.errs[r.f.Steps[o.i].ID] = o.lastErr
	}
	var out any
	_ = json.Unmarshal(o.out, &out) // canonical JSON the activity made
	r.settleOutput(o.i, out, o.status, o.attempts)
}

// settleOutput settles step i with out.
func (r *wrun) settleOutput(i int, out any, status journal.StepStatus, attempts int) {
	buf, err := value.Canonical(out)
	if err != nil {
		r.settleFailed(i, attempts, &failure{Class: string(fault.Business), Message: "output is not JSON: " + err.Error()})
		return
	}
	id := r.f.Steps[i].ID
	r.outputs[id], r.raw[id] = out, buf
	r.m.Settle(i, status, attempts, value.Digest(buf))
}

// settleFailed settles step i failed (blocked for a policy failure), which
// fails the run.
func (r *wrun) settleFailed(i, attempts int, f *failure) {
	st := journal.StepFailed
	if f.Class == string(fault.Policy) {
		st = journal.StepBlocked
	}
	id := r.f.Steps[i].ID
	r.errs[id] = f.Message
	r.fail(id, fault.Class(f.Class), f.Message)
	r.m.Settle(i, st, attempts, "")
}

// fail records the run's first failure; nothing more starts.
func (r *wrun) fail(step string, class fault.Class, msg string) {
	if r.failure == nil {
		r.failure = &RunError{Class: string(class), Step: step, Message: msg}
	}
	r.m.Stop()
}

// scope is the run's scope for when and for_each (engine.Scope).
func (r *wrun) scope() map[string]any {
	return engine.Scope(r.f, &engine.Settled{Input: r.input, Outputs: r.outputs, Statuses: r.statuses()})
}

func (r *wrun) statuses() map[string]journal.StepStatus {
	out := make(map[string]journal.StepStatus, len(r.f.Steps))
	for i, s := range r.f.Steps {
		out[s.ID] = r.m.Status(i)
	}
	return out
}

// view is what an activity is told the run settled: a snapshot, taken
// when its step starts, so that every attempt of the step sees the same.
type view struct {
	outputs  map[string]json.RawMessage
	statuses map[string]string
}

func (r *wrun) settledView() view {
	v := view{outputs: make(map[string]json.RawMessage, len(r.raw)), statuses: make(map[string]string, len(r.f.Steps))}
	for _, s := range r.f.Steps {
		if raw, ok := r.raw[s.ID]; ok {
			v.outputs[s.ID] = raw
		}
		v.statuses[s.ID] = string(r.m.Status(s.Index))
	}
	return v
}

// snapshot is the run's Status.
func (r *wrun) snapshot() *Status {
	sp := r.budget.Spent()
	st := &Status{RunID: r.runID, Flow: r.f.Name, Status: string(r.shownStatus()), Error: r.failure, Outputs: map[string]json.RawMessage{},
		Usage: &Usage{Iterations: sp.Iterations, LLMCalls: sp.LLMCalls, TokensIn: sp.TokensIn, TokensOut: sp.TokensOut}}
	for i, s := range r.f.Steps {
		st.Steps = append(st.Steps, StepStatus{ID: s.ID, Status: string(r.m.Status(i)), Attempts: r.m.Attempts(i), Error: r.errs[s.ID]})
		if raw, ok := r.raw[s.ID]; ok {
			st.Outputs[s.ID] = raw
		}
	}
	return st
}

// errBudget is a budget failure as an attempt's.
func errBudget(err error) *failure {
	return &failure{Class: string(fault.ClassOf(err)), Message: err.Error(), Budget: fault.BudgetOf(err)}
}

var errNoStep = errors.New("no such step")

// stepIndex is the index of the step with id, or errNoStep.
func (r *wrun) stepIndex(id string) (int, error) {
	s := r.f.StepByID(id)
	if s == nil {
		return -1, fmt.Errorf("flow %s has no step %q: %w", r.f.Name, id, errNoStep)
	}
	return s.Index, nil
}
