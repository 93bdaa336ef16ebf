package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// DefaultLeaseTTL is how long a run's lease lasts without a heartbeat.
const DefaultLeaseTTL = 30 * time.Second

// start creates the durable run row, or finds the one an idempotency key
// names. existing is non-nil when the start returned an earlier run.
func (e *Engine) start(ctx context.Context, f *flow.Flow, id string, input any, opts *RunOptions) (run *store.Run, create *store.CreateRunParams, existing *Result, err error) {
	p, err := e.createParams(f, id, input, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.IdempotencyKey == "" {
		// Nothing to look up: the run's first transition creates it, and a
		// run costs no commit of its own.
		return &store.Run{ID: id}, p, nil, nil
	}
	p.Now = e.cfg.Clock.Now()
	run, created, err := e.cfg.Store.CreateRun(ctx, p)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("engine: create run of flow %s: %w", f.Name, err)
	}
	if !created {
		res, err := e.Status(ctx, run.ID)
		if res != nil {
			res.Existing = true
		}
		return nil, nil, res, err
	}
	return run, nil, nil, nil
}

// createParams describes the run Run starts: running, leased to this
// engine, with the flow pinned and the secrets of its input hidden.
func (e *Engine) createParams(f *flow.Flow, id string, input any, opts *RunOptions) (*store.CreateRunParams, error) {
	var session, tenant string
	var meta json.RawMessage
	if opts != nil {
		session, meta, tenant = opts.Session, opts.Meta, opts.Tenant
	}
	key, err := startKey(f, input, opts)
	if err != nil {
		return nil, fmt.Errorf("engine: flow %s: %w", f.Name, err)
	}
	in, err := value.AppendCanonical(nil, input)
	if err != nil {
		return nil, fmt.Errorf("engine: input of flow %s: %w", f.Name, err)
	}
	b, err := e.bind(f)
	if err != nil {
		return nil, err
	}
	return &store.CreateRunParams{ID: id, Flow: f.Name, FlowPath: b.flowPath,
		FlowHash: b.flowHash, FlowText: f.Source, Input: e.cfg.Redactor.Bytes(in), Meta: meta, IdempotencyKey: key, Session: session,
		Tenant: tenant, Retention: f.Retention, Status: trace.RunRunning, Owner: e.cfg.Owner, LeaseTTL: e.cfg.LeaseTTL}, nil
}

// acquire takes the run's lease for this engine at now (the engine's
// clock), so the lease runs until now+LeaseTTL. When another owner holds
// it and that owner is a process of this host that died (a crash, a kill),
// the lease is taken over at once instead of waiting for it to expire.
func (e *Engine) acquire(ctx context.Context, runID string, now time.Time) (*store.Run, error) {
	p := &store.LeaseParams{RunID: runID, Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, Now: now}
	run, err := e.cfg.Store.AcquireLease(ctx, p)
	if !errors.Is(err, store.ErrConflict) {
		return run, err
	}
	held, gerr := e.cfg.Store.GetRun(ctx, runID)
	if gerr != nil || held.LeaseOwner == "" || held.LeaseOwner == e.cfg.Owner || !ownerGone(held.LeaseOwner) {
		return nil, err
	}
	p.TakeFrom = held.LeaseOwner
	return e.cfg.Store.AcquireLease(ctx, p)
}

