package rein

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Run runs p's flow once with input, to its end or until it waits for a
// person (Result.Status waiting, Result.Pending). With a durable store the
// run is journaled: it survives a crash and is resumed with Resume (or by
// a worker, Work).
func (c *Client) Run(ctx context.Context, p *project.Project, input any) (*Result, error) {
	return c.Start(ctx, p, input, nil)
}

// Start is Run with per-run options (a fixed RunID: an idempotent start;
// the Session). A durable run records the project's config, script, model,
// Go tools and pinned files (project.RunMeta) so that any process can
// rebuild its project to resume it.
func (c *Client) Start(ctx context.Context, p *project.Project, input any, opts *RunOptions) (*Result, error) {
	if err := checkProject(p); err != nil {
		return nil, err
	}
	return c.engine(p).Run(ctx, p.Flow, input, runOptions(p, opts))
}

// Enqueue records a pending durable run of p's flow for a worker (Work) to
// take up, and returns its id.
func (c *Client) Enqueue(ctx context.Context, p *project.Project, input any, opts *RunOptions) (string, error) {
	if err := checkProject(p); err != nil {
		return "", err
	}
	if err := c.durable("Enqueue"); err != nil {
		return "", err
	}
	return c.engine(p).Enqueue(ctx, p.Flow, input, runOptions(p, opts))
}

// runOptions are opts with the project's RunMeta, unless opts has Meta of
// its own.
func runOptions(p *project.Project, opts *RunOptions) *RunOptions {
	o := RunOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Meta == nil {
		o.Meta = p.Meta()
	}
	return &o
}

// get resolves ref with the client's reader (runs.Reader.Get).
func (c *Client) get(ctx context.Context, ref string) (*store.Run, error) {
	if err := c.durable("this operation"); err != nil {
		return nil, err
	}
	return c.reader.Get(ctx, ref)
}

// ResumeOptions are per-call settings of Resume (and of Decide when it
// resumes). A nil *ResumeOptions means none.
type ResumeOptions struct {
	// Watch, when set, is called with the rebuilt project and the run's
	// step rows just before the run resumes. It returns a sink that gets
	// the resumed run's events besides Config.Sink (nil: none),
	// and a function called once the resume returned (nil: none): a
	// progress display, for one.
	Watch func(p *project.Project, steps []*store.Step) (trace.Sink, func())
	// Project is the run's project when the caller has loaded it already
	// from the flow the run pinned (project.LoadPinned): Resume then uses
	// it instead of loading it again, and does not close it. The ref is
	// then the run's ID, and the run's row is read once, by the engine: a
	// run that has finished comes back as its state without
	// Outcome.Finished.
	Project *project.Project
}

// Outcome is what Resume or Decide did.
type Outcome struct {
	// Approval is the decision Decide recorded; nil from Resume.
	Approval *store.Approval `json:"approval"`
	// Result is the run's state after the resume: nil when Decide did not
	// resume. For a run that had finished already, it is that state and
	// Finished is set.
	Result *Result `json:"result"`
	// Finished reports that the run had finished before: nothing ran.
	Finished bool `json:"finished,omitempty"`
	// NeedsTools are the Go tools the run was started with that this Client
	// was not given (Decide only): it cannot resume the run.
	NeedsTools []string `json:"needs_tools,omitempty"`
	// StepOrder lists the run's step ids in the flow's file order (for a
	// finished run, in first-started order).
	StepOrder []string `json:"-"`
}

// Resume continues the run ref names from its last committed transition,
// with the flow it pinned (project.LoadPinned) and the Go tools of
// Config.Load.
// A finished run is not touched: its state comes back with
// Outcome.Finished set. Before anything runs, the models the run's
// unfinished steps may still call are opened (not called): one whose API
// key is not set refuses the resume and leaves the run as it was. Errors
// are *Error values: not_found (HintNoRun), conflict (HintAmbiguousRun;
// HintHeldByAnotherProcess when another process holds its lease), business
// (HintNeedsTools; HintNeedsAPIKey, Hint.Env naming the variables to set;
// HintNeedsKey, Hint.KeyID naming the encryption key rein.yaml must name:
// the run holds payloads sealed with it), format (HintFlowDoesNotLoad). A run that ran and failed is no error: see
// Outcome.Result.
func (c *Client) Resume(ctx context.Context, ref string, opts *ResumeOptions) (*Outcome, error) {
	if opts != nil && opts.Project != nil {
		// the caller read the run to load its project: ref is its ID, and
		// the engine reads the row itself (a finished run: its state).
		if err := c.durable("Resume"); err != nil {
			return nil, err
		}
		return c.resume(ctx, ref, opts)
	}
	run, err := c.get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return c.resume(ctx, run.ID, opts)
}

