package workflowtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// start starts a task (a durable run) and runs what is autonomous up to
// the first step that waits. The flow's idempotency may find the task
// already started: then nothing runs and Existing is set.
func (w *Workflow) start(ctx context.Context, req *Request) (*Answer, error) {
	if !w.flow.Enabled {
		return nil, errorf(fault.Policy, "", "workflow %s is disabled (enabled: false in its flow): enable it to start tasks", w.flow.Name)
	}
	if req.WorkflowID != "" && req.WorkflowID != w.flow.ID && req.WorkflowID != w.flow.Name {
		return nil, errorf(fault.NotFound, "/workflow_id", "workflow_id %q is not this tool's workflow (%s)", req.WorkflowID, orDefault(w.flow.ID, w.flow.Name))
	}
	var input any
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &input); err != nil {
			return nil, errorf(fault.Format, "/input", "input is not JSON: %v", err)
		}
	}
	p, err := project.Load(w.path, w.opts.Load)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if p.Flow.Inputs != nil {
		var se *flow.SchemaError
		if err := p.Flow.Inputs.Validate(input); errors.As(err, &se) {
			e := &Error{Type: fault.Business, Pointer: "/input", Message: fmt.Sprintf("the input does not fit the inputs schema of workflow %s: fix each problem at its pointer and start again", w.flow.Name)}
			for _, v := range se.Violations {
				e.Problems = append(e.Problems, Problem{Pointer: v.Pointer, Reason: v.Message})
			}
			return nil, e
		}
	}
	// a caller scoped to a tenant (rein serve's /mcp) starts its tenant's run.
	tenant, _ := runs.TenantOf(ctx)
	res, err := w.client.Start(ctx, p, input, &rein.RunOptions{Session: req.SessionID, Tenant: tenant})
	if err != nil {
		if errors.Is(err, engine.ErrSessionRequired) {
			return nil, errorf(fault.Business, "/session_id", "workflow %s keys its tasks by session (idempotency: session_workflow_input_hash): start it with a session_id", w.flow.Name)
		}
		var ie *engine.InputError
		if errors.As(err, &ie) {
			return nil, errorf(fault.Business, "/input", "%v: fix the input and start again", err)
		}
		return nil, err
	}
	run, err := w.opts.Store.GetRun(ctx, res.RunID)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", res.RunID, err)
	}
	if scoped, ok := runs.TenantOf(ctx); ok && run.Tenant != scoped {
		// the flow's idempotency key named another tenant's task: not shown.
		return nil, errorf(fault.Conflict, "/session_id", "workflow %s keys its tasks by session and input, and this key is taken outside your tenant: start with another session_id", w.flow.Name)
	}
	t, err := w.recover(ctx, run)
	if err != nil {
		return nil, err
	}
	a := w.answer(t, p.Flow)
	a.Existing = res.Existing
	return a, nil
}

// recover reads the task of run (its row as just read), resuming it first when it was left pending (a
// decision was recorded but the process stopped before the run went on).
func (w *Workflow) recover(ctx context.Context, run *store.Run) (*task, error) {
	t, err := w.readTaskOf(ctx, run)
	if err != nil {
		return nil, err
	}
	if t.run.Status != trace.RunPending {
		return t, nil
	}
	if _, err := w.client.Resume(ctx, run.ID, nil); err != nil && fault.HintOf(err).Code != fault.HintHeldByAnotherProcess {
		return nil, err
	}
	return w.readTask(ctx, run.ID)
}

