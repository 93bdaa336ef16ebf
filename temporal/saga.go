package temporal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
)

// The saga on Temporal. A flow with on_failure: compensate has its
// attempts report the effect records of the calls they made (attemptOut.
// Effects: the tool, effect, tags, key, and the compensation rendered over
// the call's args and output by the engine, safety.Compensation), which the
// workflow keeps in the order their activities completed (noteEffects).
// When such a run fails, the workflow takes back what it did as a local run
// does (engine.SagaRemedies: latest first, each call classified by
// engine.Classify):
//
//   - undo or compensate: one activity ("compensate:STEP" or "undo:STEP",
//     id "<call key>/compensate"), which the worker makes with the
//     engine's own code (engine.Compensate: the args, the key, the gate,
//     the controls). Temporal never retries it (MaximumAttempts 1). One
//     whose worker was lost is made again with the same key when its tool
//     is idempotent or reads (engine.RemedyRepeatable); otherwise it is
//     unknown, for a person. One that failed, or that the gate or the
//     controls hold, is escalated to a person.
//   - freeze (irreversible, or a call that did not return ok): nothing to
//     make; a person is asked when its tool is tagged money, compliance or
//     user-facing (safety.Escalates).
//
// A person answers an escalation through the update decide, under the id
// a local run uses (engine.RemedyEscalation: "take/1/compensate"):
// approve makes it once more (a failure of that is escalation
// "…/compensate/2"), settle says a person took it back by hand, reject
// leaves it as it is. While one waits the run is waiting; once none does,
// the run ends failed, with the error it failed with.

// changeSaga: a failed run with on_failure: compensate takes back its
// calls (before, it ended failed at once).
const changeSaga = "rein-saga"

// saga is a run's remediation state.
type saga struct {
	// effects are the calls with an effect, in the order their
	// activities completed; at the index of their key in at (a later
	// record of a key replaces the earlier one, as in the journal).
	effects []*journal.Effect
	at      map[string]int
	// done are the keys remediated (done, frozen, or resolved by a
	// person); made counts how often each key's undo or compensation was
	// made; waiting are the escalations a person has to decide, by key.
	done map[string]bool
	// taken are the keys among done whose call was taken back: its undo
	// or compensation made, or settled by a person (a retry makes their
	// steps again: retrytaken.go).
	taken   map[string]bool
	made    map[string]int
	waiting map[string]*sagaEscalation
	// tier is the run's highest risk tier its activities reported
	// (attemptOut.Tier): the floor of every later activity's calls, its
	// compensations' too; tainted the origins they tainted (risk.go).
	tier    int
	tainted []invoke.Taint
}

func (s *saga) init() {
	if s.done == nil {
		s.done, s.made, s.waiting, s.taken = map[string]bool{}, map[string]int{}, map[string]*sagaEscalation{}, map[string]bool{}
	}
}

// sagaEscalation is one remediation that waits on a person.
type sagaEscalation struct {
	ID   string             `json:"id"`
	Kind store.ApprovalKind `json:"kind"`
	Why  string             `json:"why"`
	// Decision is the person's, once taken (decide).
	Decision *Decision `json:"decision,omitempty"`
}

// noteEffects keeps the effect records an activity reported, in a flow
// whose failed runs are compensated.
func (r *wrun) noteEffects(effs []journal.Effect) {
	if r.f.OnFailure != flow.OnFailureCompensate {
		return // nothing to take back: the history is their record
	}
	for i := range effs {
		e := effs[i]
		if r.saga.at == nil {
			r.saga.at = map[string]int{}
		}
		if k, ok := r.saga.at[e.Key]; ok {
			r.saga.effects[k] = &e
			continue
		}
		r.saga.at[e.Key] = len(r.saga.effects)
		r.saga.effects = append(r.saga.effects, &e)
	}
}

// compensates reports whether the failed run takes its calls back: its
// flow says on_failure: compensate and the run was recorded after the
// change (asked only there).
func (r *wrun) compensates(ctx workflow.Context) bool {
	return r.f.OnFailure == flow.OnFailureCompensate && version(ctx, changeSaga) == 1
}

