package temporal

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
)

// An attempt's heartbeats carry what the workflow needs should its worker
// be lost (lostWork): the server keeps the last details an activity
// recorded and hands them back with its heartbeat timeout
// (temporal.TimeoutError.LastHeartbeatDetails). A call that returned
// before the worker was lost is thus known to the workflow, and in a run
// recorded after changeLostEffects a saga takes it back as it takes back
// a call whose activity reported it.

// lostWork is an attempt's heartbeat details: the effect records of the
// calls it made that returned (effectLog), kept small (no outputs: an
// effect record holds the call's key, tool, effect and its rendered
// compensation).
type lostWork struct {
	Effects []journal.Effect `json:"effects,omitempty"`
}

// recordBeat sends details as an activity heartbeat; a test's hook stands
// in for it to see what an attempt recorded.
type recordBeat func(ctx context.Context, details lostWork)

// sendBeat is the SDK's heartbeat. The SDK throttles heartbeats (one
// beat, WorkerOptions) and sends the latest details held back once the
// throttle ends, so the server holds an attempt's details at most a beat
// after they changed.
func sendBeat(ctx context.Context, details lostWork) { activity.RecordHeartbeat(ctx, details) }

// lostWorkOf reads the heartbeat details of an activity whose worker was
// lost (err a heartbeat timeout); ok is false when it recorded none (a
// worker from before lostWork, or one lost before it recorded any).
func lostWorkOf(err error) (w lostWork, ok bool) {
	var te *temporal.TimeoutError
	if !errors.As(err, &te) || !te.HasLastHeartbeatDetails() {
		return lostWork{}, false
	}
	if te.LastHeartbeatDetails(&w) != nil {
		return lostWork{}, false
	}
	return w, true
}

// noteLost notes, in a run recorded after changeLostEffects, the effect
// records the lost activity's heartbeats carried (err its error) as a
// reported activity's are noted (noteEffects): the saga takes them back.
// The version is asked only when there are some in a flow that
// compensates, so a history whose lost activities recorded none replays
// as before.
func (r *wrun) noteLost(ctx workflow.Context, err error) {
	w, ok := lostWorkOf(err)
	if !ok || len(w.Effects) == 0 || r.f.OnFailure != flow.OnFailureCompensate || version(ctx, changeLostEffects) == workflow.DefaultVersion {
		return
	}
	r.noteEffects(w.Effects)
}