// absPath makes a flow's path absolute, so a run resumed from another
// folder (a worker's) finds the files beside its flow.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Resume continues a durable run from its last committed transition. f
// must be the flow the run started with (its text hashes to the pinned
// FlowHash; package rein's Resume parses the pinned text). Steps that
// settled are not run again; a step that was in flight when its process
// died runs again if it is idempotent (same attempt, same idempotency
// key) and is otherwise parked as unknown for a person to approve, reject
// or settle. Decisions recorded with the store (approvals) are applied.
// A finished run comes back as it is.
func (e *Engine) Resume(ctx context.Context, f *flow.Flow, runID string) (*Result, error) {
	if store.IsEphemeral(e.cfg.Store) {
		return nil, errors.New("engine: Resume needs a durable store (engine.Config.Store)")
	}
	run, err := e.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("engine: resume run %s: %w", runID, err)
	}
	if run.Finished() {
		return e.Status(ctx, runID)
	}
	if h := FlowHash(f); h != run.FlowHash {
		return nil, fmt.Errorf("engine: run %s started with flow %s (sha256 %.12s), not the one given (sha256 %.12s): resume with the pinned flow text", runID, run.Flow, run.FlowHash, h)
	}
	b, err := e.bind(f)
	if err != nil {
		return nil, err
	}
	// the journal is read, and its sealed payloads opened, before the
	// lease is taken: a run sealed with a key this engine lacks is refused
	// with the store as it was.
	events, err := e.cfg.Store.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("engine: read the journal of run %s: %w", runID, err)
	}
	open := unsealed{}
	if err := e.openSealed(runID, events, open); err != nil {
		return nil, err
	}
	held := run
	leased := e.cfg.Clock.Now() // see durability.leased
	run, err = e.acquire(ctx, runID, leased)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fault.New(fault.Conflict, fmt.Errorf("engine: run %s is being advanced by %s (lease until %s): wait for it, or for its lease to expire: %w", runID, held.LeaseOwner, held.LeaseExpires.Format(time.RFC3339), err))
		}
		return nil, fmt.Errorf("engine: lease run %s: %w", runID, err)
	}
	if run.Finished() {
		// settled by another process between the read and the lease.
		e.release(runID)
		return e.Status(ctx, runID)
	}
	steps, err := e.cfg.Store.Steps(ctx, runID)
	if err != nil {
		e.release(runID)
		return nil, fmt.Errorf("engine: read steps of run %s: %w", runID, err)
	}
	approvals, err := e.cfg.Store.Approvals(ctx, &store.ListApprovalsParams{RunID: runID})
	if err != nil {
		e.release(runID)
		return nil, fmt.Errorf("engine: read approvals of run %s: %w", runID, err)
	}
	calls, err := e.stepCalls(ctx, runID, steps)
	if err != nil {
		e.release(runID)
		return nil, err
	}
	var after int64
	if n := len(events); n > 0 {
		after = events[n-1].Seq
	}
	later, err := e.cfg.Store.Events(ctx, runID, after, 0) // what was committed before the lease
	if err != nil {
		e.release(runID)
		return nil, fmt.Errorf("engine: read the journal of run %s: %w", runID, err)
	}
	if err := e.openSealed(runID, later, open); err != nil {
		e.release(runID)
		return nil, err
	}
	events = append(events, later...)
	open.events(events)
	open.records(run, steps, approvals, calls)
	var input any
	if err := json.Unmarshal(run.Input, &input); err != nil {
		e.release(runID)
		return nil, fmt.Errorf("engine: input of run %s does not decode: %w", runID, err)
	}
	// the calls the run had in flight died with their process: their
	// budget reservations stop counting (one run again reserves again,
	// under its own key).
	if e.cfg.Spend != nil && e.cfg.Spend.Budgets != nil {
		if _, err := e.cfg.Store.ReleaseRun(ctx, runID); err != nil {
			e.release(runID)
			return nil, fmt.Errorf("engine: release the budget reservations of run %s: %w", runID, err)
		}
	}
	r := newRun(e, f, b, runID, input)
	r.tenant = run.Tenant
	r.d = durability{on: true, version: run.Version, owner: e.cfg.Owner, leased: leased, firstAttempt: map[int]int{}, decisions: map[string]*store.Approval{}}
	r.seq = run.LastSeq
	r.d.open, r.d.begun = open, begun(events)
	for _, a := range approvals {
		// an escalation of a remediation, not of a step: the run's end
		// carries the remediation on.
		if a.Kind == store.KindEscalation && f.StepByID(a.StepID) == nil {
			r.d.remedyOpen = true
		}
	}
	if err := r.restore(events, steps, approvals, calls); err != nil {
		e.release(runID)
		return nil, err
	}
	r.restoreUsage(run, events)
	r.d.procs = toolProcesses(events)
	if r.d.remedyOpen && r.failure == nil && len(run.Error) > 0 {
		// a remediated run ends as it had ended before.
		r.failure = &RunError{}
		_ = json.Unmarshal(run.Error, r.failure)
	}
	res := r.resume(ctx)
	r.recycle()
	return res, nil
}

