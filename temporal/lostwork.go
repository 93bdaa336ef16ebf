package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
)

// An attempt's heartbeats carry what the workflow needs should its worker
// be lost (lostWork): the server keeps the last details an activity
// recorded and hands them back with its heartbeat timeout
// (temporal.TimeoutError.LastHeartbeatDetails). A call that returned
// before the worker was lost is thus known to the workflow, and in a run
// recorded after changeLostEffects a saga takes it back as it takes back
// a call whose activity reported it.

// lostWork is an attempt's heartbeat details: the effect records of the
// calls it made that returned (effectLog), and for a plan step its plan
// and the plan steps that succeeded, with their outputs, and the calls
// made and not returned (engine.PlanLog). No other output is sent.
type lostWork struct {
	Effects []journal.Effect `json:"effects,omitempty"`
	// Plan is dropped (nil) when it would make the details larger than
	// maxLostPlan: the plan step is then run again from its start, or
	// parked, as before changeLostPlan.
	Plan     *plan.Progress    `json:"plan,omitempty"`
	InFlight []engine.PlanCall `json:"in_flight,omitempty"`
}

// maxLostPlan bounds a plan's progress in an attempt's heartbeat details
// (its plan and its completed steps' outputs, as JSON).
const maxLostPlan = 64 << 10

// workOf is the details an attempt sends: effs's effect records and
// plans's plan.
func workOf(effs *effectLog, plans *engine.PlanLog) lostWork {
	w := lostWork{Effects: effs.list()}
	w.Plan, w.InFlight = plans.Progress()
	if w.Plan != nil {
		if b, err := json.Marshal(w.Plan); err != nil || len(b) > maxLostPlan {
			w.Plan = nil
		}
	}
	return w
}

// recordBeat sends details as an activity heartbeat; a test's hook stands
// in for it to see what an attempt recorded.
type recordBeat func(ctx context.Context, details lostWork)

// sendBeat is the SDK's heartbeat. The SDK throttles heartbeats (one
// beat, WorkerOptions) and sends the latest details held back once the
// throttle ends, so the server holds an attempt's details at most a beat
// after they changed.
func sendBeat(ctx context.Context, details lostWork) { activity.RecordHeartbeat(ctx, details) }

// lostWorkOf reads the heartbeat details of an activity whose worker was
// lost (err a heartbeat timeout); ok is false when it recorded none (a
// worker from before lostWork, or one lost before it recorded any).
func lostWorkOf(err error) (w lostWork, ok bool) {
	var te *temporal.TimeoutError
	if !errors.As(err, &te) || !te.HasLastHeartbeatDetails() {
		return lostWork{}, false
	}
	if te.LastHeartbeatDetails(&w) != nil {
		return lostWork{}, false
	}
	return w, true
}

// noteLost notes, in a run recorded after changeLostEffects, the effect
// records a lost activity's heartbeats carried (w) as a reported
// activity's are noted (noteEffects): the saga takes them back. The
// version is asked only when there are some in a flow that compensates,
// so a history whose lost activities recorded none replays as before.
func (r *wrun) noteLost(ctx workflow.Context, w lostWork) {
	if len(w.Effects) == 0 || r.f.OnFailure != flow.OnFailureCompensate || version(ctx, changeLostEffects) == workflow.DefaultVersion {
		return
	}
	r.noteEffects(w.Effects)
}

// continuePlan makes c, a plan step's attempt whose worker was lost (ff),
// continue the plan its heartbeats carried, in a run recorded after
// changeLostPlan: made again (its plan's tools all safe to repeat, or a
// person approved it), it runs that plan as its number, so its calls keep
// their keys, and the plan steps that succeeded are not made again. ff's
// message names the calls that were in flight, for the person who
// decides.
func (r *wrun) continuePlan(ctx workflow.Context, c *call, ff *activityFailure) {
	if ff.work == nil || ff.work.Plan == nil || c.item >= 0 || r.f.Steps[c.i].Type != flow.Plan || version(ctx, changeLostPlan) == workflow.DefaultVersion {
		return
	}
	c.plan = ff.work.Plan
	msg := fmt.Sprintf("; plan %d had %d plan steps succeeded (kept, not made again)", c.plan.Number, len(c.plan.Completed))
	for _, pc := range ff.work.InFlight {
		msg += fmt.Sprintf("; plan step %s of plan %d (tool %s, idempotency key %s) was in flight", pc.PlanStep, pc.Plan, pc.Tool, pc.Key)
	}
	ff.Message += msg
}

// lostPlan is a plan step's plan to continue, kept while the step waits
// for a person, and the attempt it was lost in: continued, the plan runs
// in that attempt again, so that its calls keep their keys.
type lostPlan struct {
	Progress *plan.Progress `json:"progress"`
	Attempt  int            `json:"attempt"`
}

// parkPlan keeps the plan c continues while its step waits for a person
// (takePlan).
func (r *wrun) parkPlan(c call) {
	if c.plan == nil {
		return
	}
	if r.plans == nil {
		r.plans = map[int]*lostPlan{}
	}
	r.plans[c.i] = &lostPlan{Progress: c.plan, Attempt: c.attempt}
}

// takePlan hands step i's kept plan to its next execution (nil: none; an
// item's never).
func (r *wrun) takePlan(i, item int) *lostPlan {
	if item >= 0 {
		return nil
	}
	p := r.plans[i]
	delete(r.plans, i)
	return p
}

// checkPlanCalls asks the check of each call c's plan had in flight when
// its worker was lost (ff), as a local resume asks them (engine.Reconcile
// with the plan call): one that took effect joins the plan's succeeded
// steps with the check's output; one that did not, which may be made
// again, is left to the plan, which makes it with its key. It reports
// whether every call was so settled; otherwise (a tool without a check,
// a check that cannot say) ff's message says why and the step goes to a
// person.
func (r *wrun) checkPlanCalls(ctx workflow.Context, c *call, ff *activityFailure, v view) bool {
	if c.plan == nil || ff.work == nil || len(ff.work.InFlight) == 0 {
		return false
	}
	for _, pc := range ff.work.InFlight {
		if _, check := r.e.e.ReconcilesPlanCall(pc); !check {
			return false
		}
	}
	p := *c.plan
	p.Completed = append([]plan.StepResult(nil), c.plan.Completed...)
	for _, pc := range ff.work.InFlight {
		res, af := r.exec(ctx, call{i: c.i, op: opReconcile, item: -1, attempt: c.attempt, approved: c.approved, plan: c.plan, planCall: &pc}, v)
		switch {
		case af != nil || res.Reconciled == nil:
			return false
		case res.Reconciled.Happened:
			p.Completed = append(p.Completed, plan.StepResult{ID: pc.PlanStep, Tool: pc.Tool, Output: decode(res.Output)})
		case !res.Reconciled.Again:
			if res.Reconciled.Reason != "" {
				ff.Message += "; plan step " + pc.PlanStep + ": " + res.Reconciled.Reason
			}
			return false
		}
	}
	c.plan = &p
	return true
}
