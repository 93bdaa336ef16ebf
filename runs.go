package rein

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Runs operates the durable runs of a store: show, list, decide, resume,
// cancel and prune. It is the one implementation of these operations: the
// rein CLI, an HTTP API or an MCP server only parse their requests and
// format what it returns. Its errors are *Error values with a class and a
// Hint, and say nothing about any one surface's flags or commands.
//
// A run started with Go tools is resumed with the Go tools of
// RunsOptions.Load; without them, Resume and Decide fail with
// HintNeedsTools. Runs is safe for concurrent use.
type Runs struct {
	st   store.Store
	load LoadOptions
	cfg  engine.Config
}

// RunsOptions configure a Runs. Every field may be left zero; a nil
// *RunsOptions means defaults.
type RunsOptions struct {
	// Load says how a resumed run's project is rebuilt (LoadRun): its Go
	// Tools and Models, and Config, Script or Model to use instead of
	// those the run recorded, TrustedToolsOnly. Defaults to what each run
	// recorded, without Go tools.
	Load *LoadOptions
	// Run wires the runs Runs resumes and cancels: trace Sink, Gate,
	// Clock, lease Owner and LeaseTTL, OnCall. Its Store is ignored (the
	// Runs' store is used). Defaults to engine.Config's defaults (a fresh
	// lease owner per Runs).
	Run *RunConfig
}

// NewRuns returns the run operations of st, which must be durable.
func NewRuns(st store.Store, opts *RunsOptions) (*Runs, error) {
	if st == nil || store.IsEphemeral(st) {
		return nil, errors.New("rein: NewRuns needs a durable store (OpenStore)")
	}
	r := &Runs{st: st}
	if opts != nil {
		if opts.Load != nil {
			r.load = *opts.Load
		}
		if opts.Run != nil {
			r.cfg = *opts.Run
		}
	}
	if r.cfg.Owner == "" {
		r.cfg.Owner = engine.NewOwner()
	}
	r.cfg.Store = st
	return r, nil
}

// Store returns the store Runs operates on.
func (r *Runs) Store() store.Store { return r.st }

// Get resolves ref (a run ID, a unique prefix of one, or "last"; see
// ResolveRun) to its run row. A ref that names no run is a not_found
// *Error (HintNoRun); a prefix of several runs is a conflict *Error
// (HintAmbiguousRun) wrapping an *AmbiguousRunError.
func (r *Runs) Get(ctx context.Context, ref string) (*store.Run, error) {
	run, err := ResolveRun(ctx, r.st, ref)
	if err == nil {
		return run, nil
	}
	var amb *AmbiguousRunError
	switch {
	case errors.As(err, &amb):
		return nil, runsErr(ClassConflict, Hint{Code: HintAmbiguousRun}, err)
	case errors.Is(err, store.ErrNotFound):
		return nil, runsErr(ClassNotFound, Hint{Code: HintNoRun}, err)
	}
	return nil, err
}

// ListRunsParams filter List (status, flow, ID prefix, limit).
type ListRunsParams = store.ListRunsParams