func (e *Engine) release(runID string) {
	_ = e.cfg.Store.ReleaseLease(storeCtx, runID, e.cfg.Owner)
}

// restore rebuilds the scheduler's state by replaying the run's journal
// through the machine (sched.Machine.Apply), checks that it agrees with
// the step projection (agree), takes the steps' outputs and errors from
// the projection, and the progress of steps in flight from their call
// records (by step ID). Steps in flight or waiting when the last process
// stopped are then decided again: run again, parked, or answered.
func (r *run) restore(events []*trace.Event, rows []*store.Step, approvals []*store.Approval, calls map[string][]*store.Call) error {
	for _, ev := range events {
		if err := r.m.Apply(ev); err != nil {
			return fmt.Errorf("engine: replay the journal of run %s: %w", r.id, err)
		}
	}
	if err := r.agree(rows); err != nil {
		return err
	}
	r.d.reopened = reopenedSteps(r.f, events)
	latest := map[string]*store.Approval{}
	for _, a := range approvals {
		if p := latest[a.StepID]; p == nil || !a.CreatedAt.Before(p.CreatedAt) {
			latest[a.StepID] = a
		}
	}
	byID := make(map[string]*flow.Step, len(r.f.Steps))
	for _, s := range r.f.Steps {
		byID[s.ID] = s
	}
	for _, row := range rows {
		s := byID[row.StepID]
		if s == nil {
			return fmt.Errorf("engine: run %s journals step %s, which its flow does not have", r.id, row.StepID)
		}
		i := s.Index
		st := &r.steps[i]
		st.attempts, st.started, st.settled = row.Attempt, row.StartedAt, row.SettledAt
		if !st.settled.IsZero() && !st.started.IsZero() {
			st.duration = st.settled.Sub(st.started)
		}
		if len(row.Error) > 0 {
			st.err = &RunError{}
			_ = json.Unmarshal(row.Error, st.err)
		}
		switch row.Status {
		case trace.StepRunning, trace.StepWaiting, trace.StepUnknown:
			r.m.Requeue(i) // decided again below
			if row.Status == trace.StepRunning {
				r.d.resumedRunning = append(r.d.resumedRunning, i)
			}
		case trace.StepPending:
			if row.Attempt > 0 {
				// re-opened by a retry (retry.go): its next attempt.
				r.d.firstAttempt[i] = row.Attempt + 1
			}
		}
		switch row.Status {
		case trace.StepSucceeded, trace.StepDefaulted, trace.StepFellBack, trace.StepSkipped:
			st.outputSHA = row.OutputSHA
			if len(row.Output) > 0 {
				if err := json.Unmarshal(row.Output, &st.output); err != nil {
					return fmt.Errorf("engine: output of step %s of run %s does not decode: %w", s.ID, r.id, err)
				}
			}
			r.publish(i, st.output)
			r.restoreEvidence(i, row.Status, st.output)
			r.setStatus(i, row.Status)
		case trace.StepFailed, trace.StepBlocked:
			// a failed step fails its run; a failed row in an unfinished run
			// means the crash came between the step and the run's
			// settlement (a parallel branch was in flight). The step's
			// effect happened: the run failed, it is not run again.
			r.setStatus(i, row.Status)
			if st.err == nil {
				st.err = &RunError{Class: fault.Business, Origin: trace.OriginEngine, Message: "step " + s.ID + " failed"}
			}
			if st.err.Step == "" {
				st.err.Step = s.ID
			}
			if r.failure == nil {
				r.failure = st.err
			}
		case trace.StepRunning:
			if a := latest[s.ID]; a != nil && a.Status == store.ApprovalApproved {
				// approved before it ran: the approval is not asked again.
				r.d.decisions[s.ID] = a
			}
			cont, doubt, err := r.resumeCalls(i, calls[s.ID])
			if err != nil {
				return err
			}
			if cont || row.Idempotent && !doubt {
				r.d.firstAttempt[i] = max(row.Attempt, 1)
				break
			}
			r.m.Restore(i, trace.StepRunning, row.Attempt, "") // not run again: parked
			r.d.toPark = append(r.d.toPark, i)
		case trace.StepWaiting, trace.StepUnknown:
			if s.Type == flow.Agent && !stepApprovalCurrent(latest[s.ID], approvals, s.ID) {
				if r.restoreAgent(i, row, approvals) != nil {
					if r.d.continued == nil {
						r.d.continued = map[int]bool{}
					}
					r.d.continued[i] = true // its session goes on: not a new step run
				}
				continue
			}
			if s.Type == flow.LLM {
				if waits, err := r.restoreGuardWait(i, row, approvals, calls[s.ID]); err != nil {
					return err
				} else if waits {
					continue
				}
			}
			if s.Type == flow.Plan && latest[s.ID] == nil {
				if err := r.restorePlanWait(i, row, approvals, calls[s.ID]); err != nil {
					return err
				}
				continue
			}
			a := latest[s.ID]
			if a == nil || a.Status == store.ApprovalPending {
				r.setStatus(i, row.Status)
				if a != nil {
					r.m.Park(i, a.Kind, row.Attempt)
					r.d.parked = append(r.d.parked, a)
				} else {
					r.m.Restore(i, row.Status, row.Attempt, "")
					r.d.toPark = append(r.d.toPark, i)
				}
				continue
			}
			r.d.decisions[s.ID] = a
			if _, _, err := r.resumeCalls(i, calls[s.ID]); err != nil {
				return err
			}
			if p := r.d.progress[i]; p != nil && p.fb != nil && !p.fb.done && a.Status == store.ApprovalApproved {
				// the fallback in doubt, approved: it is made again (its
				// step's call had failed for good), not the step's call.
				p.fb.again = true
			}
		}
	}
	r.m.Recount()
	r.m.Seed()
	return nil
}

