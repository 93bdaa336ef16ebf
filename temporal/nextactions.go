package temporal

import "fmt"

// commandOf is the rein command line that carries out a (without
// --temporal and the server's address): what rein runs show prints, and
// NextAction.Command.
func commandOf(runID string, a NextAction) string {
	switch a.Action {
	case ActionRetry:
		return fmt.Sprintf("rein runs retry %s", runID) // --from STEP re-runs from an earlier step
	case ActionSettle:
		return fmt.Sprintf("rein runs settle %s %s --value JSON", runID, a.Step)
	case ActionSubmit:
		return fmt.Sprintf("rein runs submit %s %s --data JSON", runID, a.Step)
	}
	return fmt.Sprintf("rein runs %s %s %s", a.Action, runID, a.Step)
}

// withCommands fills in each action's Command.
func withCommands(runID string, acts []NextAction) []NextAction {
	for i := range acts {
		acts[i].Command = commandOf(runID, acts[i])
	}
	return acts
}

// closedRetry is the one thing a failed run whose workflow closed takes:
// rein runs retry, which starts a new execution of its workflow id from
// the state its failure carries (RetryRun). It is no update (Update is
// empty): a closed workflow takes none.
func closedRetry(runID string, f *RunError) NextAction {
	a := NextAction{Action: ActionRetry, Args: Decision{Action: ActionRetry},
		Why: "start the failed run again as a new execution of workflow " + runID + " (its failed steps run at their next attempt; --from STEP re-runs from STEP)"}
	if f != nil && f.Step != "" {
		a.Step = f.Step
		a.Why = "start the failed run again as a new execution of workflow " + runID + ": step " + f.Step + " runs at its next attempt (--from STEP re-runs from STEP)"
	}
	a.Command = commandOf(runID, a)
	return a
}