// List returns the rows of the runs p selects, newest first. Nil p lists
// every run.
func (r *Runs) List(ctx context.Context, p *ListRunsParams) ([]*RunRow, error) {
	runs, err := r.st.ListRuns(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	rows := make([]*RunRow, len(runs))
	for i, run := range runs {
		rows[i] = NewRunRow(run)
	}
	return rows, nil
}

// ResumeOptions are per-call settings of Resume (and of Decide when it
// resumes). A nil *ResumeOptions means none.
type ResumeOptions struct {
	// Watch, when set, is called with the rebuilt project and the run's
	// step rows just before the run resumes. It returns a sink that gets
	// the resumed run's events besides RunsOptions.Run.Sink (nil: none),
	// and a function called once the resume returned (nil: none): a
	// progress display, for one.
	Watch func(p *Project, steps []*store.Step) (trace.Sink, func())
}

// Outcome is what Resume or Decide did.
type Outcome struct {
	// Approval is the decision Decide recorded; nil from Resume.
	Approval *Approval `json:"approval"`
	// Result is the run's state after the resume: nil when Decide did not
	// resume. For a run that had finished already, it is that state and
	// Finished is set.
	Result *Result `json:"result"`
	// Finished reports that the run had finished before: nothing ran.
	Finished bool `json:"finished,omitempty"`
	// NeedsTools are the Go tools the run was started with that this Runs
	// was not given (Decide only): it cannot resume the run.
	NeedsTools []string `json:"needs_tools,omitempty"`
	// StepOrder lists the run's step ids in the flow's file order (for a
	// finished run, in first-started order).
	StepOrder []string `json:"-"`
}

// Resume continues the run ref names from its last committed transition,
// with the flow it pinned (LoadRun) and the Go tools of RunsOptions.Load.
// A finished run is not touched: its state comes back with
// Outcome.Finished set. Before anything runs, the models the run's
// unfinished steps may still call are opened (not called): one whose API
// key is not set refuses the resume and leaves the run as it was. Errors
// are *Error values: not_found (HintNoRun), conflict (HintAmbiguousRun;
// HintHeldByAnotherProcess when another process holds its lease), business
// (HintNeedsTools; HintNeedsAPIKey, Hint.Env naming the variables to set),
// format (HintFlowDoesNotLoad). A run that ran and failed is no error: see
// Outcome.Result.
func (r *Runs) Resume(ctx context.Context, ref string, opts *ResumeOptions) (*Outcome, error) {
	run, err := r.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r.resume(ctx, run.ID, opts)
}

func (r *Runs) resume(ctx context.Context, id string, opts *ResumeOptions) (out *Outcome, err error) {
	run, err := r.st.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	if run.Finished() {
		return r.finished(ctx, run)
	}
	p, err := LoadPinned(run, &r.load)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := p.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("run %s: %w", id, cerr)
		}
	}()
	var steps []*store.Step
	if opts != nil && opts.Watch != nil {
		if steps, err = r.st.Steps(ctx, id); err != nil {
			return nil, fmt.Errorf("steps of run %s: %w", id, err)
		}
	}
	if err := r.modelsOpen(ctx, p, id, steps); err != nil {
		return nil, err
	}
	cfg := r.cfg
	if opts != nil && opts.Watch != nil {
		sink, done := opts.Watch(p, steps)
		if sink != nil {
			cfg.Sink = trace.Multi(nonNil(cfg.Sink, sink)...)
		}
		if done != nil {
			defer done()
		}
	}
	res, err := p.Resume(ctx, id, &cfg)
	if err != nil {
		if ClassOf(err) == ClassConflict {
			return nil, r.heldErr(ctx, id, err)
		}
		return nil, err
	}
	return &Outcome{Result: res, StepOrder: flowOrder(p)}, nil
}