// restoreUsage carries what the run's earlier processes did into this
// one: their model calls and tokens (folded from the journal's model_call
// and corrective_retry events, so a process that died before it wrote its
// usage is counted too), run and step alike, and the iterations of the
// last usage written. Budgets count on from there, and the run's duration
// is reckoned from its creation.
func (r *run) restoreUsage(run *store.Run, events []*trace.Event) {
	if r.d.begun {
		r.born = run.CreatedAt
	}
	var u Usage
	if len(run.Usage) > 0 {
		_ = json.Unmarshal(run.Usage, &u)
	}
	r.budget.Restore(sched.Spent{Iterations: u.Iterations})
	if !r.d.begun {
		return
	}
	use, tier := foldUse(events)
	r.restoredTier = tier
	for _, s := range r.f.Steps {
		spent := use[s.ID]
		r.steps[s.Index].use = spent
		r.budget.Restore(sched.Spent{LLMCalls: spent.llmCalls, TokensIn: spent.tokensIn, TokensOut: spent.tokensOut})
	}
}

// foldUse folds a run's journal into what each step's model calls
// cost: model_call events, and the corrective requests of llm steps
// (corrective_retry) and planners (plan_rejected, status corrected); and
// into the highest risk tier the run reached (risk_tier events).
func foldUse(events []*trace.Event) (map[string]stepUse, int) {
	out := map[string]stepUse{}
	tier := 0
	for _, ev := range events {
		if ev.Kind == trace.RiskTier {
			if c, err := journal.DecodeTierChange(ev.Data); err == nil {
				tier = max(tier, c.Tier)
			}
			continue
		}
		u := out[ev.StepID]
		switch {
		case ev.Kind == trace.ModelCall:
			u.llmCalls++
			u.tokensIn += ev.TokensIn
			u.tokensOut += ev.TokensOut
		case ev.Kind == trace.CorrectiveRetry,
			ev.Kind == trace.Kind(plan.PlanRejected) && ev.Status == plan.RejectedCorrected:
			u.corrections++
		default:
			continue
		}
		out[ev.StepID] = u
	}
	return out, tier
}

