package temporal

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/journal"
)

// A long agent run continues as new when the server suggests it (its
// history grows long), or after Workflow.ContinueAfterUnits units: between
// two units of an agent step that is the only step running, with no
// decision waiting to be carried out, the run's state is handed to a new
// run of the same workflow id (Start.Carry), which goes on from there. A
// run with other steps in flight, or waiting for people, goes on as it is
// until such a moment comes.

// Carry is a run's state handed to the run that continues it.
type Carry struct {
	Steps []carriedStep `json:"steps"`
	// Agents are the sessions of agent steps, by step index.
	Agents  map[int]*carriedAgent `json:"agents,omitempty"`
	Spent   sched.Spent           `json:"spent"`
	Failure *RunError             `json:"failure,omitempty"`
}

type carriedStep struct {
	Status   string          `json:"status"`
	Attempts int             `json:"attempts,omitempty"`
	SHA      string          `json:"sha,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
}

type carriedAgent struct {
	Attempt   int                       `json:"attempt"`
	Turns     []agent.Turn              `json:"turns,omitempty"`
	Decisions map[string]agent.Decision `json:"decisions,omitempty"`
	Seq       int                       `json:"seq,omitempty"`
}

// shouldContinue reports whether the run should continue as new before
// agent step i's next unit (see above).
func (r *wrun) shouldContinue(ctx workflow.Context, i int, a *agentRun) bool {
	if r.failure != nil || len(r.m.Pending()) > 0 || len(r.answers) > 0 || len(r.inbox) > 0 {
		return false
	}
	for j := range r.f.Steps {
		if j != i && r.m.Status(j) == journal.StepRunning {
			return false
		}
	}
	if n := r.w.ContinueAfterUnits; n > 0 && a.units >= n {
		return true
	}
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

// continueAsNew is the error that continues the run as new, agent step i
// (running) to start again from its session.
func (r *wrun) continueAsNew(ctx workflow.Context, i int) error {
	c := &Carry{Steps: make([]carriedStep, len(r.f.Steps)), Agents: map[int]*carriedAgent{}, Spent: r.budget.Spent(), Failure: r.failure}
	for j, s := range r.f.Steps {
		st := r.m.Status(j)
		if j == i {
			st = journal.StepPending // it starts again, and goes on from its session
		}
		c.Steps[j] = carriedStep{Status: string(st), Attempts: r.m.Attempts(j), SHA: r.m.OutputSHA(j), Output: r.raw[s.ID], Error: r.errs[s.ID]}
	}
	for j, a := range r.agents {
		c.Agents[j] = &carriedAgent{Attempt: a.attempt, Turns: a.turns, Decisions: a.decisions, Seq: a.seq}
	}
	next := r.in
	next.Carry = c
	return workflow.NewContinueAsNewError(ctx, workflow.GetInfo(ctx).WorkflowType.Name, next)
}

// restore takes the state a continued run carried (Carry).
func (r *wrun) restore(c *Carry) {
	for j, s := range r.f.Steps {
		if j >= len(c.Steps) {
			break
		}
		cs := c.Steps[j]
		r.m.Restore(j, journal.StepStatus(cs.Status), cs.Attempts, cs.SHA)
		if len(cs.Output) > 0 {
			r.raw[s.ID] = cs.Output
			r.outputs[s.ID] = decode(cs.Output)
		}
		if cs.Error != "" {
			r.errs[s.ID] = cs.Error
		}
	}
	for j, a := range c.Agents {
		r.agents[j] = &agentRun{attempt: a.Attempt, turns: a.Turns, decisions: a.Decisions, seq: a.Seq}
	}
	r.budget.Restore(c.Spent)
	r.failure = c.Failure
	r.m.Recount()
}