func (c *Client) resume(ctx context.Context, id string, opts *ResumeOptions) (out *Outcome, err error) {
	release, err := c.hold(ctx, id)
	if err != nil {
		return nil, err
	}
	defer release()
	p := (*project.Project)(nil)
	if opts != nil {
		p = opts.Project
	}
	if p == nil {
		var run *store.Run
		if run, err = c.st.GetRun(ctx, id); err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		if run.Finished() {
			if err := c.remediationStopped(ctx, run); err != nil {
				return nil, err
			}
			return c.finished(ctx, run)
		}
		if p, err = project.LoadPinned(run, &c.load); err != nil {
			return nil, err
		}
		pinned := p
		defer func() {
			if cerr := pinned.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("run %s: %w", id, cerr)
			}
		}()
	}
	var steps []*store.Step
	if opts != nil && opts.Watch != nil {
		if steps, err = c.st.Steps(ctx, id); err != nil {
			return nil, fmt.Errorf("steps of run %s: %w", id, err)
		}
	}
	if err := p.CheckModels(ctx, c.st, id, steps); err != nil {
		return nil, err
	}
	var sink trace.Sink
	if opts != nil && opts.Watch != nil {
		var done func()
		sink, done = opts.Watch(p, steps)
		if done != nil {
			defer done()
		}
	}
	res, err := c.engine(p, sink).Resume(ctx, p.Flow, id)
	if err != nil {
		if fault.ClassOf(err) == fault.Conflict {
			return nil, c.heldErr(ctx, id, err)
		}
		return nil, err
	}
	return &Outcome{Result: res, StepOrder: flowOrder(p)}, nil
}

// finished is the Outcome of resuming a finished run: its state.
func (c *Client) finished(ctx context.Context, run *store.Run) (*Outcome, error) {
	res, err := engine.New(engine.Config{Store: c.st}).Status(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	steps, err := c.st.Steps(ctx, run.ID)
	if err != nil {
		return nil, fmt.Errorf("steps of run %s: %w", run.ID, err)
	}
	order := make([]string, len(steps))
	for i, st := range steps {
		order[i] = st.StepID
	}
	return &Outcome{Result: res, Finished: true, StepOrder: order}, nil
}

// remediationStopped is the error of a resume of finished run whose
// remediation (rein runs remediate) was stopped mid-call: an undo or
// compensation was dispatched and its outcome is not recorded. A resume
// does not carry it on — its plan comes from the premise (and the
// assumptions a caller gave), which the journal does not hold — so the
// error says to remediate again, which keeps what was taken back and
// decides the call in doubt by the one rule. nil when there is none.
func (c *Client) remediationStopped(ctx context.Context, run *store.Run) error {
	in, err := engine.New(engine.Config{Store: c.st}).InFlightRemediation(ctx, run.ID)
	if err != nil || in == nil {
		return err
	}
	premise := in.Premise
	if premise == "" {
		premise = "ID (the premise it was given)"
	}
	return fault.Errorf(fault.Business, "run %s %s, but its remediation was stopped in the middle of a call: %s dispatched and the outcome is not recorded. rein runs resume does not carry a remediation on (its plan comes from the premise, which the journal does not keep): run rein runs remediate %s --premise %s again. What was taken back is not taken back again; the call in doubt is made again with the same key only when its tool is idempotent or read-only, its tool's check: is asked otherwise, and without one it is escalated to a person (rein runs approve|reject|settle)",
		run.ID, run.Status, strings.Join(in.Dispatched, ", "), run.ID, premise)
}

// heldErr is the conflict of a run another process holds: who holds it
// and until when, read again now.
func (c *Client) heldErr(ctx context.Context, id string, err error) error {
	h := fault.Hint{Code: fault.HintHeldByAnotherProcess, RunID: id}
	if run, gerr := c.st.GetRun(ctx, id); gerr == nil {
		h.Owner, h.Until, h.Since = run.LeaseOwner, run.LeaseExpires, run.UpdatedAt
	}
	return fault.Hinted(fault.Conflict, h, err)
}

// Cancel settles the run ref names as cancelled, with reason as its error
// (default: "cancelled by a person"), and closes its pending approvals. A
// run whose process of this machine died is taken over at once; a run
// another process holds is a conflict *Error (HintHeldByAnotherProcess:
// the holder and its lease expiry; stop that process or wait for the
// lease to expire, then cancel again). A finished run is a conflict
// *Error (HintRunFinished). Cancel returns the run's row afterwards.
func (c *Client) Cancel(ctx context.Context, ref, reason string) (*store.Run, error) {
	run, err := c.get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if run.Finished() {
		return nil, finishedErr(run, "there is nothing to cancel")
	}
	release, err := c.hold(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := engine.New(c.cfg).Cancel(ctx, run.ID, reason); err != nil {
		// the run may have settled, or been taken, since it was read.
		held, gerr := c.st.GetRun(ctx, run.ID)
		if gerr == nil && held.Finished() {
			return nil, finishedErr(held, "there is nothing to cancel")
		}
		if errors.Is(err, store.ErrConflict) {
			if gerr == nil {
				run = held
			}
			h := fault.Hint{Code: fault.HintHeldByAnotherProcess, RunID: run.ID, Owner: run.LeaseOwner, Until: run.LeaseExpires, Since: run.UpdatedAt}
			return nil, fault.Hinted(fault.Conflict, h,
				fmt.Errorf("%w: run %s is being advanced by %s (last change %s, lease until %s): stop that process, or wait for its lease to expire, then cancel again",
					err, run.ID, h.Owner, h.Since.Local().Format(time.DateTime), h.Until.Local().Format(time.DateTime)))
		}
		return nil, err
	}
	return c.st.GetRun(ctx, run.ID)
}

func finishedErr(run *store.Run, what string) error {
	return fault.Hinted(fault.Conflict, fault.Hint{Code: fault.HintRunFinished, RunID: run.ID, Status: string(run.Status)},
		fmt.Errorf("run %s already %s; %s", run.ID, run.Status, what))
}

// Prune deletes the finished runs p selects, with their events, steps,
// approvals and the blobs no other run refers to (p.DryRun: lists them in
// PruneResult.RunIDs and deletes nothing). A p.Status that is not a final
// status is a business *Error. Nil p means every finished run; a zero
// p.Now is the wall clock, and a zero p.Before is p.Now.
func (c *Client) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	var q store.PruneParams
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
		return nil, fault.Errorf(fault.Business, "prune: status %s is not final (succeeded, failed or cancelled): only finished runs are pruned", q.Status)
	}
	res, err := c.st.Prune(ctx, &q)
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	return res, nil
}

