package temporal

import "go.temporal.io/sdk/workflow"

// Versions of the run workflow. The rule: a change to workflow code that
// would take a run already in a history another way (another command, in
// another order) goes behind workflow.GetVersion with a change id of its
// own, asked where the runs part ways and nowhere else, so that a history
// recorded before the change replays (GetVersion answers DefaultVersion
// there and the old branch runs) and a new run records the marker and
// takes the new one. The old branch stays as long as runs of it may be in
// flight or replayed; every committed history under testdata/histories
// must replay (TestReplay).
const (
	// changeRepeat: repeat steps run their rounds as activities (before,
	// such a step failed at once with a message saying they did not run on
	// Temporal).
	changeRepeat = "rein-repeat"
	// changeRetry: a failed run stays open for UpdateRetry for the retry
	// window (before, it closed as it failed).
	changeRetry = "rein-retry"
	// changeRetryClosed: a failed run closes at once by default, as a
	// failed workflow carrying its state (Closed); rein runs retry starts
	// it again (RetryRun). Before, it stayed open for 24 hours and closed
	// as Completed.
	changeRetryClosed = "rein-retry-closed"
	// changeContinueAsNew: a long run continues as new (carry.go).
	changeContinueAsNew = "rein-continue-as-new"
	// changeDoubt: a for_each item's call, an item's fallback, a repeat
	// round's call or a step's fallback found in doubt asks its tool's
	// check: before a person (doubt.go), and a for_each step parked in
	// doubt keeps its settled items. Before, such an item or round parked
	// the step at once (the whole for_each step ran again when approved)
	// and a lost fallback failed its step.
	changeDoubt = "rein-doubt-check"
	// changePremiseHold: a step in flight (for_each items, repeat rounds,
	// an agent's turns and calls) starts no further unit while a failed
	// premise waits for a person (hold.go). Before, it ran on to its end.
	changePremiseHold = "rein-premise-hold"
	// changeLostEffects: an activity whose worker was lost hands the
	// workflow the effect records its heartbeats carried (lostwork.go),
	// which a saga takes back. Before, such an activity reported nothing.
	changeLostEffects = "rein-lost-effects"
	// changeLostPlan: a plan step whose attempt's worker was lost continues
	// the plan its heartbeats carried (lostwork.go) when it is made again,
	// its succeeded plan steps not made again. Before, it ran from its
	// start (a new plan).
	changeLostPlan = "rein-lost-plan"
)

// version is the version of change id this run takes: DefaultVersion in
// a history recorded before it, else its latest (1).
func version(ctx workflow.Context, id string) workflow.Version {
	return workflow.GetVersion(ctx, id, workflow.DefaultVersion, 1)
}
