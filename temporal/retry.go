package temporal

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
)

// A failed run's workflow closes at once (unless the worker keeps it open
// for a retry window, Workflow.RetryWindow): its Temporal status is
// Failed, its failure a non-retryable ApplicationError whose type is the
// run's fault class, whose message is the run's error and whose details
// are Closed: the run's final Status and the input a retry starts from
// (the pinned flow, the run's input and its state as Carry). rein runs
// retry (RetryRun) starts a new execution of the same workflow id with
// that input and the retry decision (Start.Retry): the steps sched.Reopens
// names run again at their next attempt (a new key), every other settled
// step keeps its output and does not run again.

// Closed is the details of a failed run's workflow failure.
type Closed struct {
	// Status is the run's final status (what QueryStatus answered).
	Status *Status `json:"status"`
	// Next is the workflow input a retry starts from: the run's own, with
	// its state as Carry.
	Next Start `json:"next"`
}

// closed is the failed run's workflow error (Closed, above), once its
// update handlers finished. refused, when set, is why the retry this
// execution was started for was refused: the run's state is unchanged,
// and it may be retried again.
func (r *wrun) closed(ctx workflow.Context, refused error) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	r.publish(ctx) // a refused retry's start set AttrStatus running
	in := r.in
	in.Carry, in.Retry = r.carry(-1), nil
	class, msg := string(fault.Business), fmt.Sprintf("run %s failed", r.runID)
	if f := r.failure; f != nil {
		class, msg = f.Class, f.Message
		if f.Step != "" {
			msg = fmt.Sprintf("step %s: %s", f.Step, f.Message)
		}
	}
	if refused != nil {
		msg = fmt.Sprintf("retry refused: %v (the run is as it failed: %s)", refused, msg)
	}
	r.closedFailed = true
	return temporal.NewNonRetryableApplicationError(msg, class, nil, Closed{Status: r.snapshot(), Next: in})
}

// retryClosed carries out the retry d this execution was started for
// (Start.Retry) on the failed run's restored state: the steps it names
// re-open (sched.ReopensTaken, as UpdateRetry's: with the steps the saga
// took back), or the retry is refused.
func (r *wrun) retryClosed(d Decision) error {
	r.published = "" // RetryRun started the execution with AttrStatus running
	if d.Action != "" && d.Action != ActionRetry {
		return fmt.Errorf("a retry takes action %q or none, not %q", ActionRetry, d.Action)
	}
	if r.status != journal.RunFailed {
		return fmt.Errorf("run %s is not failed (its status is %s): only a failed run can be retried", r.runID, r.status)
	}
	idx, err := r.reopens(d.Step, true) // what was taken back travels in the input (Carry.TakenBack)
	if err != nil {
		return err
	}
	r.reopen(idx)
	r.m.Recount()
	return nil
}

// ClosedOf is the Closed a failed run's workflow error carries (the error
// of its result, client.WorkflowRun.Get), or false when err is none.
func ClosedOf(err error) (*Closed, bool) {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.HasDetails() {
		return nil, false
	}
	var c Closed
	if ae.Details(&c) != nil || c.Status == nil {
		return nil, false
	}
	return &c, true
}

// RetryRun retries failed run runID (rein runs retry; d.Step is the from
// step, or empty for the failed steps alone). A run still open (its
// worker's retry window) takes UpdateRetry; a closed one starts again as
// a new execution of the same workflow id (the reuse policy allows a
// duplicate of a failed workflow only) from the state its failure carries
// (Closed). A retry the run cannot take is refused: by the update's
// validator, or by the new execution, which then closes failed again with
// the same state and says why.
func RetryRun(ctx context.Context, c client.Client, runID string, d Decision) error {
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return err
	}
	info := desc.GetWorkflowExecutionInfo()
	switch st := info.GetStatus(); st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return Update(ctx, c, runID, UpdateRetry, d)
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
	default:
		return fmt.Errorf("its workflow is %s, not failed: only a failed run can be retried", st)
	}
	gerr := c.GetWorkflow(ctx, runID, info.GetExecution().GetRunId()).Get(ctx, nil)
	cl, ok := ClosedOf(gerr)
	if !ok {
		return fmt.Errorf("its workflow failed without carrying the run's state (%w): a worker older than rein-retry-closed ran it; start the run again with rein run", gerr)
	}
	in := cl.Next
	d.Action = ActionRetry
	in.Retry = &d
	opts := client.StartWorkflowOptions{
		ID:                       runID,
		TaskQueue:                info.GetTaskQueue(),
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}
	if in.SearchAttributes {
		opts.TypedSearchAttributes = startAttributes(&in)
	}
	_, err = c.ExecuteWorkflow(ctx, opts, in.Flow, in)
	return err
}
