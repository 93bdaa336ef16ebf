package temporal

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
)

// reconcileVersion names the change that asks a check: before a person
// (a history recorded before it asks the person at once).
const reconcileVersion = "check-reconcile"

// reconciled is what a tool step's check: found about its call in doubt
// (engine.Reconcile), as an opReconcile activity answers it.
type reconciled struct {
	Happened bool   `json:"happened,omitempty"`
	Again    bool   `json:"again,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// reconciles reports whether step i's call in doubt is asked of its
// tool's check: before a person (a plain tool step whose tool declares
// one), in a run recorded after that change.
func (r *wrun) reconciles(ctx workflow.Context, i int) bool {
	ok, err := r.e.e.Reconciles(r.f, i)
	return err == nil && ok && workflow.GetVersion(ctx, reconcileVersion, workflow.DefaultVersion, 1) == 1
}

// reconcileDoubt asks the check of call c (its attempt set) whose worker
// was lost (a tool call that is not safe to repeat), before a person is
// asked, as a local resume does: a call that took effect settles it with
// the check's output (a step's or a step's fallback's checked as a settled
// output: output_schema and gate; an item's or a round's is taken as the
// item's or the round's, as the local engine takes it); one that did not,
// which a person had approved, is made again with the same key (again).
// Otherwise (no check, it did not happen, it cannot say) the call stays in
// doubt, f's message extended with what the check found.
func (r *wrun) reconcileDoubt(ctx workflow.Context, c call, f *failure, v view) (out json.RawMessage, again bool, ff *failure) {
	i := c.i
	rc := call{i: i, op: opReconcile, item: c.item, attempt: c.attempt, approved: c.approved, fallback: c.fallback, round: c.round, previous: c.previous}
	if c.item >= 0 || c.round > 0 || c.fallback {
		rc.rerun = c.rerun // a plain step's check keeps the id it had (check-reconcile)
	}
	res, af := r.exec(ctx, rc, v)
	if af != nil || res.Reconciled == nil {
		return nil, false, f
	}
	ck := res.Reconciled
	switch {
	case ck.Happened && (c.item >= 0 || c.round > 0 && !c.fallback):
		return res.Output, false, nil
	case ck.Happened:
		var o any
		if err := json.Unmarshal(res.Output, &o); err != nil {
			return nil, false, f
		}
		if err := engine.CheckSettled(r.f, i, o); err != nil {
			return nil, false, &failure{Class: string(fault.ClassOf(err)), Message: f.Message + "; its tool's check found that it took effect, but its output: " + err.Error()}
		}
		if _, cf := r.exec(ctx, call{i: i, op: opCheck, item: -1, output: res.Output}, v); cf != nil {
			return nil, false, &failure{Class: cf.Class, Message: f.Message + "; its tool's check found that it took effect, but its output: " + cf.Message}
		}
		return res.Output, false, nil
	case ck.Again:
		return nil, true, nil
	}
	g := *f
	if ck.Reason != "" {
		g.Message += "; " + ck.Reason
	}
	return nil, false, &g
}