// finished is the Outcome of resuming a finished run: its state.
func (r *Runs) finished(ctx context.Context, run *store.Run) (*Outcome, error) {
	res, err := engine.New(engine.Config{Store: r.st}).Status(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	steps, err := r.st.Steps(ctx, run.ID)
	if err != nil {
		return nil, fmt.Errorf("steps of run %s: %w", run.ID, err)
	}
	order := make([]string, len(steps))
	for i, st := range steps {
		order[i] = st.StepID
	}
	return &Outcome{Result: res, Finished: true, StepOrder: order}, nil
}

// heldErr is the conflict of a run another process holds: who holds it
// and until when, read again now.
func (r *Runs) heldErr(ctx context.Context, id string, err error) error {
	h := Hint{Code: HintHeldByAnotherProcess, RunID: id}
	if run, gerr := r.st.GetRun(ctx, id); gerr == nil {
		h.Owner, h.Until, h.Since = run.LeaseOwner, run.LeaseExpires, run.UpdatedAt
	}
	return runsErr(ClassConflict, h, err)
}

// Cancel settles the run ref names as cancelled, with reason as its error
// (default: "cancelled by a person"), and closes its pending approvals. A
// run whose process of this machine died is taken over at once; a run
// another process holds is a conflict *Error (HintHeldByAnotherProcess:
// the holder and its lease expiry; stop that process or wait for the
// lease to expire, then cancel again). A finished run is a conflict
// *Error (HintRunFinished). Cancel returns the run's row afterwards.
func (r *Runs) Cancel(ctx context.Context, ref, reason string) (*store.Run, error) {
	run, err := r.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if run.Finished() {
		return nil, finishedErr(run, "there is nothing to cancel")
	}
	if err := engine.New(r.cfg).Cancel(ctx, run.ID, reason); err != nil {
		// the run may have settled, or been taken, since it was read.
		held, gerr := r.st.GetRun(ctx, run.ID)
		if gerr == nil && held.Finished() {
			return nil, finishedErr(held, "there is nothing to cancel")
		}
		if errors.Is(err, store.ErrConflict) {
			if gerr == nil {
				run = held
			}
			h := Hint{Code: HintHeldByAnotherProcess, RunID: run.ID, Owner: run.LeaseOwner, Until: run.LeaseExpires, Since: run.UpdatedAt}
			return nil, runsErr(ClassConflict, h,
				fmt.Errorf("%w: run %s is being advanced by %s (last change %s, lease until %s): stop that process, or wait for its lease to expire, then cancel again",
					err, run.ID, h.Owner, h.Since.Local().Format(time.DateTime), h.Until.Local().Format(time.DateTime)))
		}
		return nil, err
	}
	return r.st.GetRun(ctx, run.ID)
}

func finishedErr(run *store.Run, what string) *Error {
	return runsErr(ClassConflict, Hint{Code: HintRunFinished, RunID: run.ID, Status: string(run.Status)},
		fmt.Errorf("run %s already %s; %s", run.ID, run.Status, what))
}

// PruneParams select the finished runs Prune deletes; PruneResult counts
// them.
type (
	PruneParams = store.PruneParams
	PruneResult = store.PruneResult
)

// Prune deletes the finished runs p selects, with their events, steps,
// approvals and the blobs no other run refers to (p.DryRun: lists them in
// PruneResult.RunIDs and deletes nothing). A p.Status that is not a final
// status is a business *Error. Nil p means every finished run; a zero
// p.Now is the wall clock, and a zero p.Before is p.Now.
func (r *Runs) Prune(ctx context.Context, p *PruneParams) (*PruneResult, error) {
	var q PruneParams
	if p != nil {
		q = *p
	}
	if q.Now.IsZero() {
		q.Now = time.Now()
	}
	if q.Before.IsZero() {
		q.Before = q.Now
	}
	switch q.Status {
	case "", trace.RunSucceeded, trace.RunFailed, trace.RunCancelled:
	default:
		return nil, runsErr(ClassBusiness, Hint{}, fmt.Errorf("prune: status %s is not final (succeeded, failed or cancelled): only finished runs are pruned", q.Status))
	}
	res, err := r.st.Prune(ctx, &q)
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	return res, nil
}

// EmptiesStore reports whether deleting the runs of sel (a dry run's
// selection) leaves the store without runs.
func (r *Runs) EmptiesStore(ctx context.Context, sel *PruneResult) (bool, error) {
	runs, err := r.st.ListRuns(ctx, &store.ListRunsParams{Limit: sel.Runs + 1})
	if err != nil {
		return false, err
	}
	return len(runs) <= sel.Runs, nil
}

// runMeta decodes what a run recorded about its project.
func runMeta(run *store.Run) (RunMeta, error) {
	var m RunMeta
	if len(run.Meta) > 0 {
		if err := json.Unmarshal(run.Meta, &m); err != nil {
			return m, fmt.Errorf("run %s: its metadata does not decode: %w", run.ID, err)
		}
	}
	return m, nil
}

// flowOrder lists a project's step ids in file order.
func flowOrder(p *Project) []string {
	ids := make([]string, len(p.Flow.Steps))
	for i, s := range p.Flow.Steps {
		ids[i] = s.ID
	}
	return ids
}

func nonNil(sinks ...trace.Sink) []trace.Sink {
	out := sinks[:0]
	for _, s := range sinks {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// loadRun reads the run ref names (as Get) and loads its pinned flow
// (LoadRun) with the Runs' load options. The caller closes the project.
func (r *Runs) loadRun(ctx context.Context, ref string) (*store.Run, *Project, error) {
	run, err := r.Get(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	p, err := LoadRun(ctx, r.st, run.ID, &r.load)
	if err != nil {
		return nil, nil, err
	}
	return run, p, nil
}