// resume runs the restored scheduler: like execute, without the start.
func (r *run) resume(parent context.Context) *Result {
	r.begin(parent)
	defer r.end()
	r.recordMu.Lock()
	r.d.pendRun = &store.RunUpdate{Status: trace.RunRunning}
	r.recordMu.Unlock()
	kind := trace.RunResumed
	if !r.d.begun {
		kind = trace.RunStarted // an enqueued run a worker starts
	}
	r.record(trace.Event{Kind: kind, Flow: r.f.Name, Status: string(trace.RunRunning)})
	r.startRisk()
	if len(r.d.procs) > 0 && r.failure == nil {
		// what the dead process's tools left running is stopped before
		// any step runs again and before anybody can decide the steps.
		r.d.notes = r.stopLeftovers()
	}
	leased := false
	if r.failure == nil && r.checksAny(r.d.toPark) {
		// a check may take longer than the lease: it is kept alive.
		r.startLease(r.e.cfg.LeaseTTL)
		leased = true
	}
	requeued := false
	for _, i := range r.d.toPark {
		if r.failure != nil {
			break // the run failed already: nobody is asked about it
		}
		// in flight when the process died, and not idempotent: nobody
		// knows whether its effect happened. Its tool's check may know
		// (reconcile.go); otherwise a person decides.
		if done, again := r.reconcile(i); done {
			requeued = requeued || again
			continue
		}
		r.park(i, store.KindUnknown, r.prepare(i))
	}
	if requeued {
		r.m.Seed()
	}
	r.flush()
	if !leased {
		r.startLease(r.e.cfg.LeaseTTL)
	}
	r.loop()
	return r.finish(parent)
}

