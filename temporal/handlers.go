package temporal

import (
	"encoding/json"
	"fmt"
	"strings"

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
	if err := r.agentSessionQueries(ctx); err != nil {
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
		if r.answers[p.Step] != nil || r.callAnswered(p) {
			continue
		}
		why := r.errs[r.f.Steps[p.Step].ID]
		if a := r.agents[p.Step]; a != nil && p.ID != r.f.Steps[p.Step].ID {
			why = a.why[strings.TrimPrefix(p.ID, r.f.Steps[p.Step].ID+"/")] // who asks, or why its effect is unknown
		}
		out = append(out, Pending{Step: p.ID, Kind: string(p.Kind), Attempt: r.m.Attempts(p.Step), Error: why})
	}
	return append(out, r.sagaPending()...)
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
		case store.KindApproval:
			if _, call := r.agentCall(p.Step); call {
				acts = acts[:2] // settle is for a call whose effect is unknown
			}
		case store.KindSubmission:
			acts = []string{ActionSettle, ActionReject}
		case store.KindUnknown:
			why[ActionApprove] = "run step " + p.Step + " again (its last call's effect is unknown)"
			why[ActionSettle] = "settle step " + p.Step + " with the output its call had"
		case store.KindEscalation:
			why[ActionApprove] = "run step " + p.Step + " again"
		case store.KindPremise:
			why[ActionApprove] = "run step " + p.Step + " again (its output contradicts a premise; the whole run is paused until this is decided)"
			why[ActionSettle] = "give step " + p.Step + " the output it should have produced; the paused branches go on"
			why[ActionReject] = "fail step " + p.Step + " with its premise's error, and with it the run"
		}
		if r.sagaWaiting(p.Step) != nil {
			why[ActionApprove] = "make " + p.Step + " (once more)"
			why[ActionSettle] = "say a person took the call back by hand (" + p.Step + ")"
			why[ActionReject] = "leave the call as it is (" + p.Step + "); the run ends failed"
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
	if r.closedFailed {
		out = append(out, closedRetry(r.runID, r.failure))
	}
	return withCommands(r.runID, out)
}

// validate refuses a decision the run cannot take, before the update is
// written to the history: a step that waits for nobody (or was answered
// already), an unknown action, a settle without a JSON output.
func (r *wrun) validate(_ workflow.Context, d Decision) error {
	if e := r.sagaWaiting(d.Step); e != nil {
		return validateSaga(e, d)
	}
	if p, ok := r.agentCall(d.Step); ok {
		return r.validateCall(p, d)
	}
	i, err := r.stepIndex(d.Step)
	if err != nil {
		return err
	}
	var kind store.ApprovalKind
	waits := false
	for _, p := range r.m.Pending() {
		if p.Step == i && p.ID == d.Step { // not one of an agent step's calls
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
	if e := r.sagaWaiting(d.Step); e != nil {
		e.Decision = &d // the saga goes on with it (compensate)
		return nil
	}
	if p, ok := r.agentCall(d.Step); ok {
		// the step runs again once every call it waits on is decided.
		if r.agentDecide(p.Step, strings.TrimPrefix(p.ID, r.f.Steps[p.Step].ID+"/"), d) {
			r.answers[p.Step] = &answer{a: sched.Answered{Status: store.ApprovalApproved, Kind: store.KindApproval}, d: d}
			r.inbox = append(r.inbox, p.Step)
		}
		return nil
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

// agentCall is the pending call of an agent step named id
// ("step/turn<t>/call<c>"), if the run waits on one.
func (r *wrun) agentCall(id string) (sched.Pending, bool) {
	for _, p := range r.m.Pending() {
		if p.ID == id && p.ID != r.f.Steps[p.Step].ID {
			return p, true
		}
	}
	return sched.Pending{}, false
}

// callAnswered reports whether p, an agent step's call, was decided
// already (its step runs once all its calls are).
func (r *wrun) callAnswered(p sched.Pending) bool {
	a := r.agents[p.Step]
	return a != nil && p.ID != r.f.Steps[p.Step].ID && a.answered[strings.TrimPrefix(p.ID, r.f.Steps[p.Step].ID+"/")]
}

// validateCall refuses a decision on an agent step's call p it cannot
// take: one decided already, an unknown action, a settle of a call that
// waits for approval (settle is for a call whose effect is unknown) or
// without a JSON output.
func (r *wrun) validateCall(p sched.Pending, d Decision) error {
	if r.callAnswered(p) {
		return fmt.Errorf("call %s of run %s was decided already", p.ID, r.runID)
	}
	switch d.Action {
	case ActionApprove, ActionReject:
	case ActionSettle:
		if p.Kind != store.KindUnknown {
			return fmt.Errorf("call %s waits for approval: approve or reject it (settle is for a call whose effect is unknown)", p.ID)
		}
		if !json.Valid(d.Output) {
			return fmt.Errorf("settle call %s: the output must be JSON", p.ID)
		}
	default:
		return fmt.Errorf("action %q: approve, reject or settle", d.Action)
	}
	return nil
}
