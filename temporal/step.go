package temporal

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/value"
)

// runStep is step i's coroutine: its attempts (or its items'), then what
// on_error makes of a final failure. first is the first attempt's number
// (a step a person let run again continues after its last), approved that
// a person approved its call. v is what the run settled when it started.
func (r *wrun) runStep(ctx workflow.Context, i, first int, approved bool, v view) outcome {
	s := r.f.Steps[i]
	if o, ok := r.resumeFallback(ctx, i, max(first-1, 1), v); ok {
		return o
	}
	if s.Repeat != nil {
		return r.runRepeat(ctx, i, first, v)
	}
	if o := r.gatePark(ctx, i, first, &approved, v); o != nil {
		return *o
	}
	if s.ForEach != nil {
		return r.runItems(ctx, i, first, approved, v)
	}
	if s.Type == flow.Agent && workflow.GetVersion(ctx, agentVersion, workflow.DefaultVersion, 1) == 1 {
		return r.runAgent(ctx, i, first, v)
	}
	out, f, attempts, doubt := r.unit(ctx, i, -1, first, approved, v)
	switch {
	case doubt:
		return outcome{i: i, attempts: attempts, park: store.KindUnknown, err: f}
	case f == nil:
		return outcome{i: i, status: journal.StepSucceeded, out: out, attempts: attempts}
	}
	return r.recover(ctx, i, attempts, f, v)
}

// recover carries out what on_error makes of step i's final failure f
// (sched.RecoverStep).
func (r *wrun) recover(ctx workflow.Context, i, attempts int, f *failure, v view) outcome {
	s := r.f.Steps[i]
	if f.Premise {
		// the run stops first, whatever on_error says: the step waits for
		// a person and the machine pauses the whole run (sched.Machine.Held).
		return outcome{i: i, attempts: attempts, park: store.KindPremise, err: f}
	}
	switch sched.RecoverStep(s, fault.Class(f.Class), false) {
	case sched.EscalateStep:
		return outcome{i: i, attempts: attempts, park: store.KindEscalation, err: f}
	case sched.DefaultStep:
		out, err := value.Canonical(s.FallbackValue)
		if err != nil {
			return outcome{i: i, attempts: attempts, err: &failure{Class: string(fault.Business), Message: "fallback_value: " + err.Error()}}
		}
		return outcome{i: i, status: journal.StepDefaulted, out: out, attempts: attempts, lastErr: f.Message}
	case sched.FallBack:
		return r.stepFallback(ctx, r.fallbackCall(i), attempts, f, v)
	}
	return outcome{i: i, attempts: attempts, err: f}
}

// fallbackFailed is the failure of a fallback that failed after what (the
// step, or one of its items) failed with f: the fallback's class.
func fallbackFailed(ff, f *failure, what string) *failure {
	return &failure{Class: ff.Class, Message: fmt.Sprintf("%s (after the %s failed: %s)", ff.Message, what, f.Message), Budget: ff.Budget}
}

// unit makes the attempts of one execution of step i (the step, or its
// for_each item) as the machine decides: after a failed attempt, Retry
// says whether attempt n+1 starts and when (a durable timer waits until
// then). An attempt whose worker was lost runs again with the same key
// when the step is repeatable (engine.Engine.Repeatable); otherwise it is
// in doubt (doubt), for a person to decide.
func (r *wrun) unit(ctx workflow.Context, i, item, first int, approved bool, v view) (out json.RawMessage, f *failure, attempts int, doubt bool) {
	c := call{i: i, op: opAttempt, item: item, approved: approved}
	if lp := r.takePlan(i, item); lp != nil {
		c.plan, first = lp.Progress, lp.Attempt // its plan's calls keep their keys
	}
	return r.unitOf(ctx, c, first, v)
}

