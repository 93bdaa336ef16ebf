package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/value"
)

// Activities carry out the attempts a run's workflow hands out, on the
// worker's flows. Every activity type goes to one function (a dynamic
// activity), so that an activity's name can be the step's kind and id
// ("tool:charge", "llm:extract") and read as such in the Temporal UI.
type Activities struct {
	Flows *Flows
	// Heartbeat is how often a running attempt tells the server its worker
	// is alive; the workflow's HeartbeatTimeout is three times it. Zero:
	// 2 s.
	Heartbeat time.Duration
	// Client lets an agent unit whose session this worker has not kept
	// ask the run's workflow for it (QueryAgentSession, session.go); nil:
	// the worker's own client (activity.GetClient), so a worker built with
	// Register needs none.
	Client client.Client
	// SessionBytes bounds the agent sessions this worker keeps in memory
	// (least recently used out first); zero: 64 MiB; negative: none kept,
	// every unit after an agent's first asks the workflow.
	SessionBytes int64

	sessions sessionCache
	// querySession, when set, answers QueryAgentSession in Client's place
	// (the SDK's test environment has no client).
	querySession func(ctx context.Context, workflowID, runID string, step, attempt int) (*agentSession, error)
	// Sealed: the worker's data converter seals every payload (rein.yaml
	// encryption:), so what an attempt returns goes to the history as is;
	// otherwise its flow's secrets are hidden from it (hide.go).
	Sealed bool
	// record, when set, sends heartbeats in sendBeat's place (a test's
	// hook).
	record recordBeat
}

// Run is the dynamic activity: it decodes an attemptIn and carries it out.
func (a *Activities) Run(ctx context.Context, args converter.EncodedValues) (*attemptOut, error) {
	var in attemptIn
	if err := args.Get(&in); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("activity input: "+err.Error(), string(fault.Business), err)
	}
	e, err := a.Flows.get(in.FlowHash)
	if err != nil {
		// another worker may hold it: not this attempt's failure.
		return nil, temporal.NewApplicationError(err.Error(), "no_flow")
	}
	out, err := a.attempt(ctx, e, in)
	return a.hide(e, out, err)
}