// openTask reads the task of req with its pinned flow, after recovering
// it. The caller closes the project.
func (w *Workflow) openTask(ctx context.Context, req *Request) (*task, *project.Project, error) {
	if req.TaskID == "" {
		return nil, nil, errorf(fault.Format, "/task_id", "%s needs task_id (start answers it)", req.Action)
	}
	run, err := w.client.Runs().Get(ctx, req.TaskID)
	if err != nil {
		e := asError(err)
		e.Pointer = "/task_id"
		if e.Type == fault.NotFound {
			e.Message = fmt.Sprintf("task %q is unknown: start a task, and use the task_id its answer holds", req.TaskID)
		}
		return nil, nil, e
	}
	if run.Flow != w.flow.Name {
		return nil, nil, errorf(fault.NotFound, "/task_id", "task %s belongs to workflow %s, not %s", run.ID, run.Flow, w.flow.Name)
	}
	t, err := w.recover(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	p, err := project.LoadPinned(t.run, w.opts.Load)
	if err != nil {
		return nil, nil, err
	}
	return t, p, nil
}

// status answers the task's state.
func (w *Workflow) status(ctx context.Context, req *Request) (*Answer, error) {
	t, p, err := w.openTask(ctx, req)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return w.answer(t, p.Flow), nil
}

// cancel cancels the task; a finished task is a conflict.
func (w *Workflow) cancel(ctx context.Context, req *Request) (*Answer, error) {
	t, p, err := w.openTask(ctx, req)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if t.run.Finished() {
		return nil, errorf(fault.Conflict, "/task_id", "task %s has finished (%s): there is nothing to cancel", t.run.ID, t.run.Status)
	}
	reason := orDefault(req.Reason, "cancelled by the agent")
	if _, err := w.client.Cancel(ctx, t.run.ID, reason); err != nil {
		return nil, err
	}
	if t, err = w.readTask(ctx, t.run.ID); err != nil {
		return nil, err
	}
	return w.answer(t, p.Flow), nil
}

// readyStep checks that req's step of t waits for the agent, and returns it.
func readyStep(t *task, f *flow.Flow, req *Request) (*flow.Step, error) {
	if req.StepID == "" {
		return nil, errorf(fault.Format, "/step_id", "%s needs step_id: one of next_actions", req.Action)
	}
	if t.run.Finished() {
		return nil, errorf(fault.Conflict, "/task_id", "task %s has finished (%s): nothing more can be submitted", t.run.ID, t.run.Status)
	}
	s := f.StepByID(req.StepID)
	if s == nil {
		ids := make([]string, len(f.Steps))
		for i, x := range f.Steps {
			ids[i] = x.ID
		}
		return nil, errorf(fault.NotFound, "/step_id", "workflow %s has no step %q; its steps: %s", f.Name, req.StepID, strings.Join(ids, ", "))
	}
	switch {
	case s.Type != flow.Submit && s.Type != flow.Source:
		return nil, errorf(fault.Business, "/step_id", "step %s is a %s step: the runtime performs it, nothing is submitted to it", s.ID, s.Type)
	case req.Action == "submit" && s.Type == flow.Source:
		return nil, errorf(fault.Business, "/action", "step %s is a source step: call submit_from_source, and its adapter %s produces the output", s.ID, s.Adapter)
	case req.Action == "submit_from_source" && s.Type == flow.Submit:
		return nil, errorf(fault.Business, "/action", "step %s is a submit step: call submit with its output as data", s.ID)
	case req.Skill != "" && s.Skill != "" && req.Skill != s.Skill:
		return nil, errorf(fault.Business, "/skill", "step %s has skill %s, not %s", s.ID, s.Skill, req.Skill)
	}
	a := t.pending(s.ID)
	if a != nil && a.Kind == store.KindSubmission {
		return s, nil
	}
	for _, a := range t.approvals {
		if a.StepID == s.ID && a.Status == store.ApprovalSettled {
			e := errorf(fault.Conflict, "/step_id", "step %s accepted another submission already: read status for what is ready now", s.ID)
			e.NextActions = nextActions(t, f)
			return nil, e
		}
	}
	status := trace.StepPending
	for _, r := range t.steps {
		if r.StepID == s.ID {
			status = r.Status
		}
	}
	e := errorf(fault.Business, "/step_id", "step %s is not ready (%s): it waits for its upstream steps %s; submit to a step of next_actions", s.ID, status, strings.Join(s.Requires, ", "))
	e.NextActions = nextActions(t, f)
	return nil, e
}