// unitOf is unit for the execution c names (its step, item, or repeat
// round); c's attempt and rerun are unit's.
func (r *wrun) unitOf(ctx workflow.Context, c call, first int, v view) (out json.RawMessage, f *failure, attempts int, doubt bool) {
	i := c.i
	if err := r.budget.Iteration(); err != nil {
		return nil, errBudget(err), first, false
	}
	made, lost := 0, 0
	for attempt := first; ; {
		c.attempt, c.rerun = attempt, lost
		res, ff := r.exec(ctx, c, v)
		if ff == nil {
			return res.Output, nil, attempt, false
		}
		if ff.notRun && lost < lostReruns {
			lost++
			continue // it never ran: the same attempt, with the same key
		}
		if ff.lost {
			r.continuePlan(ctx, &c, ff)
			ok, err := r.e.e.Repeatable(r.f, i)
			if err == nil && !ok && lost < lostReruns && r.checkPlanCalls(ctx, &c, ff, v) {
				lost++
				continue // its plan goes on, the calls in doubt settled
			}
			if err == nil && !ok && (c.item < 0 && c.round == 0 && r.reconciles(ctx, i) || (c.item >= 0 || c.round > 0) && r.checksDoubt(ctx, c)) {
				// its tool's check: may say whether it took effect.
				out, again, df := r.reconcileDoubt(ctx, c, &ff.failure, v)
				switch {
				case df == nil && !again:
					return out, nil, attempt, false
				case again && lost < lostReruns:
					lost++
					continue // the same attempt, with the same key
				case df == nil:
					df = &ff.failure
				}
				return nil, df, attempt, true
			}
			if err != nil || !ok || lost >= lostReruns {
				r.parkPlan(c)
				return nil, &ff.failure, attempt, true
			}
			lost++
			continue // the same attempt, with the same key
		}
		now := workflow.Now(ctx)
		next := r.m.Retry(i, fault.Class(ff.Class), attempt, made, time.Duration(ff.RetryAfter), false, now)
		if !next.Again || ff.Premise { // a failed premise is never retried
			return nil, &ff.failure, attempt, false
		}
		made, lost = made+1, 0
		c.plan = nil // a new attempt plans anew, as a local retry does
		if wait := next.At.Sub(now); wait > 0 {
			if err := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: fmt.Sprintf("%s: retry %d", r.f.Steps[i].ID, made)}).Get(ctx, nil); err != nil {
				return nil, &failure{Class: string(fault.Cancelled), Message: err.Error()}, attempt, false
			}
		}
		attempt = next.Attempt
	}
}

