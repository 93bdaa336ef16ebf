package temporal

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
)

// A run's workflow that is cancelled (rein runs cancel: CancelRun) ends
// cancelled: its in-flight activities are cancelled (their futures fail
// with a CanceledError at once; a running attempt learns of it at its next
// heartbeat), no step starts after, a waiting run stops waiting, and the
// workflow closes as Canceled with the run's final Status (status
// cancelled) as the cancellation's details (StatusOf reads it back).

// changeCancelCarry: a run cancelled as it was about to continue as new
// ends cancelled (before, it continued as new, and the new run, which
// the cancellation never reached, went on).
const changeCancelCarry = "rein-cancel-carry"

// cancelledAtCarry reports whether the run was cancelled by the time it
// would continue as new: a cancellation the server took while the run's
// last workflow task was deciding to continue (the server then fails that
// task and hands the cancellation to its next one), or that came in the
// same task as what woke the run. Asked only when cancelled, so that a
// history recorded before replays as it ran.
func cancelledAtCarry(ctx workflow.Context) bool {
	return ctx.Err() != nil && version(ctx, changeCancelCarry) != workflow.DefaultVersion
}

// ended is the workflow's return for drive's st and err: as they are,
// unless the workflow was cancelled, then the run ends cancelled (above).
func (r *wrun) ended(ctx workflow.Context, st *Status, err error) (*Status, error) {
	if ctx.Err() == nil {
		return st, err
	}
	if err != nil && !temporal.IsCanceledError(err) {
		return st, err // a continue-as-new or a workflow error stands
	}
	if err == nil && (st == nil || st.Status != string(journal.RunCancelled)) {
		return st, err // it settled before the cancellation took effect
	}
	r.fail("", fault.Cancelled, "the run's workflow was cancelled")
	r.status = journal.RunCancelled
	r.m.SettleRun(journal.RunCancelled)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	r.publish(dctx)
	return nil, temporal.NewCanceledError(*r.snapshot()) // a value: the test suite hands details back unencoded
}

// StatusOf is the run's final Status that a closed workflow's error
// carries (the error of its result, client.WorkflowRun.Get): a failed
// run's Closed, or a cancelled run's cancellation details; false when err
// carries none.
func StatusOf(err error) (*Status, bool) {
	if cl, ok := ClosedOf(err); ok {
		return cl.Status, true
	}
	var ce *temporal.CanceledError
	if !errors.As(err, &ce) || !ce.HasDetails() {
		return nil, false
	}
	var st Status
	if ce.Details(&st) != nil || st.Status == "" {
		return nil, false
	}
	return &st, true
}
