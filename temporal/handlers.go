package temporal

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/store"
)

// handlers registers the run's queries and its update.
func (r *wrun) handlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (*Status, error) { return r.snapshot(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryPending, func() ([]Pending, error) { return r.pending(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryNextActions, func() ([]NextAction, error) { return r.nextActions(), nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide, r.decide,
		workflow.UpdateHandlerOptions{Validator: r.validate}); err != nil {
		return err
	}
	return r.submitUpdates(ctx)
}

// pending lists the approvals the run waits on, and answered yet to be
// carried out ones left out.
func (r *wrun) pending() []Pending {
	out := []Pending{}
	for _, p := range r.m.Pending() {
		if r.answers[p.Step] != nil {
			continue
		}
		out = append(out, Pending{Step: p.ID, Kind: string(p.Kind), Attempt: r.m.Attempts(p.Step), Error: r.errs[r.f.Steps[p.Step].ID]})
	}
	return out
}

// nextActions says, for each approval the run waits on, which decisions
// it takes (the update and its arguments).
func (r *wrun) nextActions() []NextAction {
	out := []NextAction{}
	for _, p := range r.pending() {
		acts := []string{ActionApprove, ActionReject, ActionSettle}
		why := map[string]string{
			ActionApprove: "let step " + p.Step + " run",
			ActionReject:  "fail step " + p.Step + ", and with it the run",
			ActionSettle:  "give step " + p.Step + " its output",
		}
		switch store.ApprovalKind(p.Kind) {
		case store.KindSubmission:
			acts = []string{ActionSettle, ActionReject}
		case store.KindUnknown:
			why[ActionApprove] = "run step " + p.Step + " again (its last call's effect is unknown)"
			why[ActionSettle] = "settle step " + p.Step + " with the output its call had"
		case store.KindEscalation:
			why[ActionApprove] = "run step " + p.Step + " again"
		}
		if store.ApprovalKind(p.Kind) == store.KindSubmission {
			out = append(out, NextAction{Update: UpdateSubmit, Step: p.Step, Action: ActionSubmit,
				Why: "give step " + p.Step + " its output, checked against its contract", Args: Decision{Step: p.Step, Action: ActionSubmit}})
		}
		for _, a := range acts {
			out = append(out, NextAction{Update: UpdateDecide, Step: p.Step, Action: a, Why: why[a], Args: Decision{Step: p.Step, Action: a}})
		}
	}
	if r.retryOpen && r.retryReq == nil && r.failure != nil {
		out = append(out, NextAction{Update: UpdateRetry, Step: r.failure.Step, Action: ActionRetry,
			Why: "run the failed step " + r.failure.Step + " again, at its next attempt", Args: Decision{Action: ActionRetry}})
	}
	return out
}

// validate refuses a decision the run cannot take, before the update is
// written to the history: a step that waits for nobody (or was answered
// already), an unknown action, a settle without a JSON output.
func (r *wrun) validate(_ workflow.Context, d Decision) error {
	i, err := r.stepIndex(d.Step)
	if err != nil {
		return err
	}
	var kind store.ApprovalKind
	waits := false
	for _, p := range r.m.Pending() {
		if p.Step == i {
			waits, kind = true, p.Kind
		}
	}
	if !waits || r.answers[i] != nil {
		return fmt.Errorf("step %s of run %s waits for no decision (it is %s)", d.Step, r.runID, r.m.Status(i))
	}
	switch d.Action {
	case ActionApprove:
		if kind == store.KindSubmission {
			return fmt.Errorf("step %s waits for an agent's output: settle it or reject it", d.Step)
		}
	case ActionReject:
	case ActionSettle:
		if !json.Valid(d.Output) {
			return fmt.Errorf("settle step %s: the output must be JSON", d.Step)
		}
	default:
		return fmt.Errorf("action %q: approve, reject or settle", d.Action)
	}
	return nil
}

// decide takes a validated decision: the run carries it out once nothing
// else runs (drive).
func (r *wrun) decide(ctx workflow.Context, d Decision) error {
	if err := r.validate(ctx, d); err != nil {
		return err
	}
	i, _ := r.stepIndex(d.Step)
	var kind store.ApprovalKind
	for _, p := range r.m.Pending() {
		if p.Step == i {
			kind = p.Kind
		}
	}
	status := store.ApprovalApproved
	switch d.Action {
	case ActionReject:
		status = store.ApprovalRejected
	case ActionSettle:
		status = store.ApprovalSettled
	}
	r.answers[i] = &answer{a: sched.Answered{Status: status, Kind: kind}, d: d}
	r.inbox = append(r.inbox, i)
	return nil
}
