package engine

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/value"
)

// A plan step of a durable run (not per item, not in a repeat loop) runs
// its executor pausable: a plan step whose call the gate answers
// require_approval waits instead of failing the step. The step parks as an agent step does
// (parkAgent), one approval per waiting plan step, step id
// "<step>/<plan-step>", holding the step's resolved args. On resume, once
// every one is decided, the step runs again at its attempt and continues
// its recorded plan (the call records: plan.RunFrom, completed steps not
// run again) with the decisions: an approved plan step runs with exactly
// the approved args, a rejected one fails with the person's comment (and
// the planner may revise the plan, as after any failure).

// pausablePlan reports whether plan step j's plan (for the item in) may
// wait for people.
func (r *run) pausablePlan(j *job, in unitInput) bool {
	return r.d.on && in.item < 0 && continuable(j.step)
}

// planWait turns the executor's *plan.WaitError into the step's wait; any
// other error is returned as it is.
func planWait(err error) error {
	var we *plan.WaitError
	if !errors.As(err, &we) {
		return err
	}
	w := &agentWait{pending: make([]agent.Pending, len(we.Steps))}
	for k, s := range we.Steps {
		w.pending[k] = agent.Pending{Ref: s.ID, Tool: s.Tool, Args: s.Args, Kind: "approval", Reason: s.Reason}
	}
	return w
}

// restorePlanWait applies a waiting plan step's approvals on resume: it
// waits while any is pending; otherwise it runs again at its attempt,
// continuing its recorded plan with the people's decisions.
func (r *run) restorePlanWait(i int, row *store.Step, approvals []*store.Approval, calls []*store.Call) error {
	latest := r.restoreAgent(i, row, approvals)
	if latest == nil {
		return nil
	}
	if _, _, err := r.resumeCalls(i, calls); err != nil {
		return err
	}
	p := r.d.progress[i]
	if p == nil || p.plan == nil {
		return nil
	}
	prefix := r.f.Steps[i].ID + "/"
	p.plan.Decisions = make(map[string]plan.Decision, len(latest))
	for id, a := range latest {
		d := plan.Decision{Approved: a.Status == store.ApprovalApproved, Args: canonicalArgs(a.Args), Comment: a.Comment}
		if a.Status == store.ApprovalSettled {
			d.Comment = "settled, but settle is for steps whose outcome is unknown; the plan step waited for approval and did not run"
		}
		p.plan.Decisions[strings.TrimPrefix(id, prefix)] = d
	}
	return nil
}

// canonicalArgs is an approval's args as the executor compares them: the
// canonical JSON of their value (a store may have re-encoded them).
func canonicalArgs(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, err := value.Canonical(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}
