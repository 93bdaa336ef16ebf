package rein

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Decision is a person's (or a program's) answer to a step that waits for
// one.
type Decision struct {
	// Status is store.ApprovalApproved (an approval step succeeds, a tool step
	// calls its tool, an unknown or escalated step runs its next attempt),
	// ApprovalRejected (the step fails with a business error) or
	// ApprovalSettled (the step succeeds with Output).
	Status store.ApprovalStatus
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
func (c *Client) Decide(ctx context.Context, ref, step string, d Decision, opts *DecideOptions) (out *Outcome, err error) {
	switch d.Status {
	case store.ApprovalApproved, store.ApprovalRejected:
	case store.ApprovalSettled:
		if len(d.Output) == 0 {
			return nil, fault.New(fault.Business, errors.New("a settle decision needs the step's output (Decision.Output)"))
		}
		if !json.Valid(d.Output) {
			return nil, fault.New(fault.Business, errors.New("a settle decision's output (Decision.Output) is not JSON"))
		}
	default:
		return nil, fault.New(fault.Business, fmt.Errorf("decision %q is none of approved, rejected or settled", d.Status))
	}
	var run *store.Run
	if opts != nil && opts.Run != nil && opts.Run.ID == ref {
		run = opts.Run
	} else if run, err = c.get(ctx, ref); err != nil {
		return nil, err
	}
	if run.Finished() {
		return nil, finishedErr(run, "there is nothing to decide")
	}
	// Read the run's journal before writing: damage in it is found now, and
	// no decision is recorded on a run that could not go on from it.
	if _, err := c.st.Events(ctx, run.ID, 0, 0); err != nil {
		return nil, fmt.Errorf("decide step %s of run %s: nothing was recorded: %w", step, run.ID, err)
	}
	if _, err := c.st.Steps(ctx, run.ID); err != nil {
		return nil, fmt.Errorf("decide step %s of run %s: nothing was recorded: %w", step, run.ID, err)
	}
	red := project.RunRedactor(run, &c.load).Join(c.cfg.Redactor)
	output, comment := red.Bytes(d.Output), red.String(d.Comment)
	if err := c.sealDecision(ctx, run, step, &d, output, comment); err != nil {
		return nil, err
	}
	a, err := c.st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: run.ID, StepID: step, Status: d.Status,
		Output: output, Comment: comment, DecidedBy: d.By})
	if err != nil {
		return nil, c.decideErr(ctx, run, step, d.Status, err)
	}
	out = &Outcome{Approval: a}
	if out.NeedsTools, err = c.reader.NeedsTools(run); err != nil {
		return out, err
	}
	if opts == nil || !opts.Resume {
		return out, nil
	}
	res, err := c.resume(ctx, run.ID, &opts.ResumeOptions)
	if err != nil {
		e := &Error{Class: fault.ClassOf(err), Hint: fault.HintOf(err)}
		e.Err = fmt.Errorf("the decision is recorded, but run %s did not resume: %w", run.ID, err)
		return out, e
	}
	res.Approval, res.NeedsTools = a, out.NeedsTools
	return res, nil
}

// sealDecision seals d's output and comment, which are stored redacted
// (output, comment), when the redaction changed them and the run's
// rein.yaml has encryption: (project.RunCodec), beside each approval of
// step still pending, before the decision is stored: a resume then reads
// what the person wrote (engine.SealBeside). A key that cannot be read
// refuses the decision, nothing recorded.
func (c *Client) sealDecision(ctx context.Context, run *store.Run, step string, d *Decision, output []byte, comment string) error {
	if bytes.Equal(output, d.Output) && comment == d.Comment {
		return nil
	}
	codec, err := project.RunCodec(run, &c.load)
	if err != nil {
		return fault.New(fault.Business, fmt.Errorf("decide step %s of run %s: nothing was recorded: the decision holds a secret, which run %s seals at rest, and %w", step, run.ID, run.ID, err))
	}
	if codec == nil {
		return nil // stored redacted only, as the run's own secrets
	}
	pending, err := c.st.Approvals(ctx, &store.ListApprovalsParams{RunID: run.ID, Status: store.ApprovalPending})
	if err != nil {
		return fmt.Errorf("decide step %s of run %s: nothing was recorded: %w", step, run.ID, err)
	}
	var ps []engine.Payload
	for _, a := range pending {
		if a.StepID == step {
			ps = append(ps, engine.DecisionPayloads(a.ID, d.Output, output, d.Comment, comment)...)
		}
	}
	if err := engine.SealBeside(ctx, c.st, codec, run.ID, ps, time.Now()); err != nil {
		return fmt.Errorf("decide step %s of run %s: nothing was recorded: %w", step, run.ID, err)
	}
	return nil
}

