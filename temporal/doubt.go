package temporal

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// Calls in doubt other than a plain tool step's (reconcile.go): a for_each
// item's call, an item's fallback, a repeat round's call, a step's
// fallback. In a run recorded after changeDoubt each is decided as a local
// resume decides it (engine's reconcile: the item's, the round's, the
// fallback's), by engine.ReconcilesCall and engine.Reconcile: made again
// with the same key when its tool is safe to repeat; asked of its tool's
// check: when it declares one (took effect: the check's output; did not,
// and a person approved it: made again); otherwise in doubt, for a person.
// What settled is kept while the step waits: a for_each step's items that
// finished (wrun.kept), a step's own failure whose fallback is in doubt
// (wrun.fbDoubt), as a repeat step's rounds are (wrun.rounds).

// fbPending is a step (outside for_each) parked because its fallback call
// is in doubt: approved, the step goes straight to its fallback, made again
// with its one key (its own call failed for good and is not made again).
type fbPending struct {
	// Failure is the step's own failure, which on_error took to its
	// fallback.
	Failure failure `json:"failure"`
	// Round and Previous are a repeat step's round its rounds stopped at
	// and what it read as previous (the fallback's scope).
	Round    int             `json:"round,omitempty"`
	Previous json.RawMessage `json:"previous,omitempty"`
}

// carryDoubt is what a step parked in doubt keeps, carried over a
// continue-as-new (Carry.Doubt).
type carryDoubt struct {
	Items    map[int]json.RawMessage `json:"items,omitempty"`
	Fallback *fbPending              `json:"fallback,omitempty"`
	// Plan is a plan step's plan to continue (wrun.plans, lostwork.go).
	Plan *lostPlan `json:"plan,omitempty"`
}

// checksDoubt reports whether the call in doubt c (a for_each item's or a
// repeat round's) is asked of its tool's check: before a person, in a run
// recorded after changeDoubt.
func (r *wrun) checksDoubt(ctx workflow.Context, c call) bool {
	_, check, err := r.e.e.ReconcilesCall(r.f, c.i, false)
	return err == nil && check && version(ctx, changeDoubt) == 1
}

// execFallback makes fallback call c (a step's, or item c.item's) as exec
// does. One whose worker was lost is, in a run recorded after changeDoubt,
// made again with the same key when its tool is safe to repeat, asked of
// its tool's check: when it declares one (reconcileDoubt), and otherwise
// in doubt (doubt), f saying why; before that change, it failed.
func (r *wrun) execFallback(ctx workflow.Context, c call, v view) (out json.RawMessage, f *failure, doubt bool) {
	for lost := 0; ; lost++ {
		c.rerun = lost
		res, ff := r.exec(ctx, c, v)
		if ff == nil {
			return res.Output, nil, false
		}
		if !ff.lost || version(ctx, changeDoubt) == workflow.DefaultVersion {
			return nil, &ff.failure, false
		}
		again, check, err := r.e.e.ReconcilesCall(r.f, c.i, true)
		if err == nil && again && lost < lostReruns {
			continue // the same call, with the same key
		}
		if err != nil || !check {
			return nil, &ff.failure, true
		}
		out, again, df := r.reconcileDoubt(ctx, c, &ff.failure, v)
		switch {
		case df == nil && !again:
			return out, nil, false
		case again && lost < lostReruns:
			continue
		case df == nil:
			df = &ff.failure
		}
		return nil, df, true
	}
}

// stepFallback carries out step i's fallback after its own failure f
// (on_error: fallback; c its call): fell back with its output, failed, or
// — its call in doubt — parked unknown for a person, the step's failure
// kept (fbPending) so that approving it makes the fallback again.
func (r *wrun) stepFallback(ctx workflow.Context, c call, attempts int, f *failure, v view) outcome {
	out, ff, doubt := r.execFallback(ctx, c, v)
	switch {
	case doubt:
		if r.fbDoubt == nil {
			r.fbDoubt = map[int]*fbPending{}
		}
		r.fbDoubt[c.i] = &fbPending{Failure: *f, Round: c.round, Previous: c.previous}
		g := *ff
		g.Message = "its fallback's worker was lost while its call ran: " + g.Message + " (after the step failed: " + f.Message + ")"
		return outcome{i: c.i, attempts: attempts, park: store.KindUnknown, err: &g}
	case ff != nil:
		return outcome{i: c.i, attempts: attempts, err: fallbackFailed(ff, f, "step")}
	}
	return outcome{i: c.i, status: journal.StepFellBack, out: out, attempts: attempts, lastErr: f.Message}
}

// resumeFallback is step i let run again (approved) while its fallback was
// in doubt: the fallback is made again, with its one key, as a person
// approved it; ok is false when step i was not so parked.
func (r *wrun) resumeFallback(ctx workflow.Context, i, attempts int, v view) (o outcome, ok bool) {
	p := r.fbDoubt[i]
	if p == nil {
		return outcome{}, false
	}
	delete(r.fbDoubt, i)
	c := call{i: i, op: opAttempt, item: -1, attempt: 1, fallback: true, approved: true, round: p.Round, previous: p.Previous}
	return r.stepFallback(ctx, c, attempts, &p.Failure, v), true
}

// keep keeps, in a run recorded after changeDoubt, the outputs of the
// items of for_each step i that settled before the step parked in doubt:
// let run again, it makes only the others (takeKept).
func (r *wrun) keep(ctx workflow.Context, i int, items map[int]json.RawMessage) {
	if len(items) == 0 || version(ctx, changeDoubt) == workflow.DefaultVersion {
		return
	}
	if r.kept == nil {
		r.kept = map[int]map[int]json.RawMessage{}
	}
	r.kept[i] = items
}

// takeKept hands step i's kept items to its next execution (nil: none).
func (r *wrun) takeKept(i int) map[int]json.RawMessage {
	k := r.kept[i]
	delete(r.kept, i)
	return k
}

// carryDoubts adds what steps parked in doubt keep to c (carry).
func (r *wrun) carryDoubts(c *Carry) {
	for i, items := range r.kept {
		c.doubtOf(r.f.Steps[i].ID).Items = items
	}
	for i, p := range r.fbDoubt {
		c.doubtOf(r.f.Steps[i].ID).Fallback = p
	}
	for i, p := range r.plans {
		c.doubtOf(r.f.Steps[i].ID).Plan = p
	}
}

// doubtOf is c's record of step id's doubt, made when missing.
func (c *Carry) doubtOf(id string) *carryDoubt {
	if c.Doubt == nil {
		c.Doubt = map[string]*carryDoubt{}
	}
	d := c.Doubt[id]
	if d == nil {
		d = &carryDoubt{}
		c.Doubt[id] = d
	}
	return d
}

// restoreDoubt takes what step i parked in doubt kept from c (restore).
func (r *wrun) restoreDoubt(c *Carry, i int) {
	d := c.Doubt[r.f.Steps[i].ID]
	if d == nil {
		return
	}
	if d.Items != nil {
		if r.kept == nil {
			r.kept = map[int]map[int]json.RawMessage{}
		}
		r.kept[i] = d.Items
	}
	if d.Fallback != nil {
		if r.fbDoubt == nil {
			r.fbDoubt = map[int]*fbPending{}
		}
		r.fbDoubt[i] = d.Fallback
	}
	if d.Plan != nil {
		if r.plans == nil {
			r.plans = map[int]*lostPlan{}
		}
		r.plans[i] = d.Plan
	}
}
