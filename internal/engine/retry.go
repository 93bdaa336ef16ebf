package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Retry re-opens a failed durable run and resumes it (rein runs retry): the
// same run id, every settled step and every effect kept. The steps that
// failed go back to pending and run again at their next attempt (a new
// idempotency key), and so, with from, does step from and every settled
// step downstream of it (that reads it or requires it, transitively); the
// other settled steps keep their outputs. from must be a step that ran (a
// failed step, or one that settled before the failure); a step that never
// ran is refused, naming the failed steps. The failed attempts' records
// and their effects stay in the journal (journal.RunRetried,
// journal.StepReopened).
//
// Errors: HintNotFailed (a business error) for a run that is not failed, a
// not_found error naming the step (did-you-mean) for a from the flow does
// not have, a business error for a from that never ran, for a step the
// policy gate blocked (it would be blocked again) and for a step left
// unknown (its effect in doubt: a retry would repeat it without a person).
// A step that waited for a decision when the run failed (its approval was
// closed with the run) is re-opened too and asks again. A step whose
// effects the run's saga (or a premise's remediation) took back is made
// again too, with the steps downstream of it (TakenBack): what it did no
// longer stands; a step only part of whose calls were taken back is
// refused, naming the calls that stand.
func (e *Engine) Retry(ctx context.Context, f *flow.Flow, runID, from string) (*Result, error) {
	if store.IsEphemeral(e.cfg.Store) {
		return nil, errors.New("engine: Retry needs a durable store (engine.Config.Store)")
	}
	run, err := e.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("engine: retry run %s: %w", runID, err)
	}
	if run.Status != trace.RunFailed {
		return nil, notFailed(run)
	}
	if h := FlowHash(f); h != run.FlowHash {
		return nil, fmt.Errorf("engine: run %s started with flow %s (sha256 %.12s), not the one given (sha256 %.12s): retry with the pinned flow text", runID, run.Flow, run.FlowHash, h)
	}
	b, err := e.bind(f)
	if err != nil {
		return nil, err
	}
	rows, err := e.cfg.Store.Steps(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("engine: read steps of run %s: %w", runID, err)
	}
	rst, err := e.readRemedies(ctx, runID)
	if err != nil {
		return nil, err
	}
	taken, err := TakenBack(runID, rst.effects, rst.last)
	if err != nil {
		return nil, err
	}
	reopen, err := reopenSet(f, runID, rows, from, taken)
	if err != nil {
		return nil, err
	}
	leased := e.cfg.Clock.Now()
	held := run
	if run, err = e.acquire(ctx, runID, leased); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fault.New(fault.Conflict, fmt.Errorf("engine: run %s is held by %s: wait for it before retrying: %w", runID, held.LeaseOwner, err))
		}
		return nil, fmt.Errorf("engine: lease run %s: %w", runID, err)
	}
	if run.Status != trace.RunFailed {
		e.release(runID)
		return nil, notFailed(run)
	}
	r := newRun(e, f, b, runID, nil)
	r.d = durability{on: true, version: run.Version, owner: e.cfg.Owner, leased: leased, firstAttempt: map[int]int{}, decisions: map[string]*store.Approval{}}
	r.seq = run.LastSeq
	r.begin(ctx)
	r.record(trace.Event{Kind: journal.RunRetried, Flow: f.Name, StepID: from, Status: string(trace.RunPending)})
	for _, row := range reopen {
		r.recordMu.Lock()
		r.d.pendSteps = append(r.d.pendSteps, &store.Step{RunID: runID, StepID: row.StepID, Type: row.Type, Status: trace.StepPending, Attempt: row.Attempt})
		r.recordMu.Unlock()
		r.record(trace.Event{Kind: journal.StepReopened, StepID: row.StepID, StepType: row.Type, Status: string(trace.StepPending), Attempt: row.Attempt})
	}
	r.recordMu.Lock()
	r.d.pendRun = &store.RunUpdate{Status: trace.RunPending}
	r.recordMu.Unlock()
	r.flush()
	r.delivered()
	r.end()
	storeErr := r.storeErr
	r.recycle()
	e.release(runID)
	if storeErr != nil {
		return nil, storeErr
	}
	return e.Resume(ctx, f, runID)
}

// notFailed is the error of a retry of a run that is not failed.
func notFailed(run *store.Run) error {
	advice := "it stays so"
	switch run.Status {
	case trace.RunWaiting:
		advice = "decide what it waits for (rein runs approve|reject|settle)"
	case trace.RunPending, trace.RunRunning:
		advice = "resume it (rein runs resume)"
	}
	return fault.Hinted(fault.Business, fault.Hint{Code: fault.HintNotFailed, RunID: run.ID, Status: string(run.Status)},
		fmt.Errorf("run %s is not failed (its status is %s): only a failed run can be retried; %s", run.ID, run.Status, advice))
}

// reopenSet is what a retry of run (its step rows) puts back to pending
// (sched.ReopensTaken: with the steps whose effects its remediation took
// back, TakenBack), as rows in flow order.
func reopenSet(f *flow.Flow, runID string, rows []*store.Step, from string, taken map[string]bool) ([]*store.Step, error) {
	byIndex := make([]*store.Step, len(f.Steps))
	for _, row := range rows {
		if s := f.StepByID(row.StepID); s != nil {
			byIndex[s.Index] = row
		}
	}
	idx, err := sched.ReopensTaken(f, runID, from, func(i int) (journal.StepStatus, bool) {
		if byIndex[i] == nil {
			return "", false
		}
		return byIndex[i].Status, true
	}, func(i int) bool { return taken[f.Steps[i].ID] })
	if err != nil {
		return nil, err
	}
	out := make([]*store.Step, 0, len(idx))
	for _, i := range idx {
		out = append(out, byIndex[i])
	}
	return out, nil
}
