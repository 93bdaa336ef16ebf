package agent

import (
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/plan"
)

// PlanRun is the sub-run of one execute_plan call: the plan runs inside
// its agent run, delimited in the journal (PlanJournal: plan_started, the
// plan_step_* events, plan_finished), with a status and a step budget of
// its own. It is kept on the call (Call.PlanRun), so a transcript shows
// what became of each plan step.
type PlanRun struct {
	Objective string        `json:"objective"`
	Status    PlanRunStatus `json:"status"`
	// MaxSteps is the sub-run's step budget (PlanOptions.MaxSteps): the
	// longest plan, and the most tool calls it makes. Executed counts the
	// tool calls made so far (a waiting step is not counted until it runs).
	// Neither touches the agent's own budgets.
	MaxSteps int           `json:"max_steps"`
	Executed int           `json:"executed"`
	Steps    []PlanRunStep `json:"steps,omitempty"`
	// ErrorType and Error say why it failed or was rejected (as the
	// answer's error_type and error).
	ErrorType string `json:"error_type,omitempty"`
	Error     string `json:"error,omitempty"`
}

// PlanRunStatus is where a plan's sub-run stands.
type PlanRunStatus string

// Plan sub-run statuses.
const (
	// PlanActive: the sub-run started, or continues after people decided
	// (only in the plan_started record).
	PlanActive    PlanRunStatus = "running"
	PlanSucceeded PlanRunStatus = "succeeded"
	// PlanFailed: a step failed, or the budget ran out; the steps after
	// it did not run.
	PlanFailed PlanRunStatus = "failed"
	// PlanRejected: the plan was refused before anything ran (invalid, too
	// long for the budget, nested).
	PlanRejected PlanRunStatus = "rejected"
	// PlanWaiting: steps wait for a person; the agent run is parked.
	PlanWaiting PlanRunStatus = "waiting"
)

// PlanRunStep is what became of one plan step: succeeded, failed,
// waiting (for a person), or not_run. Key is its call's idempotency key.
type PlanRunStep struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	Key    string `json:"key,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Step statuses of PlanRunStep besides plan's own "succeeded" and "failed".
const (
	stepWaiting = "waiting"
	stepNotRun  = "not_run"
)

// newPlanRun starts the sub-run record of p: every step not run, but those
// completed before (a plan continued after people decided).
func newPlanRun(p *plan.Plan, objective string, maxSteps int, completed []plan.StepResult, executed int) *PlanRun {
	run := &PlanRun{Objective: objective, Status: PlanActive, MaxSteps: maxSteps, Executed: executed, Steps: make([]PlanRunStep, len(p.Steps))}
	done := make(map[string]bool, len(completed))
	for _, r := range completed {
		done[r.ID] = true
	}
	for i, s := range p.Steps {
		run.Steps[i] = PlanRunStep{ID: s.ID, Tool: s.Tool, Status: stepNotRun}
		if done[s.ID] {
			run.Steps[i].Status = "succeeded"
		}
	}
	return run
}

// see keeps what an executor event says about a step. Events come one at a
// time (plan.ExecutorConfig.OnEvent).
func (run *PlanRun) see(ev plan.Event) {
	for i := range run.Steps {
		st := &run.Steps[i]
		if st.ID != ev.PlanStep {
			continue
		}
		switch ev.Kind {
		case plan.StepStarted:
			st.Key = ev.IdempotencyKey
		case plan.StepSettled:
			st.Status, st.Error = ev.Status, ev.Error
		case plan.StepWaiting:
			st.Status, st.Error = stepWaiting, ""
		}
	}
}

// finish settles the record from the executor's outcome.
func (run *PlanRun) finish(executed int, err error, waiting bool) {
	run.Executed = executed
	switch {
	case waiting:
		run.Status = PlanWaiting
	case err == nil:
		run.Status = PlanSucceeded
	default:
		run.Status, run.ErrorType, run.Error = PlanFailed, string(fault.ClassOf(err)), err.Error()
	}
}
