package engine

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
)

// One attempt, outside the runner: a workflow engine (package
// github.com/reinhq/rein/temporal) drives the machine (sched) in its
// workflow code and hands each attempt to a worker as an activity. The
// worker carries it out here, with the same kinds, rendering, pipeline,
// gate and output checks as the runner's own attempts: there is no second
// copy of what a step does. Retries, on_error, approvals and the run's
// outcome stay the driver's (it asks the machine).

// Settled is what a driver knows of the run when it hands out an attempt:
// the run's input and, by step id, the output and status of every settled
// step. It is the scope templates and expressions read (Scope).
type Settled struct {
	Input    any
	Outputs  map[string]any
	Statuses map[string]journal.StepStatus
	// Tenant owns the run: its model calls reserve against that
	// tenant's daily budgets (Config.Spend) in Config.Store's ledger, and
	// its calls check the tenant's invalidated resources, when the engine
	// has a store. Nothing else is kept there: no run row, journal or
	// lease (the driver owns the run).
	Tenant string
	// Spent is what the run spent against its budgets (max_llm_calls,
	// max_tokens) as the driver holds it when it hands the attempt out:
	// the attempt's model calls are charged on top of it, and one past a
	// limit is refused as in the runner (a fault.Budget error naming it).
	Spent sched.Spent
	// OnSpent, when set, is handed what the attempt's model calls spent
	// (LLMCalls, TokensIn, TokensOut; the driver charges Iterations) once
	// it returns, whether or not it failed: what the driver adds to the
	// run's budget.
	OnSpent func(sched.Spent)
	// Tier is the run's risk tier as the driver holds it (the highest its
	// attempts reported through OnTier): the attempt starts the run's tier
	// there when it is above the intake's, as a resumed run of the runner
	// starts from the tier its journal reached.
	Tier int
	// Tainted are the origins the run's earlier attempts tainted (their
	// calls touched an invalidated resource, invoke.Invalid), and
	// OnTainted, when set, is handed the run's set as the attempt left it
	// (Tainted and what its calls tainted) once it returns, when that is
	// not empty: what the driver hands the run's later attempts
	// (invoke.MergeTaints). Only an engine with a store checks and taints.
	Tainted   []invoke.Taint
	OnTainted func([]invoke.Taint)
}

// AttemptRequest names one attempt of a step of a run.
type AttemptRequest struct {
	RunID string
	// Step is the step's index in the flow.
	Step int
	// Attempt is the attempt's number, from 1: with RunID, Step and Item it
	// makes the call's idempotency key (package invoke).
	Attempt int
	// Item is the for_each item, or -1 for the step itself.
	Item int
	// Fallback runs the step's (or the item's) fallback instead.
	Fallback bool
	// Approved says a person approved this call (its tool step parked for
	// approval).
	Approved bool
	// Round is a repeat step's round, from 1 (0 for any other step), and
	// Previous the output of the round before it (nil for round 1): the
	// round renders its input with them (RoundScope) and its call's key
	// carries the round. The driver decides the rounds (sched.Rounds).
	// With Fallback, Round is the round the rounds stopped at: the
	// fallback's scope holds it (its key does not).
	Round    int
	Previous any
	// OnEffect, when set, is handed the effect record (the calls' effect
	// graph, effects.go) of each call the attempt made that reached a tool
	// with an effect, its compensation rendered over the call's args and
	// output: what a driver remediates (Compensate) once a saga fails. It
	// may be called from several goroutines at once (a plan's steps).
	OnEffect func(journal.Effect)
	// OnTier, when set and the flow's runs have risk tiers, is handed the
	// run's risk tier as the attempt left it (its intake, raised by the
	// attempt's calls), once it ended: a driver keeps the highest as the
	// run's tier, the floor of its compensations (Compensate).
	OnTier func(tier int)
	// OnPlan, when set, is handed each event of a plan step's planner and
	// executor (the plan proposed, each plan step's call started and
	// settled): what a driver keeps to continue the plan should the
	// attempt be lost (PlanLog). It may be called from several goroutines
	// at once.
	OnPlan func(plan.Event)
	// Plan, when set, is a plan step's plan to continue (plan.RunFrom, as
	// a local resume continues it from its call records): its plan runs as
	// its number, so its calls keep their keys, and its completed steps
	// are not made again. Set for a plan step (Item -1) only.
	Plan *plan.Progress
	// PlanCall, with Plan, is the plan's call in doubt that Reconcile asks
	// its tool's check about.
	PlanCall *PlanCall
}