// runItems carries out a for_each step's items as sched.Items decides:
// index order, at most for_each.concurrency at once, on_error per item.
func (r *wrun) runItems(ctx workflow.Context, i, first int, approved bool, v view) outcome {
	s := r.f.Steps[i]
	res, f := r.exec(ctx, call{i: i, op: opItems, item: -1}, v)
	if f != nil {
		return r.recover(ctx, i, first, &f.failure, v)
	}
	n := res.Items
	kept := r.takeKept(i)
	settled := map[int]json.RawMessage{}
	outs := make([]any, n)
	itemErrs := make([]*failure, n)
	var (
		m        sched.Items
		failed   *failure
		doubt    bool
		doubtErr *failure
		lastErr  string
		absorbed = n
		attempts = first
		inFlight int
	)
	m.Reset(s, n)
	type itemDone struct {
		u        int
		recover  bool
		out      json.RawMessage
		f        *failure
		attempts int
		doubt    bool
	}
	done := workflow.NewChannel(ctx)
	for {
		// a failed premise elsewhere holds the items not started (hold.go).
		gate, cf := r.holdGate(ctx, inFlight == 0 && m.CanStart(0))
		if cf != nil {
			return outcome{i: i, attempts: attempts, err: cf}
		}
		if gate == sched.UnitsStop && inFlight == 0 && m.CanStart(0) {
			return r.heldStop(i, attempts)
		}
		if u, ok := nextUnit(gate, &m.Fan, inFlight); ok {
			inFlight++
			workflow.Go(ctx, func(ctx workflow.Context) {
				d := itemDone{u: u.Index, recover: u.Op == fan.Recover}
				out, ok := kept[u.Index]
				switch {
				case ok && !d.recover:
					d.out = out // settled before the step parked in doubt
				case d.recover:
					d.out, d.f, d.doubt = r.execFallback(ctx, call{i: i, op: opAttempt, item: u.Index, attempt: 1, fallback: true}, v)
				default:
					d.out, d.f, d.attempts, d.doubt = r.unit(ctx, i, u.Index, first, approved, v)
				}
				done.Send(ctx, d)
			})
			continue
		}
		if inFlight == 0 {
			break
		}
		var d itemDone
		done.Receive(ctx, &d)
		inFlight--
		attempts = max(attempts, d.attempts)
		doubt = doubt || d.doubt
		unit := unitOf(d.u, d.recover)
		class := fault.Class("")
		if d.f != nil {
			class = fault.Class(d.f.Class)
		}
		if d.doubt && doubtErr == nil {
			doubtErr = &failure{Class: string(fault.Transient), Message: fmt.Sprintf("item %d: %s", d.u, d.f.Message)}
		}
		switch m.Settle(unit, d.f != nil, class, doubt) {
		case sched.ItemDone:
			outs[d.u], settled[d.u] = decode(d.out), d.out
			if d.recover && d.u < absorbed {
				absorbed, lastErr = d.u, fmt.Sprintf("item %d: %s", d.u, itemErrs[d.u].Message)
			}
		case sched.ItemDefaulted:
			outs[d.u] = s.FallbackValue
			if d.u < absorbed {
				absorbed, lastErr = d.u, fmt.Sprintf("item %d: %s", d.u, d.f.Message)
			}
		case sched.ItemFallingBack:
			itemErrs[d.u] = d.f
		case sched.ItemFailed:
			if failed == nil {
				ff := *d.f
				if d.recover {
					ff = *fallbackFailed(d.f, itemErrs[d.u], "item")
				}
				ff.Message = fmt.Sprintf("item %d: %s", d.u, ff.Message)
				failed = &ff
			}
		}
	}
	if doubt {
		r.keep(ctx, i, settled)
		msg := "an item's worker was lost while its call ran: whether it took effect is unknown"
		if doubtErr != nil {
			msg += " (" + doubtErr.Message + ")"
		}
		return outcome{i: i, attempts: attempts, park: store.KindUnknown, err: &failure{Class: string(fault.Transient), Message: msg}}
	}
	if failed != nil {
		return r.recover(ctx, i, attempts, failed, v)
	}
	list, err := value.Canonical(outs)
	if err != nil {
		return outcome{i: i, attempts: attempts, err: &failure{Class: string(fault.Business), Message: "output is not JSON: " + err.Error()}}
	}
	if s.Gate != nil || int64(len(list)) > s.MaxOutputBytes {
		if _, ff := r.exec(ctx, call{i: i, op: opCheck, item: -1, output: list}, v); ff != nil {
			return outcome{i: i, attempts: attempts, err: &ff.failure}
		}
	}
	st := journal.StepSucceeded
	if lastErr != "" {
		st = journal.StepDefaulted
		if s.OnError == flow.Fallback {
			st = journal.StepFellBack
		}
	}
	return outcome{i: i, status: st, out: list, attempts: attempts, lastErr: lastErr}
}

// call is one activity the workflow schedules.
type call struct {
	i, item, attempt int
	op               string
	fallback         bool
	approved         bool
	// rerun counts the runs again of an attempt whose worker was lost.
	rerun  int
	output json.RawMessage
	// agent is an opAgent's unit.
	agent *agentIn
	// round is a repeat round (from 1), previous the round before's output.
	round    int
	previous json.RawMessage
	// effect is the call an opCompensate takes back, made the how many
	// times it was made (from 1).
	effect *journal.Effect
	made   int
	// plan is a plan step's plan to continue (lostwork.go), planCall its
	// call in doubt an opReconcile asks about.
	plan     *plan.Progress
	planCall *engine.PlanCall
}

// activityFailure is an activity's error, read back (failureOf).
type activityFailure struct {
	failure
	// lost: its worker was lost while it ran (it may have had its
	// effect); notRun: no worker could run it (it never started).
	lost, notRun bool
	// work is what a lost attempt's heartbeats carried (nil: none).
	work *lostWork
}