// decideErr explains why a decision could not be recorded.
func (c *Client) decideErr(ctx context.Context, run *store.Run, step string, status store.ApprovalStatus, err error) error {
	all, lerr := c.st.Approvals(ctx, &store.ListApprovalsParams{RunID: run.ID})
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
		return fault.Hinted(fault.Conflict, fault.Hint{Code: fault.HintAlreadyDecided, RunID: run.ID, Status: string(last.Status), DecidedBy: last.DecidedBy,
			DecidedAt: last.DecidedAt, Waiting: waiting}, errors.New(msg))
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict) && last == nil:
		h := fault.Hint{Code: fault.HintNothingToDecide, RunID: run.ID, Waiting: waiting}
		if len(waiting) == 0 {
			return fault.Hinted(fault.Business, h, fmt.Errorf("run %s (%s) waits for no decision; there is nothing to %s", run.ID, run.Status, decideVerb(status)))
		}
		return fault.Hinted(fault.Business, h, fmt.Errorf("run %s has no pending approval for step %s; waiting for a decision: %s", run.ID, step, strings.Join(waiting, ", ")))
	}
	return fmt.Errorf("decide step %s of run %s: %w", step, run.ID, err)
}

func decideVerb(s store.ApprovalStatus) string {
	switch s {
	case store.ApprovalApproved:
		return "approve"
	case store.ApprovalRejected:
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

// RemediateOptions are per-call settings of Remediate. A nil
// *RemediateOptions uses the defaults.
type RemediateOptions struct {
	runs.ImpactOptions
	// Reason is recorded when a run that has not finished is cancelled
	// first. Defaults to "premise <ID> failed".
	Reason string
}

// Remediation is what Remediate did: the impact it acted on and the run
// afterwards (waiting when something was escalated to a person).
type Remediation struct {
	Impact *runs.ImpactView `json:"impact"`
	Run    *runs.View       `json:"run"`
	// Result is the engine's view of the run afterwards.
	Result *Result `json:"-"`
}

// Remediate carries out the impact of premise on the run ref names (rein
// runs remediate): a run that has not finished is cancelled first, so no
// step starts; then, latest completed first, each affected call is undone
// or compensated through
// the pipeline, the run's gate and the controls of its own risk tier
// (tier 3: the reviewer or a person; tier 4: a person), or frozen (marked invalid in the
// journal, escalated when tagged money, compliance or user-facing), each
// journaled with what it touched. An escalation leaves the run waiting
// for a person (Decide, then the run carries the remediation on). Calls
// remediated before are not acted on again. Errors as Impact; a run
// another process holds is a conflict *Error.
func (c *Client) Remediate(ctx context.Context, ref, premise string, opts *RemediateOptions) (*Remediation, error) {
	var io *runs.ImpactOptions
	reason := "premise " + premise + " failed"
	if opts != nil {
		io = &opts.ImpactOptions
		if opts.Reason != "" {
			reason = opts.Reason
		}
	}
	if err := c.durable("Remediate"); err != nil {
		return nil, err
	}
	im, err := c.reader.Impact(ctx, ref, premise, io)
	if err != nil {
		return nil, err
	}
	run, err := c.st.GetRun(ctx, im.RunID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", im.RunID, err)
	}
	p, err := project.LoadPinned(run, &c.load)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if stop, err := c.mustStop(ctx, run, p.Flow); err != nil {
		return nil, err
	} else if stop {
		if _, err := c.Cancel(ctx, run.ID, reason); err != nil {
			return nil, err
		}
	}
	release, err := c.hold(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := c.engine(p).Remediate(ctx, p.Flow, run.ID, premise, im.Plan())
	if err != nil {
		if fault.ClassOf(err) == fault.Conflict {
			return nil, c.heldErr(ctx, run.ID, err)
		}
		return nil, err
	}
	view, err := c.reader.Show(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	return &Remediation{Impact: im, Run: view, Result: res}, nil
}

// mustStop reports whether run could still start a step: it has not
// finished and is not only waiting on a person's decision about a
// remediation.
func (c *Client) mustStop(ctx context.Context, run *store.Run, f *flow.Flow) (bool, error) {
	if run.Finished() {
		return false, nil
	}
	if run.Status != trace.RunWaiting {
		return true, nil
	}
	pending, err := c.st.Approvals(ctx, &store.ListApprovalsParams{RunID: run.ID, Status: store.ApprovalPending})
	if err != nil {
		return false, fmt.Errorf("approvals of run %s: %w", run.ID, err)
	}
	return slices.ContainsFunc(pending, func(a *store.Approval) bool { return f.StepByID(a.StepID) != nil }), nil
}
