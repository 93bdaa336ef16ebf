package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/tool"
)

// A saga outside the runner: a workflow engine (package temporal) keeps
// the effect records its attempts made (AttemptRequest.OnEffect), asks
// SagaRemedies what to take back once a run with on_failure: compensate
// failed, and hands each undo or compensation to a worker, which makes it
// here with the runner's own code (remedyRequest, remedyControls,
// callRemedy): the same args, key ("<call key>/compensate"), gate and
// controls. What follows a failure (a person's escalation, approve once
// more, settle, reject) is the driver's, as the runner's remediate
// decides it.

// RemedyEscalation is the approval id a person decides the remediation
// action a of the call keyed key of run runID under: the key without the
// run, then the action ("take/1/compensate"); n > 1 is the escalation of
// the n-th time it was made ("…/compensate/2").
func RemedyEscalation(runID, key string, a Action, n int) string {
	id := escalationID(runID, key, a)
	if n > 1 {
		id += fmt.Sprintf("/%d", n)
	}
	return id
}

// RemedyRepeatable reports whether the undo or compensation of eff may be
// made again with the same key when its worker was lost mid-call: its tool
// is idempotent or only reads. Otherwise the driver asks a person
// (unknown).
func (e *Engine) RemedyRepeatable(eff *journal.Effect) bool {
	c := eff.Compensation
	if c == nil {
		return false
	}
	t, ok := e.cfg.Tools.Lookup(c.Tool)
	if !ok {
		return false
	}
	spec := t.Spec()
	return spec.Idempotent || spec.Effect == tool.EffectRead || spec.Effect == tool.EffectNone
}

// Compensate makes the undo or compensation of the call eff (an effect
// record an attempt reported, classified ActUndo or ActCompensate) for run
// runID of f, whose settled state is s: through the invocation pipeline —
// the compensating tool's args schema, the run's gate, its risk tier's
// controls (remedyControls) — under the key "<eff.Key>/<kind>". approved
// says a person approved this exact call (an escalation approved). floor
// is the run's highest risk tier (what its attempts reported through
// AttemptRequest.OnTier), the least the call is assessed at, as a local
// run's is at the tier its journal reached; the run's intake tier is a
// floor too. An
// error is classed: a call the controls or the gate hold for a person is a
// policy error wrapping *invoke.ApprovalError; the driver escalates every
// error to a person and never makes the call again on its own.
func (e *Engine) Compensate(ctx context.Context, f *flow.Flow, runID string, s *Settled, eff *journal.Effect, approved bool, floor int) error {
	a := Classify(eff)
	if a != ActUndo && a != ActCompensate {
		return fault.BusinessErr(fmt.Errorf("engine: call %s of tool %s has nothing to undo or compensate (%s)", eff.Key, eff.Tool, a))
	}
	r, err := e.runAt(ctx, f, runID, s)
	if err != nil {
		return err
	}
	defer r.end()
	rec := journal.Remediation{Premise: SagaPremise, Key: eff.Key, StepID: eff.StepID, Tool: eff.Tool, Action: string(a)}
	req, spec, err := r.remedyRequest(eff, eff.Compensation, string(a))
	if err != nil {
		return fault.BusinessErr(err)
	}
	if r.risk != nil {
		floor = max(floor, r.risk.Tier()) // the intake, as a local run's journal has it
	}
	cctx, wait := r.remedyControls(r.ctx, req, &spec, &rec, floor, approved)
	if wait != "" {
		return fault.New(fault.Policy, &invoke.ApprovalError{Tool: spec.Name, Reason: wait})
	}
	req.Approved = approved
	err = r.callRemedy(cctx, req, &spec, &rec)
	if ae := (*invoke.ApprovalError)(nil); errors.As(err, &ae) {
		return fault.New(fault.Policy, err)
	}
	return err
}

// RegisterFrozen registers the objects the frozen call eff (classified
// ActFreeze) of run runID wrote or sent in the store's registry of
// invalidated resources, under tenant, as a local run's saga does once it
// froze the call (registerInvalid): a later run's call that touches one
// waits for a person (invoke.Invalid). Rows are kept per resource, run and
// call, so registering again changes nothing. An engine without a store
// registers nothing.
func (e *Engine) RegisterFrozen(ctx context.Context, runID, tenant string, eff *journal.Effect) error {
	if !e.durable {
		return nil
	}
	rec := &journal.Remediation{Premise: SagaPremise, Key: eff.Key, StepID: eff.StepID, Tool: eff.Tool, Action: string(ActFreeze), Invalid: frozenObjects(eff)}
	rows := invalidRows(tenant, runID, []*journal.Remediation{rec}, e.cfg.Clock.Now())
	if len(rows) == 0 {
		return nil
	}
	if err := e.cfg.Store.Invalidate(ctx, rows); err != nil {
		return fmt.Errorf("engine: register the objects of frozen call %s of run %s as invalid (they stay valid for later runs): %w", eff.Key, runID, err)
	}
	return nil
}