// compensate carries out the saga of the failed run (see above) until
// nothing waits on a person.
func (r *wrun) compensate(ctx workflow.Context) error {
	r.saga.init()
	for {
		waiting := 0
		for _, rm := range engine.SagaRemedies(r.saga.effects) {
			eff := rm.Effect
			if r.saga.done[eff.Key] {
				continue
			}
			approved := false
			if e := r.saga.waiting[eff.Key]; e != nil {
				if e.Decision == nil {
					waiting++
					continue
				}
				delete(r.saga.waiting, eff.Key)
				if e.Decision.Action != ActionApprove || rm.Action == engine.ActFreeze {
					r.saga.done[eff.Key] = true // settled by hand, or left as it is
					r.saga.taken[eff.Key] = e.Decision.Action == ActionSettle && rm.Action != engine.ActFreeze
					continue
				}
				approved = true // made once more, as the person approved it
			}
			if rm.Action == engine.ActFreeze {
				r.registerFrozen(ctx, &rm)
				if safety.Escalates(eff.Tags) {
					r.escalateRemedy(&rm, store.KindEscalation, fmt.Sprintf("call %s of tool %s (tagged %s) cannot be taken back: it is frozen; a person must put it right, then approve (done) or reject",
						eff.Key, eff.Tool, strings.Join(eff.Tags, ", ")))
					waiting++
					continue
				}
				r.saga.done[eff.Key] = true
				continue
			}
			if r.compensateOne(ctx, &rm, approved) {
				r.saga.done[eff.Key] = true
				r.saga.taken[eff.Key] = true
			} else {
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		r.status = journal.RunWaiting
		r.publish(ctx)
		if r.sagaShouldContinue(ctx) {
			return r.continueAsNew(ctx, -1) // the new run waits on the same escalations (carrySaga)
		}
		if err := workflow.Await(ctx, r.sagaDecided); err != nil {
			return err
		}
		r.status = journal.RunRunning
		r.publish(ctx)
	}
}

// sagaDecided reports whether a person decided an escalation of the saga.
func (r *wrun) sagaDecided() bool {
	for _, e := range r.saga.waiting {
		if e.Decision != nil {
			return true
		}
	}
	return false
}

// compensateOne makes the undo or compensation of rm's call as one
// activity and reports whether it was made; otherwise it is escalated.
func (r *wrun) compensateOne(ctx workflow.Context, rm *engine.Remedy, approved bool) bool {
	eff := &rm.Effect
	r.saga.made[eff.Key]++
	i, err := r.stepIndex(eff.StepID)
	if err != nil {
		r.escalateRemedy(rm, store.KindEscalation, fmt.Sprintf("the %s of call %s (tool %s) cannot be made: %v; settle once a person took it back by hand, or reject to leave it", rm.Action, eff.Key, eff.Tool, err))
		return false
	}
	v := r.settledView()
	for lost := 0; ; {
		_, af := r.exec(ctx, call{i: i, op: opCompensate, item: -1, effect: eff, approved: approved, rerun: lost, made: r.saga.made[eff.Key]}, v)
		switch {
		case af == nil:
			return true
		case af.notRun && lost < lostReruns:
			lost++
			continue // it never ran: the same call, with the same key
		case af.lost && r.e.e.RemedyRepeatable(eff) && lost < lostReruns:
			lost++
			continue // safe to make again with the same key
		case af.lost:
			r.escalateRemedy(rm, store.KindUnknown, fmt.Sprintf("the %s of call %s (tool %s, by tool %s) was in flight when its worker was lost (%s): whether it took effect is unknown; approve to make it again, settle once a person made sure it is taken back, or reject to leave it",
				rm.Action, eff.Key, eff.Tool, eff.Compensation.Tool, af.Message))
			return false
		}
		r.escalateRemedy(rm, store.KindEscalation, fmt.Sprintf("the %s of call %s (tool %s) failed: %s; it is not retried blindly: approve to make it once more, settle once a person took it back by hand, or reject to leave it",
			rm.Action, eff.Key, eff.Tool, af.Message))
		return false
	}
}

// escalateRemedy makes rm's remediation wait on a person, under the id a
// local run gives it.
func (r *wrun) escalateRemedy(rm *engine.Remedy, kind store.ApprovalKind, why string) {
	id := engine.RemedyEscalation(r.runID, rm.Effect.Key, rm.Action, r.saga.made[rm.Effect.Key])
	r.saga.waiting[rm.Effect.Key] = &sagaEscalation{ID: id, Kind: kind, Why: why}
}

// sagaWaiting is the escalation of the saga named id that waits on a
// person's decision, or nil.
func (r *wrun) sagaWaiting(id string) *sagaEscalation {
	for _, e := range r.saga.waiting {
		if e.ID == id && e.Decision == nil {
			return e
		}
	}
	return nil
}

// sagaPending lists the saga's escalations that wait, by id.
func (r *wrun) sagaPending() []Pending {
	var out []Pending
	for _, e := range r.saga.waiting {
		if e.Decision == nil {
			out = append(out, Pending{Step: e.ID, Kind: string(e.Kind), Error: e.Why})
		}
	}
	slices.SortFunc(out, func(a, b Pending) int { return strings.Compare(a.Step, b.Step) })
	return out
}

// validateSaga refuses a decision on a saga's escalation it cannot take:
// an unknown action, a settle whose output is given but not JSON.
func validateSaga(e *sagaEscalation, d Decision) error {
	switch d.Action {
	case ActionApprove, ActionReject:
	case ActionSettle:
		if len(d.Output) > 0 && !json.Valid(d.Output) {
			return fmt.Errorf("settle %s: the output, when given, must be JSON", e.ID)
		}
	default:
		return fmt.Errorf("action %q: approve, reject or settle", d.Action)
	}
	return nil
}

// compensateActivity names the activity of the undo or compensation of
// eff (a call of step): its type "compensate:STEP" (or "undo:STEP"), its
// id and key the call's key extended with the action; made > 1 (made
// again after a person approved) extends the id.
func compensateActivity(step string, eff *journal.Effect, made int) (name, id, key string) {
	kind := "compensate"
	if eff.Compensation != nil {
		kind = eff.Compensation.Kind
	}
	key = eff.Key + "/" + kind
	id = key
	if made > 1 {
		id += fmt.Sprintf("#%d", made)
	}
	return kind + ":" + step, id, key
}
