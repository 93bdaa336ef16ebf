package rein

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
)

// Decision is a person's (or a program's) answer to a step that waits for
// one.
type Decision struct {
	// Status is ApprovalApproved (an approval step succeeds, a tool step
	// calls its tool, an unknown or escalated step runs its next attempt),
	// ApprovalRejected (the step fails with a business error) or
	// ApprovalSettled (the step succeeds with Output).
	Status ApprovalStatus
	// Comment says why; it is recorded with the decision.
	Comment string
	// Output is the step's output, for ApprovalSettled only: JSON checked
	// against the step's output schema when the run resumes.
	Output json.RawMessage
	// By names who decided.
	By string
}

// DecideOptions are per-call settings of Decide. A nil *DecideOptions
// records the decision only.
type DecideOptions struct {
	// Resume resumes the run once the decision is recorded, as Resume does.
	Resume bool
	ResumeOptions
	// Run, when set, is the run's row as the caller read it (ref is then
	// its ID): Decide does not read it again. The store still refuses a
	// decision the run no longer waits for.
	Run *store.Run
}

// Decide records d on the pending approval of step in the run ref names,
// then, with opts.Resume, resumes the run. Errors are *Error values:
// not_found (HintNoRun), conflict (HintAmbiguousRun; HintRunFinished: the
// run has finished; HintAlreadyDecided: the step was decided already, by
// whom and when), business (HintNothingToDecide: the step does not wait;
// Hint.Waiting lists those that do; a Status that is no decision, a
// settle without Output). When the decision was recorded but the resume
// failed (HintNeedsTools, HintNeedsAPIKey, HintHeldByAnotherProcess),
// Decide returns the Outcome with its Approval and the error: the decision
// stands, as without opts.Resume, and the run goes on with a later Resume,
// or with a worker.
func (r *Runs) Decide(ctx context.Context, ref, step string, d Decision, opts *DecideOptions) (out *Outcome, err error) {
	switch d.Status {
	case ApprovalApproved, ApprovalRejected:
	case ApprovalSettled:
		if len(d.Output) == 0 {
			return nil, runsErr(ClassBusiness, Hint{}, errors.New("a settle decision needs the step's output (Decision.Output)"))
		}
		if !json.Valid(d.Output) {
			return nil, runsErr(ClassBusiness, Hint{}, errors.New("a settle decision's output (Decision.Output) is not JSON"))
		}
	default:
		return nil, runsErr(ClassBusiness, Hint{}, fmt.Errorf("decision %q is none of approved, rejected or settled", d.Status))
	}
	var run *store.Run
	if opts != nil && opts.Run != nil && opts.Run.ID == ref {
		run = opts.Run
	} else if run, err = r.Get(ctx, ref); err != nil {
		return nil, err
	}
	if run.Finished() {
		return nil, finishedErr(run, "there is nothing to decide")
	}
	red := r.redactor(run)
	a, err := r.st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: run.ID, StepID: step, Status: d.Status,
		Output: red.Bytes(d.Output), Comment: red.String(d.Comment), DecidedBy: d.By})
	if err != nil {
		return nil, r.decideErr(ctx, run, step, d.Status, err)
	}
	out = &Outcome{Approval: a}
	if out.NeedsTools, err = r.needsTools(run); err != nil {
		return out, err
	}
	if opts == nil || !opts.Resume {
		return out, nil
	}
	res, err := r.resume(ctx, run.ID, &opts.ResumeOptions)
	if err != nil {
		e := &Error{Class: ClassOf(err), Hint: HintOf(err)}
		e.Err = fmt.Errorf("the decision is recorded, but run %s did not resume: %w", run.ID, err)
		return out, e
	}
	res.Approval, res.NeedsTools = a, out.NeedsTools
	return res, nil
}

// decideErr explains why a decision could not be recorded.
func (r *Runs) decideErr(ctx context.Context, run *store.Run, step string, status ApprovalStatus, err error) error {
	all, lerr := r.st.Approvals(ctx, &store.ListApprovalsParams{RunID: run.ID})
	if lerr != nil {
		return fmt.Errorf("decide step %s of run %s: %w", step, run.ID, err)
	}
	var waiting []string
	var last *store.Approval
	for _, a := range all {
		if a.Status == store.ApprovalPending {
			waiting = append(waiting, a.StepID)
		}
		if a.StepID == step && (last == nil || !a.CreatedAt.Before(last.CreatedAt)) {
			last = a
		}
	}
	switch {
	case errors.Is(err, store.ErrConflict) && last != nil && last.Status != store.ApprovalPending:
		msg := fmt.Sprintf("step %s of run %s was already %s by %s at %s", step, run.ID, last.Status, orSomeone(last.DecidedBy),
			last.DecidedAt.Local().Format("2006-01-02 15:04:05"))
		if len(waiting) > 0 {
			msg += fmt.Sprintf("; still waiting: %s", strings.Join(waiting, ", "))
		}
		return runsErr(ClassConflict, Hint{Code: HintAlreadyDecided, RunID: run.ID, Status: string(last.Status), DecidedBy: last.DecidedBy,
			DecidedAt: last.DecidedAt, Waiting: waiting}, errors.New(msg))
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict) && last == nil:
		h := Hint{Code: HintNothingToDecide, RunID: run.ID, Waiting: waiting}
		if len(waiting) == 0 {
			return runsErr(ClassBusiness, h, fmt.Errorf("run %s (%s) waits for no decision; there is nothing to %s", run.ID, run.Status, decideVerb(status)))
		}
		return runsErr(ClassBusiness, h, fmt.Errorf("run %s has no pending approval for step %s; waiting for a decision: %s", run.ID, step, strings.Join(waiting, ", ")))
	}
	return fmt.Errorf("decide step %s of run %s: %w", step, run.ID, err)
}

func decideVerb(s ApprovalStatus) string {
	switch s {
	case ApprovalApproved:
		return "approve"
	case ApprovalRejected:
		return "reject"
	}
	return "settle"
}

func orSomeone(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

// redactor hides the secrets of run's project in what a decision records:
// RunsOptions.Run's Redactor, or the environment's and those of the
// rein.yaml the run was started with (LoadOptions.Config instead, when
// set), as the run's own engine hid them.
func (r *Runs) redactor(run *store.Run) *redact.Redactor {
	if r.cfg.Redactor != nil {
		return r.cfg.Redactor
	}
	path := r.load.Config
	if path == "" {
		if m, err := runMeta(run); err == nil {
			path = m.Config
		}
	}
	var cfg *flow.Config
	if path != "" {
		cfg, _ = flow.LoadConfig(path) // unreadable: the environment's secrets still go
	}
	return secrets(cfg, r.load.getenv())
}