// attempt carries out in on its flow's engine e.
func (a *Activities) attempt(ctx context.Context, e *entry, in attemptIn) (out *attemptOut, err error) {
	s, err := settledOf(&in)
	if err != nil {
		return nil, toApplicationError(fault.BusinessErr(err))
	}
	var spent sched.Spent
	s.OnSpent = func(sp sched.Spent) { spent = addSpent(spent, sp) }
	defer chargeOut(&spent, &out, &err)
	var tainted []invoke.Taint
	s.OnTainted = func(ts []invoke.Taint) { tainted = invoke.MergeTaints(tainted, ts) }
	// the calls' effect records and a plan's progress, sent with each
	// heartbeat (lostWork)
	var effects effectLog
	var plans engine.PlanLog
	stop := a.beat(ctx, &effects, &plans, a.hideWork(e))
	defer stop()
	f := e.p.Flow
	out = &attemptOut{}
	defer riskOut(out, &tainted, &out, &err)
	switch in.Op {
	case opItems:
		n, err := e.e.Items(ctx, f, in.RunID, s, in.Step)
		if err != nil {
			return nil, toApplicationError(err)
		}
		out.Items = n
		return out, nil
	case opCheck:
		var v any
		if err := json.Unmarshal(in.Output, &v); err != nil {
			return nil, toApplicationError(fault.BusinessErr(err))
		}
		if err := e.e.CheckOutput(ctx, f, in.RunID, s, in.Step, v); err != nil {
			return nil, toApplicationError(err)
		}
		return out, nil
	case opAgent:
		out.Agent, err = a.agentUnit(ctx, e.e, f, s, &in, effects.add, out.noteTier)
		out.Effects = effects.list()
		if err != nil {
			return nil, agentError(err, out)
		}
		return out, nil
	case opAsk:
		g, err := e.e.AskGate(ctx, f, s, engine.AttemptRequest{RunID: in.RunID, Step: in.Step, Attempt: in.Attempt, Item: -1, Approved: in.Approved, OnTier: out.noteTier}, in.Output)
		if err != nil {
			return nil, toApplicationError(err)
		}
		out.Gate = &gateAsked{Park: g.Park, Message: g.Message, Args: g.Args, Approved: g.Approved}
		return out, nil
	case opReconcile:
		req := engine.AttemptRequest{RunID: in.RunID, Step: in.Step, Attempt: in.Attempt, Item: in.Item, Fallback: in.Fallback, Approved: in.Approved, Round: in.Round}
		if len(in.Previous) > 0 {
			if err := json.Unmarshal(in.Previous, &req.Previous); err != nil {
				return nil, toApplicationError(fault.BusinessErr(fmt.Errorf("previous round's output: %w", err)))
			}
		}
		req.Plan, req.PlanCall = in.Plan, in.PlanCall
		rc, err := e.e.Reconcile(ctx, f, s, req)
		if err != nil {
			return nil, toApplicationError(err)
		}
		out.Reconciled = &reconciled{Happened: rc.Happened, Again: rc.Again, Reason: rc.Reason}
		if rc.Happened {
			if out.Output, err = value.Canonical(rc.Output); err != nil {
				return nil, toApplicationError(fault.BusinessErr(fmt.Errorf("the check's output is not JSON: %w", err)))
			}
		}
		return out, nil
	case opFreeze:
		if in.Effect == nil {
			return nil, toApplicationError(fault.BusinessErr(errors.New("a registration of a frozen call names no call")))
		}
		if err := e.e.RegisterFrozen(ctx, in.RunID, in.Tenant, in.Effect); err != nil {
			return nil, toApplicationError(err)
		}
		return out, nil
	case opCompensate:
		if in.Effect == nil {
			return nil, toApplicationError(fault.BusinessErr(errors.New("a compensation names no call")))
		}
		if err := e.e.Compensate(ctx, f, in.RunID, s, in.Effect, in.Approved, in.Tier); err != nil {
			return nil, toApplicationError(err)
		}
		return out, nil
	}
	req := engine.AttemptRequest{RunID: in.RunID, Step: in.Step, Attempt: in.Attempt,
		Item: in.Item, Fallback: in.Fallback, Approved: in.Approved, Round: in.Round}
	req.OnEffect = effects.add
	req.OnTier = out.noteTier
	req.OnPlan = func(ev plan.Event) {
		if plans.Add(ev) {
			effects.touch()
		}
	}
	req.Plan = in.Plan
	plans.Seed(in.Plan)
	if len(in.Previous) > 0 {
		if err := json.Unmarshal(in.Previous, &req.Previous); err != nil {
			return nil, toApplicationError(fault.BusinessErr(fmt.Errorf("previous round's output: %w", err)))
		}
	}
	v, err := e.e.Attempt(ctx, f, s, req)
	out.Effects = effects.list()
	if err != nil {
		return nil, toAttemptError(err, out)
	}
	if out.Output, err = value.Canonical(v); err != nil {
		return nil, toAttemptError(fault.BusinessErr(fmt.Errorf("output is not JSON: %w", err)), out)
	}
	return out, nil
}

// beat heartbeats while an attempt runs, so that a lost worker is found
// within the heartbeat timeout rather than the step's. Each heartbeat
// carries the effect records effs holds and the plan plans holds
// (lostWork), and one is sent as soon as they change, so that the workflow knows the calls that returned
// should the worker be lost. The func it returns stops the beats and waits
// for the last, a change not sent yet sent first.
func (a *Activities) beat(ctx context.Context, effs *effectLog, plans *engine.PlanLog, hide func(lostWork) lostWork) func() {
	every := a.Heartbeat
	if every <= 0 {
		every = DefaultHeartbeat
	}
	record := a.record
	if record == nil {
		record = sendBeat
	}
	effs.changed = make(chan struct{}, 1)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				select {
				case <-effs.changed: // a change not sent yet is sent still
					record(ctx, hide(workOf(effs, plans)))
				default:
				}
				return
			case <-ctx.Done():
				return
			case <-t.C:
				record(ctx, hide(workOf(effs, plans)))
			case <-effs.changed:
				record(ctx, hide(workOf(effs, plans)))
			}
		}
	}()
	return func() { close(done); <-exited }
}