// Scope is the scope of templates and expressions of a run of f that
// settled what s holds: input fields, "input", every settled step's output
// by id and, when f reads them, "steps" (id → {status, output}). The
// runner builds the same scope step by step (run.publish, run.setStatus).
func Scope(f *flow.Flow, s *Settled) map[string]any {
	env := make(map[string]any, len(f.Steps)+8)
	if m, ok := s.Input.(map[string]any); ok {
		for k, v := range m {
			env[k] = v
		}
	}
	env["input"] = s.Input
	var ns map[string]any
	if f.ReadsSteps {
		ns = make(map[string]any, len(f.Steps))
		env["steps"] = ns
	}
	for _, st := range f.Steps {
		status, ok := s.Statuses[st.ID]
		if !ok {
			status = journal.StepPending
		}
		out := s.Outputs[st.ID]
		if _, settled := s.Outputs[st.ID]; settled || status == journal.StepSkipped {
			env[st.ID] = out
		}
		if ns != nil {
			ns[st.ID] = map[string]any{"status": string(status), "output": out}
		}
	}
	return env
}

// runAt is a run of f, with no journal and no sink, whose scope holds what
// s settled and whose budget what it spent: the ground an attempt outside
// the runner stands on. With a store, its model calls reserve in the
// store's ledger and its calls check the invalidated resources
// (outsideRun); it never creates, journals or leases a run there.
func (e *Engine) runAt(ctx context.Context, f *flow.Flow, runID string, s *Settled) (*run, error) {
	b, err := e.bind(f)
	if err != nil {
		return nil, err
	}
	r := newRun(e, f, b, runID, s.Input)
	r.quiet = true
	r.tenant = s.Tenant
	r.outside = &outsideRun{store: e.durable, from: s.Spent, onSpent: s.OnSpent}
	r.budget.Restore(s.Spent)
	for k, v := range Scope(f, s) {
		r.env[k] = v
	}
	if ns, ok := r.env["steps"].(map[string]any); ok {
		r.stepsNS = ns
	}
	r.begin(ctx)
	r.carryIn(s)
	r.startRisk()
	return r, nil
}

// Attempt makes attempt req.Attempt of step req.Step of a run of f: it
// renders the step's input (or the item's) against what s settled, makes
// the call through the step's kind (the invocation pipeline for a tool, the
// model for an llm step, the router, the plan executor), under the step's
// timeout, checks the step's gate and max_output_bytes, and returns the
// output. An error is classed (fault.ClassOf) so that the driver asks the
// machine what follows (sched.Machine.Retry, sched.RecoverStep). A
// for_each step's gate applies to the whole list: the driver's, once the
// items settled (CheckOutput).
func (e *Engine) Attempt(ctx context.Context, f *flow.Flow, s *Settled, req AttemptRequest) (any, error) {
	if req.Step < 0 || req.Step >= len(f.Steps) {
		return nil, fmt.Errorf("engine: flow %s has no step %d", f.Name, req.Step)
	}
	r, err := e.runAt(ctx, f, req.RunID, s)
	if err != nil {
		return nil, err
	}
	defer r.end()
	defer r.reportTier(req.OnTier)
	r.onEffect = req.OnEffect
	r.continuePlan(req)
	j := r.prepare(req.Step)
	r.assessStep(req.Step, j) // the step's start, as the runner's
	j.approved = req.Approved
	if j.renderErr != nil {
		return nil, j.renderErr
	}
	in := j.in
	scope := j.scope
	if st := f.Steps[req.Step]; st.ForEach != nil {
		if req.Item < 0 || req.Item >= len(j.each.inputs) {
			return nil, fmt.Errorf("engine: step %s has %d items, not item %d", st.ID, len(j.each.inputs), req.Item)
		}
		if j.each.errs != nil && j.each.errs[req.Item] != nil && !req.Fallback {
			return nil, j.each.errs[req.Item]
		}
		in = j.each.inputs[req.Item]
		if req.Fallback {
			res := r.itemFallback(r.ctx, j, req.Item)
			return res.v, res.err
		}
		out, _, err := r.attempt(r.ctx, j, in, req.Attempt)
		return out, err
	}
	var out any
	if st := f.Steps[req.Step]; st.Repeat != nil && !req.Fallback {
		// one round's attempt: its gate is checked here, on the round's
		// output; max_output_bytes on the last round's (CheckOutput).
		if req.Round < 1 {
			return nil, fmt.Errorf("engine: step %s is a repeat step: an attempt names its round (from 1)", st.ID)
		}
		rin, err := r.roundInput(r.ctx, j, req.Round-1, req.Previous, req.Round > 1)
		if err != nil {
			return nil, err
		}
		out, _, err = r.attempt(r.ctx, j, rin, req.Attempt)
		return out, err
	}
	if st := f.Steps[req.Step]; st.Repeat != nil && req.Fallback && req.Round > 0 {
		// the fallback of rounds that stopped at round req.Round sees them
		// as the runner's does: previous, iteration, and the last output.
		RoundScope(scope, req.Round-1, req.Previous)
		if req.Round > 1 {
			SettleRound(scope, st, req.Previous)
		}
	}
	if req.Fallback {
		out, err = r.runFallback(r.ctx, j, in, scope)
	} else {
		out, _, err = r.attempt(r.ctx, j, in, req.Attempt)
	}
	if err != nil {
		return nil, err
	}
	var o outcome
	if err := r.finishOutput(j.step, out, &o); err != nil {
		return nil, err
	}
	return out, nil
}

