package workflowtool

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
	// Deliverables are the ids of the steps whose artifacts are the
	// task's result: the flow's deliverables:, or its final steps.
	Deliverables []string `json:"deliverables,omitempty"`
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

// readTask reads task id: its row, steps and approvals.
func (w *Workflow) readTask(ctx context.Context, id string) (*task, error) {
	run, err := w.opts.Store.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	return w.readTaskOf(ctx, run)
}

// readTaskOf reads the task of run, its row as just read: its steps and
// approvals.
func (w *Workflow) readTaskOf(ctx context.Context, run *store.Run) (*task, error) {
	t, id := &task{run: run}, run.ID
	var err error
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
	order, makers := flowMakers(f)
	a := &Answer{TaskID: t.run.ID, Workflow: w.flow.Name, Status: t.run.Status, NextActions: nextActions(t, f), Artifacts: artifacts(t, order, makers, true),
		Deliverables: deliverables(f)}
	if t.run.Status == trace.RunFailed || t.run.Status == trace.RunCancelled {
		a.Failure = t.run.Error
	}
	return a
}

// deliverables are the ids of f's deliverables: its deliverables:, or its
// final steps.
func deliverables(f *flow.Flow) []string {
	if f.Deliverables != nil {
		return f.Deliverables
	}
	return f.FinalSteps()
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

// artifacts lists the accepted outputs of t, in the order of the step
// ids of order; makers names what produced each step's output when no
// settle decision did (tool:NAME, model:NAME); withOutput includes each
// output itself.
func artifacts(t *task, order []string, makers map[string]string, withOutput bool) []Artifact {
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
	for _, id := range order {
		r := rows[id]
		if r == nil || r.OutputSHA == "" || !hasOutput(r.Status) {
			continue
		}
		art := Artifact{StepID: id, Producer: producer(r, settled[id], makers[id]), Attempt: max(r.Attempt, 1), SHA256: r.OutputSHA, Status: r.Status}
		if withOutput {
			art.Output = r.Output
		}
		out = append(out, art)
	}
	return out
}

// flowMakers names the tool or model of each step of f that calls one.
func flowMakers(f *flow.Flow) (order []string, makers map[string]string) {
	makers = map[string]string{}
	for _, s := range f.Steps {
		order = append(order, s.ID)
		switch {
		case s.Type == flow.Tool:
			makers[s.ID] = "tool:" + s.Tool
		case s.Model != "":
			makers[s.ID] = "model:" + s.Model
		case s.Type == flow.LLM || s.Type == flow.Plan:
			makers[s.ID] = "model:default"
		}
	}
	return order, makers
}

// ListArtifacts returns the artifacts of the run runID of st (every
// accepted output: its step, digest, producer and attempt), in the order
// the steps started, with their outputs. It needs no flow: producers come
// from the settle decisions and the journal.
func ListArtifacts(ctx context.Context, st store.Store, runID string) ([]Artifact, error) {
	t := &task{}
	var err error
	if t.run, err = st.GetRun(ctx, runID); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	if t.steps, err = st.Steps(ctx, runID); err != nil {
		return nil, fmt.Errorf("steps of run %s: %w", runID, err)
	}
	if t.approvals, err = st.Approvals(ctx, &store.ListApprovalsParams{RunID: runID}); err != nil {
		return nil, fmt.Errorf("approvals of run %s: %w", runID, err)
	}
	events, err := st.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("journal of run %s: %w", runID, err)
	}
	var order []string
	seen := map[string]bool{}
	makers := map[string]string{}
	for _, ev := range events {
		if ev.StepID == "" {
			continue
		}
		if !seen[ev.StepID] {
			seen[ev.StepID] = true
			order = append(order, ev.StepID)
		}
		switch {
		case ev.Model != "":
			makers[ev.StepID] = "model:" + ev.Model
		case ev.Tool != "" && ev.StepType == string(flow.Tool):
			makers[ev.StepID] = "tool:" + ev.Tool
		}
	}
	for _, r := range t.steps {
		if !seen[r.StepID] {
			order = append(order, r.StepID)
		}
	}
	return artifacts(t, order, makers, true), nil
}

func hasOutput(s trace.StepStatus) bool {
	return s == trace.StepSucceeded || s == trace.StepDefaulted || s == trace.StepFellBack
}

// producer says who produced a step's output: its settle decision's
// decider (agent, adapter:NAME; a person's as person:NAME), else maker
// (tool:NAME, model:NAME), else the engine.
func producer(r *store.Step, settle *store.Approval, maker string) string {
	sub := r.Type == string(flow.Submit) || r.Type == string(flow.Source)
	switch {
	case settle != nil && sub && settle.DecidedBy != "":
		return settle.DecidedBy
	case settle != nil:
		return "person:" + orDefault(settle.DecidedBy, "unknown")
	case maker != "":
		return maker
	}
	return "engine"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