// exec schedules one activity and waits for it. Its type is the step's
// kind and id ("tool:charge"; "fallback:charge", "items:each",
// "gate:each", "ask:charge"), its id the call's idempotency key (run/step[item]/attempt,
// package invoke) so that the Temporal UI shows which call of the run it
// is; Temporal never retries it (MaximumAttempts 1): the machine decides.
func (r *wrun) exec(ctx workflow.Context, c call, v view) (attemptOut, *activityFailure) {
	s := r.f.Steps[c.i]
	in := attemptIn{RunID: r.runID, FlowHash: r.in.FlowHash, Op: c.op, Step: c.i, Attempt: c.attempt, Item: c.item,
		Fallback: c.fallback, Approved: c.approved, Input: r.in.Input, Outputs: v.outputs, Statuses: v.statuses, Output: c.output, Agent: c.agent,
		Round: c.round, Previous: c.previous, Effect: c.effect, Plan: c.plan, PlanCall: c.planCall}
	r.budgetIn(&in)
	in.Tier, in.Tainted = r.saga.tier, r.saga.tainted // its floor and taint: the run's, as a local run holds them (risk.go)
	pos := invoke.Position{RunID: r.runID, StepID: s.ID, ForEach: c.item >= 0, Item: c.item, Fallback: c.fallback, Attempt: max(c.attempt, 1)}
	if !c.fallback {
		pos.Round = c.round // a fallback's key has no round (engine.AttemptRequest)
	}
	key := pos.Key()
	name := string(s.Type) + ":" + s.ID
	id := key
	switch {
	case c.op == opItems:
		name, id = "items:"+s.ID, r.runID+"/"+s.ID+"/items"
	case c.op == opCheck:
		name, id = "gate:"+s.ID, r.runID+"/"+s.ID+"/gate"
	case c.op == opAsk:
		name, id = "ask:"+s.ID, key+"/ask"
	case c.op == opReconcile && c.planCall != nil:
		name, id = "check:"+s.ID, c.planCall.Key+"/check"
	case c.op == opReconcile:
		name, id = "check:"+s.ID, key+"/check"
	case c.op == opAgent:
		name, id, key = agentActivity(s.ID, key, c.agent)
	case c.op == opCompensate:
		name, id, key = compensateActivity(s.ID, c.effect, c.made)
	case c.op == opFreeze:
		name, id, key = "freeze:"+s.ID, c.effect.Key+"/freeze", c.effect.Key
	case c.fallback:
		name = "fallback:" + s.ID
	}
	if c.rerun > 0 {
		id += fmt.Sprintf("~%d", c.rerun)
	}
	timeout := s.Timeout
	if c.op == opCompensate || c.op == opFreeze {
		timeout = 0 // the step's timeout is not its compensation's
	}
	if timeout <= 0 {
		timeout = r.w.NoTimeout
		if timeout <= 0 {
			timeout = time.Hour
		}
	} else {
		// the step's timeout is the attempt's own (a transient failure the
		// machine retries); the activity's leaves it time to say so.
		timeout += 30 * time.Second
	}
	beat := r.w.Heartbeat
	if beat <= 0 {
		beat = DefaultHeartbeat
	}
	summary := strings.TrimSpace(fmt.Sprintf("%s %s, key %s", s.Type, s.ID, key))
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          id,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    3 * beat,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             summary,
	})
	var out attemptOut
	err := workflow.ExecuteActivity(actx, name, in).Get(ctx, &out)
	if err == nil {
		r.noteEffects(out.Effects)
		r.charge(out.Spent)
		r.noteRisk(out.Tier, out.Tainted)
		return out, nil
	}
	f, lost, notRun := failureOf(err)
	af := &activityFailure{failure: f, lost: lost, notRun: notRun}
	if w, ok := lostWorkOf(err); ok && lost {
		af.work = &w
		r.noteLost(ctx, w)
	}
	r.noteEffects(f.Effects)
	r.charge(f.Spent)
	r.noteRisk(f.Tier, f.Tainted)
	return attemptOut{}, af
}

// decode is canonical JSON an activity made, as a value.
func decode(raw json.RawMessage) any {
	var v any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

// unitOf is the fan unit of item k (its fallback, when recover).
func unitOf(k int, recover bool) fan.Unit {
	u := fan.Unit{Index: k}
	if recover {
		u.Op = fan.Recover
	}
	return u
}