// Items is how many items step i, a for_each step, has given what s
// settled (its for_each expression evaluated on the run's scope).
func (e *Engine) Items(ctx context.Context, f *flow.Flow, runID string, s *Settled, i int) (int, error) {
	if i < 0 || i >= len(f.Steps) || f.Steps[i].ForEach == nil {
		return 0, fmt.Errorf("engine: step %d of flow %s is not a for_each step", i, f.Name)
	}
	r, err := e.runAt(ctx, f, runID, s)
	if err != nil {
		return 0, err
	}
	defer r.end()
	_, list, _, err := r.renderItems(f.Steps[i])
	return len(list), err
}

// CheckOutput checks a step's whole output as the runner does once the
// step ran: its gate (a for_each step's, on the list of its items'
// outputs; a repeat step's was checked on each round, by Attempt), a
// for_each step's premise (on the same list) and
// max_output_bytes.
func (e *Engine) CheckOutput(ctx context.Context, f *flow.Flow, runID string, s *Settled, i int, out any) error {
	r, err := e.runAt(ctx, f, runID, s)
	if err != nil {
		return err
	}
	defer r.end()
	st := f.Steps[i]
	if st.Gate != nil && st.Repeat == nil || st.ForEach != nil && st.Premise != nil {
		j := r.prepare(i)
		if j.scope == nil {
			j.scope = r.scope()
		}
		ectx, cancel := r.evalCtx(st)
		defer cancel()
		if st.Gate != nil {
			if err := r.checkGate(ectx, j, out); err != nil {
				return err
			}
		}
		if st.ForEach != nil && st.Premise != nil {
			if err := r.checkPremise(ectx, j, out); err != nil {
				return err // a *PremiseError: the step parks, the run pauses
			}
		}
	}
	var o outcome
	return r.finishOutput(st, out, &o)
}

// Repeatable reports whether step i, found in flight when its worker was
// lost, may run again with the same idempotency key without a person (its
// kind's rule: a model call, a route, an idempotent tool; a plan whose
// tools all are). A step that is not goes to a person as unknown.
func (e *Engine) Repeatable(f *flow.Flow, i int) (bool, error) {
	b, err := e.bind(f)
	if err != nil {
		return false, err
	}
	if i < 0 || i >= len(f.Steps) {
		return false, fault.Errorf(fault.Business, "engine: flow %s has no step %d", f.Name, i)
	}
	r := &run{e: e, f: f, b: b}
	return b.kinds[i].idempotent(r, i), nil
}

// CheckSettled checks an output a person (or an agent) settled step i
// with, as the runner does before it takes it: the step's output_schema
// (each item's, for a for_each step).
func CheckSettled(f *flow.Flow, i int, out any) error { return checkSettled(f.Steps[i], out) }