// EmptiesStore reports whether deleting the runs of sel (a dry run's
// selection) leaves the store without runs.
func (c *Client) EmptiesStore(ctx context.Context, sel *store.PruneResult) (bool, error) {
	runs, err := c.st.ListRuns(ctx, &store.ListRunsParams{Limit: sel.Runs + 1})
	if err != nil {
		return false, err
	}
	return len(runs) <= sel.Runs, nil
}

// flowOrder lists a project's step ids in file order.
func flowOrder(p *project.Project) []string {
	ids := make([]string, len(p.Flow.Steps))
	for i, s := range p.Flow.Steps {
		ids[i] = s.ID
	}
	return ids
}

// CheckInput checks input against p's flow as a run would before it
// starts (JSON values, the flow's inputs: schema): an *InputError says
// what does not fit; nothing runs and nothing is recorded.
func (c *Client) CheckInput(p *project.Project, input any) error {
	if err := checkProject(p); err != nil {
		return err
	}
	_, err := engine.CheckInput(p.Flow, input)
	return err
}

// Status returns the state of the durable run id as its journal and step
// rows hold it (a finished run's result, a waiting run's pending
// approvals), without running anything.
func (c *Client) Status(ctx context.Context, id string) (*Result, error) {
	if err := c.durable("Status"); err != nil {
		return nil, err
	}
	return engine.New(engine.Config{Store: c.st}).Status(ctx, id)
}

// RetryOptions are per-call settings of Retry.
type RetryOptions struct {
	// From is the step to run again from (rein runs retry --from): a step
	// that failed, or one that settled before the failure; that step and
	// every settled step downstream of it run again, the others keep their
	// outputs. Empty: the failed steps only.
	From string
	// ResumeOptions.Watch applies as for Resume; ResumeOptions.Project is
	// not used.
	ResumeOptions
}

// Retry re-opens the failed run ref names and resumes it: same run id,
// every settled step and every effect kept; the failed steps (and, with
// opts.From, that step and those downstream of it) run again at their next
// attempt, so a tool that is not idempotent gets a new idempotency key,
// and the failed attempts stay in the journal. Errors are *Error values:
// not_found (HintNoRun; a From the flow does not have, with a suggestion),
// business (HintNotFailed: the run is not failed, Hint.Status says what it
// is; a From that never ran), conflict (HintHeldByAnotherProcess).
func (c *Client) Retry(ctx context.Context, ref string, opts *RetryOptions) (out *Outcome, err error) {
	if err := c.durable("Retry"); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &RetryOptions{}
	}
	run, err := c.get(ctx, ref)
	if err != nil {
		return nil, err
	}
	release, err := c.hold(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	p, err := project.LoadPinned(run, &c.load)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := p.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("run %s: %w", run.ID, cerr)
		}
	}()
	var sink trace.Sink
	if opts.Watch != nil {
		steps, err := c.st.Steps(ctx, run.ID)
		if err != nil {
			return nil, fmt.Errorf("steps of run %s: %w", run.ID, err)
		}
		var done func()
		if sink, done = opts.Watch(p, steps); done != nil {
			defer done()
		}
	}
	res, err := c.engine(p, sink).Retry(ctx, p.Flow, run.ID, opts.From)
	if err != nil {
		if fault.ClassOf(err) == fault.Conflict {
			return nil, c.heldErr(ctx, run.ID, err)
		}
		return nil, err
	}
	return &Outcome{Result: res, StepOrder: flowOrder(p)}, nil
}