// settledOf decodes what the workflow settled into the engine's terms.
func settledOf(in *attemptIn) (*engine.Settled, error) {
	s := &engine.Settled{Outputs: make(map[string]any, len(in.Outputs)), Statuses: make(map[string]journal.StepStatus, len(in.Statuses))}
	if len(in.Input) > 0 {
		if err := json.Unmarshal(in.Input, &s.Input); err != nil {
			return nil, fmt.Errorf("run input: %w", err)
		}
	}
	for id, raw := range in.Outputs {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("output of step %s: %w", id, err)
		}
		s.Outputs[id] = v
	}
	for id, st := range in.Statuses {
		s.Statuses[id] = journal.StepStatus(st)
	}
	s.Tenant = in.Tenant
	s.Tier, s.Tainted = in.Tier, in.Tainted
	if in.Spent != nil {
		s.Spent = *in.Spent
	}
	return s, nil
}

// toApplicationError carries a classed error to the workflow: the class is
// the error's type, the rest its detail. Temporal never retries it (the
// activity's retry policy allows one attempt): the workflow asks the
// machine, by class, what follows.
// effects are the calls with an effect the attempt made before it failed
// (failure.Effects).
func toApplicationError(err error, effects ...journal.Effect) error {
	d := failure{Class: string(fault.ClassOf(err)), Message: err.Error(), RetryAfter: int64(fault.RetryAfterOf(err)), Budget: fault.BudgetOf(err),
		Premise: engine.PremiseFailed(err), Effects: effects}
	return temporal.NewNonRetryableApplicationError(d.Message, d.Class, err, d)
}

// toAttemptError is toApplicationError for an attempt (or an agent's
// unit) that may have made calls: with their effects and the risk tier it
// reached (failure.Effects, failure.Tier).
func toAttemptError(err error, out *attemptOut) error {
	d := failure{Class: string(fault.ClassOf(err)), Message: err.Error(), RetryAfter: int64(fault.RetryAfterOf(err)), Budget: fault.BudgetOf(err),
		Premise: engine.PremiseFailed(err), Effects: out.Effects, Tier: out.Tier}
	return temporal.NewNonRetryableApplicationError(d.Message, d.Class, err, d)
}

// noteTier keeps the risk tier an attempt reported (engine.AttemptRequest.
// OnTier).
func (o *attemptOut) noteTier(tier int) { o.Tier = max(o.Tier, tier) }

// failureOf reads an activity's error back: its class, message and
// Retry-After. An error that is not an attempt's (the activity timed out,
// its worker was lost, no worker holds the flow) is reported as such
// (lost), and one that never ran (notRun: the worker did not hold the
// flow).
func failureOf(err error) (f failure, lost, notRun bool) {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		if ae.Type() == "no_flow" || ae.Type() == errNoSession {
			return failure{Class: string(fault.Transient), Message: ae.Error()}, false, true
		}
		if ae.HasDetails() && ae.Details(&f) == nil && f.Class != "" {
			return f, false, false
		}
		return failure{Class: ae.Type(), Message: ae.Error()}, false, false
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return failure{Class: string(fault.Transient), Message: "the worker running it was lost (" + te.Error() + ")"}, true, false
	}
	var ce *temporal.CanceledError
	if errors.As(err, &ce) {
		return failure{Class: string(fault.Cancelled), Message: "cancelled"}, false, false
	}
	return failure{Class: string(fault.Transient), Message: err.Error()}, true, false
}

// effectLog collects the effect records an attempt's calls report
// (engine.AttemptRequest.OnEffect), which may come from several goroutines.
type effectLog struct {
	mu   sync.Mutex
	effs []journal.Effect
	// changed, when set (beat), is signalled after each add.
	changed chan struct{}
}

// add logs e. Every attempt reports its calls with an effect, which the
// history keeps as the run's effect record (rein runs effects --temporal:
// effects.go); a saga takes them back (noteEffects keeps them only for a
// flow with on_failure: compensate).
func (l *effectLog) add(e journal.Effect) {
	l.mu.Lock()
	l.effs = append(l.effs, e)
	l.mu.Unlock()
	l.touch()
}

// touch signals that what the attempt's heartbeats carry changed.
func (l *effectLog) touch() {
	if l.changed != nil {
		select {
		case l.changed <- struct{}{}:
		default: // a heartbeat is due already: it reads the log then
		}
	}
}

func (l *effectLog) list() []journal.Effect {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clip(l.effs)
}
