package bridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Answer is what every action returns: the task, its status, what the
// agent can do next (empty once the task is final), the artifacts so far
// and, from prepare_delivery, the delivery.
type Answer struct {
	TaskID   string          `json:"task_id"`
	Workflow string          `json:"workflow"`
	Status   trace.RunStatus `json:"status"`
	// Existing is set by start when the flow's idempotency found the task
	// already started: nothing new ran.
	Existing bool `json:"existing,omitempty"`
	// NextActions are the ready steps; empty when the task is final.
	NextActions []NextAction `json:"next_actions"`
	Artifacts   []Artifact   `json:"artifacts"`
	// Failure is why a failed or cancelled task ended.
	Failure json.RawMessage `json:"failure,omitempty"`
	// Delivery lists the files prepare_delivery wrote.
	Delivery *Delivery `json:"delivery,omitempty"`
}

// NextAction is one step the task waits on.
type NextAction struct {
	StepID string `json:"step_id"`
	// Action is submit (the agent submits the output), submit_from_source
	// (the agent asks the step's adapter to produce it) or confirm (a
	// person must approve, reject or settle the step).
	Action string `json:"action"`
	Skill  string `json:"skill,omitempty"`
	// OutputSchema is the JSON Schema the step's output must satisfy.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// RequiresConfirmation says a person, not the agent, must act.
	RequiresConfirmation bool   `json:"requires_confirmation"`
	Instruction          string `json:"instruction"`
}

// Artifact is an accepted output: the step that holds it, its content
// digest (sha256 of its canonical JSON), who produced it (agent,
// adapter:NAME, tool:NAME, model:NAME, person:NAME or engine) and in which
// attempt.
type Artifact struct {
	StepID   string           `json:"step_id"`
	Producer string           `json:"producer"`
	Attempt  int              `json:"attempt"`
	SHA256   string           `json:"sha256"`
	Status   trace.StepStatus `json:"status"`
	Output   json.RawMessage  `json:"output,omitempty"`
}

// task is what one call read about a task from the store.
type task struct {
	run       *store.Run
	steps     []*store.Step
	approvals []*store.Approval
}

func (w *Workflow) readTask(ctx context.Context, id string) (*task, error) {
	t := &task{}
	var err error
	if t.run, err = w.opts.Store.GetRun(ctx, id); err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	if t.steps, err = w.opts.Store.Steps(ctx, id); err != nil {
		return nil, fmt.Errorf("steps of task %s: %w", id, err)
	}
	if t.approvals, err = w.opts.Store.Approvals(ctx, &store.ListApprovalsParams{RunID: id}); err != nil {
		return nil, fmt.Errorf("approvals of task %s: %w", id, err)
	}
	return t, nil
}

// pending returns the pending approval of step, or nil.
func (t *task) pending(step string) *store.Approval {
	for _, a := range t.approvals {
		if a.StepID == step && a.Status == store.ApprovalPending {
			return a
		}
	}
	return nil
}

// answer builds the answer of t with the steps of f.
func (w *Workflow) answer(t *task, f *flow.Flow) *Answer {
	a := &Answer{TaskID: t.run.ID, Workflow: w.flow.Name, Status: t.run.Status, NextActions: nextActions(t, f), Artifacts: artifacts(t, f, true)}
	if t.run.Status == trace.RunFailed || t.run.Status == trace.RunCancelled {
		a.Failure = t.run.Error
	}
	return a
}

// nextActions lists what t waits on, in flow order; none once t is final.
func nextActions(t *task, f *flow.Flow) []NextAction {
	out := []NextAction{}
	if t.run.Finished() {
		return out
	}
	for _, s := range f.Steps {
		a := t.pending(s.ID)
		if a == nil {
			continue
		}
		na := NextAction{StepID: s.ID, Skill: s.Skill}
		if s.OutputSchema != nil {
			na.OutputSchema = s.OutputSchema.JSON()
		}
		switch {
		case a.Kind == store.KindSubmission && s.Type == flow.Source:
			na.Action = "submit_from_source"
			na.Instruction = fmt.Sprintf("call submit_from_source with task_id and step_id %s: adapter %s produces the output from the upstream artifacts", s.ID, s.Adapter)
		case a.Kind == store.KindSubmission:
			na.Action = "submit"
			na.Instruction = fmt.Sprintf("call submit with task_id, step_id %s and data: the step's output as JSON valid against output_schema", s.ID)
			if s.Skill != "" {
				na.Instruction = fmt.Sprintf("perform skill %s, then call submit with task_id, step_id %s, skill %s and data: the output as JSON valid against output_schema", s.Skill, s.ID, s.Skill)
			}
		default:
			na.Action, na.RequiresConfirmation = "confirm", true
			na.Instruction = "a person must decide (approve, reject or settle): " + a.Message
		}
		out = append(out, na)
	}
	return out
}

// artifacts lists the accepted outputs of t in flow order; withOutput
// includes each output itself.
func artifacts(t *task, f *flow.Flow, withOutput bool) []Artifact {
	rows := map[string]*store.Step{}
	for _, r := range t.steps {
		rows[r.StepID] = r
	}
	settled := map[string]*store.Approval{}
	for _, a := range t.approvals {
		if a.Status == store.ApprovalSettled {
			settled[a.StepID] = a
		}
	}
	out := []Artifact{}
	for _, s := range f.Steps {
		r := rows[s.ID]
		if r == nil || r.OutputSHA == "" || !hasOutput(r.Status) {
			continue
		}
		art := Artifact{StepID: s.ID, Producer: producer(s, settled[s.ID]), Attempt: r.Attempt, SHA256: r.OutputSHA, Status: r.Status}
		if withOutput {
			art.Output = r.Output
		}
		out = append(out, art)
	}
	return out
}

func hasOutput(s trace.StepStatus) bool {
	return s == trace.StepSucceeded || s == trace.StepDefaulted || s == trace.StepFellBack
}

// producer says who produced step s's output; settle is its settle
// decision, if any.
func producer(s *flow.Step, settle *store.Approval) string {
	switch {
	case settle != nil && settle.DecidedBy != "" && (s.Type == flow.Submit || s.Type == flow.Source):
		return settle.DecidedBy
	case settle != nil:
		return "person:" + orDefault(settle.DecidedBy, "unknown")
	case s.Type == flow.Tool:
		return "tool:" + s.Tool
	case s.Type == flow.LLM, s.Type == flow.Route && s.Model != "", s.Type == flow.Plan:
		return "model:" + orDefault(s.Model, "default")
	}
	return "engine"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