// Status reads a durable run's current state from the store: its status,
// the outputs and states of its steps, its error and pending approvals.
func (e *Engine) Status(ctx context.Context, runID string) (*Result, error) {
	run, err := e.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	rows, err := e.cfg.Store.Steps(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("steps of run %s: %w", runID, err)
	}
	events, err := e.cfg.Store.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("engine: read the journal of run %s: %w", runID, err)
	}
	use, _ := foldUse(events)
	res := &Result{RunID: run.ID, Flow: run.Flow, Status: run.Status, Outputs: map[string]any{}, Steps: map[string]StepResult{}}
	for _, row := range rows {
		u := use[row.StepID]
		sr := StepResult{Status: row.Status, Attempts: row.Attempt, Model: modelUseOf(u.corrections, u.llmCalls, u.tokensIn, u.tokensOut)}
		if !row.SettledAt.IsZero() && !row.StartedAt.IsZero() {
			sr.Duration = row.SettledAt.Sub(row.StartedAt)
		}
		if len(row.Error) > 0 {
			sr.Error = &RunError{}
			_ = json.Unmarshal(row.Error, sr.Error)
		}
		res.Steps[row.StepID] = sr
		if sched.HasOutput(row.Status) && len(row.Output) > 0 {
			var v any
			if err := json.Unmarshal(row.Output, &v); err != nil {
				return nil, fmt.Errorf("output of step %s of run %s does not decode: %w", row.StepID, runID, err)
			}
			res.Outputs[row.StepID] = v
		}
	}
	if len(run.Error) > 0 {
		res.Error = &RunError{}
		_ = json.Unmarshal(run.Error, res.Error)
	}
	if len(run.Usage) > 0 {
		_ = json.Unmarshal(run.Usage, &res.Usage)
	}
	if !run.SettledAt.IsZero() {
		res.Duration = run.SettledAt.Sub(run.CreatedAt)
	}
	if run.Status == trace.RunWaiting {
		res.Pending, err = e.cfg.Store.Approvals(ctx, &store.ListApprovalsParams{RunID: runID, Status: store.ApprovalPending})
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Cancel stops a durable run that is not running elsewhere: it takes the
// lease (ErrConflict-classed error when another process holds it), records
// the cancellation and settles the run as cancelled. The same commit
// closes the approvals still pending, as rejected with the reason: none
// stays pending or can be decided (the store answers ErrConflict).
func (e *Engine) Cancel(ctx context.Context, runID, reason string) error {
	run, err := e.acquire(ctx, runID, e.cfg.Clock.Now())
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	defer e.release(runID)
	if run.Finished() {
		return fmt.Errorf("cancel run %s: it already %s", runID, run.Status)
	}
	if reason == "" {
		reason = "cancelled by a person"
	}
	re := &RunError{Class: fault.Cancelled, Origin: trace.OriginEngine, Message: reason}
	errJSON, _ := json.Marshal(re)
	now := e.cfg.Clock.Now()
	t := &store.Transition{RunID: runID, Version: run.Version, Now: now,
		Events: []*trace.Event{{Seq: run.LastSeq + 1, Time: now, Kind: trace.RunSettled, RunID: runID, Flow: run.Flow,
			Status: string(trace.RunCancelled), ErrorClass: string(fault.Cancelled), Error: reason, Origin: trace.OriginEngine}},
		Run: &store.RunUpdate{Status: trace.RunCancelled, Error: errJSON, SettledAt: now, Reason: "the run was cancelled: " + reason}}
	t.Events[0].Redact(e.cfg.Redactor)
	t.Redact(e.cfg.Redactor)
	if err := e.cfg.Store.Commit(ctx, t); err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	// the lease was free or its owner gone: no call of the run is in
	// flight, and none will be, so its open budget reservations end.
	if _, err := e.cfg.Store.ReleaseRun(ctx, runID); err != nil {
		return fmt.Errorf("cancel run %s: it is cancelled, but its budget reservations were not released: %w", runID, err)
	}
	return nil
}

// Enqueue records a new durable run without running it: the run is
// pending until a worker (rein worker, or anyone calling Resume) takes it
// up. An idempotency key that names an existing run returns that run's id.
// The input is stored with its secrets hidden, as every run's is; with a
// Config.Codec, the input that hid one is sealed in the run's one event
// until a worker starts it, and the worker runs with it.
func (e *Engine) Enqueue(ctx context.Context, f *flow.Flow, input any, opts *RunOptions) (string, error) {
	if store.IsEphemeral(e.cfg.Store) {
		return "", errors.New("engine: Enqueue needs a durable store (engine.Config.Store)")
	}
	in, err := CheckInput(f, input)
	if err != nil {
		return "", err
	}
	if _, err := e.bind(f); err != nil {
		return "", err
	}
	var session, id, tenant string
	var meta json.RawMessage
	if opts != nil {
		session, meta, id, tenant = opts.Session, opts.Meta, opts.RunID, opts.Tenant
	}
	if id == "" {
		id = e.cfg.NewRunID()
	}
	key, err := startKey(f, in, opts)
	if err != nil {
		return "", fmt.Errorf("engine: flow %s: %w", f.Name, err)
	}
	raw, err := value.AppendCanonical(nil, in)
	if err != nil {
		return "", err
	}
	hidden := e.cfg.Redactor.Bytes(raw)
	run, created, err := e.cfg.Store.CreateRun(ctx, &store.CreateRunParams{ID: id, Flow: f.Name, FlowPath: absPath(f.File),
		FlowHash: FlowHash(f), FlowText: f.Source, Input: hidden, Meta: meta, IdempotencyKey: key, Session: session,
		Tenant: tenant, Retention: f.Retention, Status: trace.RunPending, Now: e.cfg.Clock.Now()})
	if err != nil {
		return "", fmt.Errorf("engine: enqueue a run of flow %s: %w", f.Name, err)
	}
	if !created || e.cfg.Codec == nil {
		return run.ID, nil
	}
	if p, ok := e.seal(run.ID, "input", raw, hidden); ok {
		// the input the worker runs with, sealed: the run's one event until
		// a worker starts it.
		now := e.cfg.Clock.Now()
		t := &store.Transition{RunID: run.ID, Version: run.Version, Now: now, Events: []*trace.Event{{Seq: 1, Time: now,
			Kind: trace.PayloadsSealed, RunID: run.ID, Flow: run.Flow, Data: journal.EncodeSealed(&journal.Sealed{Payloads: []journal.SealedPayload{p}})}}}
		if err := e.cfg.Store.Commit(ctx, t); err != nil {
			return "", fmt.Errorf("engine: enqueue a run of flow %s: seal its input: %w", f.Name, err)
		}
	}
	return run.ID, nil
}

// stepApprovalCurrent reports whether a, the latest approval of agent step
// id as a whole (an escalation, a failed premise), is what the step waits
// on: no approval of one of its calls ("id/…") was asked after it. Then
// the step is restored as any step parked on its approval, not from its
// calls'.
func stepApprovalCurrent(a *store.Approval, approvals []*store.Approval, id string) bool {
	if a == nil {
		return false
	}
	for _, c := range approvals {
		if strings.HasPrefix(c.StepID, id+"/") && c.CreatedAt.After(a.CreatedAt) {
			return false
		}
	}
	return true
}
