package workflowtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// submit checks an output for a ready submit or source step (the agent's
// data, or what the step's adapter produced), and accepts it: recorded as
// the step's settle decision, after which the task runs on up to its next
// wait. A rejected output is journaled and the step stays ready.
func (w *Workflow) submit(ctx context.Context, req *Request) (*Answer, error) {
	t, p, err := w.openTask(ctx, req)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	s, err := readyStep(t, p.Flow, req)
	if err != nil {
		return nil, err
	}
	by := "agent"
	var out any
	if s.Type == flow.Source {
		by = "adapter:" + s.Adapter
		if out, err = w.fromSource(ctx, t, p, s); err != nil {
			return nil, err
		}
	} else {
		if len(req.Data) == 0 {
			return nil, errorf(fault.Format, "/data", "submit needs data: step %s's output as JSON", s.ID)
		}
		if err := json.Unmarshal(req.Data, &out); err != nil {
			e := errorf(fault.Format, "/data", "the data for step %s is not JSON (%v): submit the output as one JSON value", s.ID, err)
			w.journalRejection(ctx, t.run.ID, s, e, req.Data)
			return nil, e
		}
	}
	canon, err := value.AppendCanonical(nil, out)
	if err != nil {
		return nil, errorf(fault.Format, "/data", "the data for step %s is not JSON: %v", s.ID, err)
	}
	if e := check(ctx, t, s, out, canon); e != nil {
		w.journalRejection(ctx, t.run.ID, s, e, canon)
		return nil, e
	}
	_, err = w.client.Decide(ctx, t.run.ID, s.ID, rein.Decision{Status: store.ApprovalSettled, Output: canon, By: by,
		Comment: "submitted by the workflow tool"}, &rein.DecideOptions{Run: t.run})
	if err != nil {
		if fault.HintOf(err).Code == fault.HintAlreadyDecided {
			e := asError(err)
			e.Retryable, e.Message = true, fmt.Sprintf("step %s took another submission meanwhile: read status, then submit to what is ready", s.ID)
			return nil, e
		}
		return nil, err
	}
	// the task's pinned project resumes it; a process that holds the task
	// (another call that took it up meanwhile) runs it on instead.
	if _, err := w.client.Resume(ctx, t.run.ID, &rein.ResumeOptions{Project: p}); err != nil && !errors.Is(err, store.ErrConflict) {
		return nil, fmt.Errorf("the submission is accepted, but task %s did not go on: %w", t.run.ID, err)
	}
	if t, err = w.readTask(ctx, t.run.ID); err != nil {
		return nil, err
	}
	return w.answer(t, p.Flow), nil
}

// check holds out (canon: its canonical JSON) to step s's contract: its
// output_schema, max_output_bytes and gate. It returns an *Error listing
// every problem, or nil.
func check(ctx context.Context, t *task, s *flow.Step, out any, canon []byte) *Error {
	var problems []Problem
	if int64(len(canon)) > s.MaxOutputBytes {
		problems = append(problems, Problem{Reason: fmt.Sprintf("the output is %d bytes, more than max_output_bytes %d", len(canon), s.MaxOutputBytes)})
	}
	if s.OutputSchema != nil {
		if err := s.OutputSchema.Validate(out); err != nil {
			var se *flow.SchemaError
			if errors.As(err, &se) {
				for _, v := range se.Violations {
					problems = append(problems, Problem{Pointer: v.Pointer, Reason: v.Message})
				}
			} else {
				problems = append(problems, Problem{Reason: err.Error()})
			}
		}
	}
	if len(problems) == 0 && s.Gate != nil {
		ok, err := s.Gate.EvalContext(ctx, gateScope(t, s, out))
		switch {
		case err != nil:
			problems = append(problems, Problem{Reason: fmt.Sprintf("gate %q could not be evaluated on the output: %v", s.Gate.Source(), err)})
		case !ok:
			problems = append(problems, Problem{Reason: fmt.Sprintf("gate %q does not hold on the output: change the output so that it holds", s.Gate.Source())})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	what := "contract (output_schema " + schemaName(s) + ")"
	if s.Gate != nil && problems[0].Reason != "" && s.OutputSchema == nil {
		what = "gate"
	}
	return &Error{Type: fault.Business, Pointer: "/data", Problems: problems,
		Message: fmt.Sprintf("the output for step %s breaks its %s: %d %s; fix each at its pointer and submit again (the step is still ready)",
			s.ID, what, len(problems), pluralize(len(problems), "problem", "problems"))}
}

func schemaName(s *flow.Step) string {
	if s.OutputSchema == nil {
		return "none"
	}
	return s.OutputSchema.Name
}

func pluralize(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// gateScope is what a submitted output's gate reads: the input, the
// upstream outputs by step id, and the output (as output and by its id).
func gateScope(t *task, s *flow.Step, out any) map[string]any {
	scope := upstream(t, nil)
	scope["output"], scope[s.ID] = out, out
	return scope
}

// upstream returns the task's input and the outputs of its steps (of
// only, when non-nil) by step id.
func upstream(t *task, only []string) map[string]any {
	m := map[string]any{}
	var in any
	if len(t.run.Input) > 0 && json.Unmarshal(t.run.Input, &in) == nil {
		m["input"] = in
	}
	want := map[string]bool{}
	for _, id := range only {
		want[id] = true
	}
	for _, r := range t.steps {
		if !hasOutput(r.Status) || only != nil && !want[r.StepID] {
			continue
		}
		var v any
		if json.Unmarshal(r.Output, &v) == nil {
			m[r.StepID] = v
		}
	}
	return m
}

// fromSource runs step s's adapter on its upstream outputs (keyed by step
// id; a root step gets {"input": ...}) through the invocation pipeline.
func (w *Workflow) fromSource(ctx context.Context, t *task, p *project.Project, s *flow.Step) (any, error) {
	ads, err := bindAdapters(p.Flow, p.ConfigPath)
	if err != nil {
		return nil, errorf(fault.NotFound, "/step_id", "%v", err)
	}
	ad := ads[s.Adapter]
	args := upstream(t, s.Requires)
	if len(s.Requires) > 0 {
		delete(args, "input")
	}
	// an adapter is a tool call: the gate the flow's steps get decides it.
	pipe := invoke.Pipeline{Gate: p.CallGate(w.opts.Gate)}
	var in, outSchema invoke.Validator
	spec := ad.Spec()
	if len(spec.InputSchema) > 0 {
		sch, err := flow.CompileSchema(s.Adapter+" input_schema", spec.InputSchema)
		if err != nil {
			return nil, errorf(fault.Business, "/step_id", "adapter %s: %v", s.Adapter, err)
		}
		in = sch
	}
	if len(spec.OutputSchema) > 0 {
		sch, err := flow.CompileSchema(s.Adapter+" output_schema", spec.OutputSchema)
		if err != nil {
			return nil, errorf(fault.Business, "/step_id", "adapter %s: %v", s.Adapter, err)
		}
		outSchema = sch
	}
	attempt := 1
	for _, a := range t.approvals {
		if a.StepID == s.ID && a.Status != store.ApprovalPending {
			attempt++
		}
	}
	at := invoke.Position{RunID: t.run.ID, StepID: s.ID, Attempt: attempt}
	if !spec.Idempotent {
		// a retried submission does not call it again: its record answers.
		if out, done, err := w.adapterRecord(ctx, t, s, at.Key()); done {
			return out, err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, flow.DefaultToolTimeout)
	defer cancel()
	// its resources are checked against the invalidated ones, as every
	// call of a task's run (invoke.Invalid).
	cctx = invoke.WithInvalid(cctx, &invoke.Invalid{Store: w.opts.Store, Tenant: t.run.Tenant})
	out, outcome, err := pipe.Call(cctx, &invoke.Request{Tool: ad, Args: args, Input: in, Output: outSchema,
		At: at, Recorder: &adapterRecorder{ctx: ctx, w: w, step: s}})
	if err != nil {
		class := fault.ClassOf(err)
		if class == fault.Unclassified {
			class = fault.Business
		}
		msg := fmt.Sprintf("adapter %s of step %s failed: %v", s.Adapter, s.ID, err)
		if outcome == invoke.Blocked {
			// an adapter runs while the agent waits: it cannot wait for a person.
			msg = fmt.Sprintf("adapter %s of step %s was refused: %v; an adapter cannot wait for a person's approval: submit the step's output yourself (action submit) or have the rule changed", s.Adapter, s.ID, err)
		}
		return nil, &Error{Type: class, Message: msg, Retryable: class == fault.Transient}
	}
	return out, nil
}

// journalRejection records a rejected submission (submission_rejected:
// the problems, the digest and a preview of what was submitted).
func (w *Workflow) journalRejection(ctx context.Context, runID string, s *flow.Step, e *Error, data []byte) {
	msg := e.Message
	for _, p := range e.Problems {
		msg += "; at " + orDefault(p.Pointer, "(root)") + ": " + p.Reason
	}
	_ = w.journal(ctx, runID, &trace.Event{Kind: trace.SubmissionRejected, StepID: s.ID, StepType: string(s.Type),
		ErrorClass: string(e.Type), Error: msg, OutputSHA: value.Digest(data), Preview: value.Preview(data, trace.PreviewBytes)})
}

// journal appends ev to the task's journal under a lease of its own, so
// that it never races a process running the task; it waits briefly for
// one that holds it.
func (w *Workflow) journal(ctx context.Context, runID string, ev *trace.Event) error {
	owner := engine.NewOwner()
	var err error
	for try := 0; try < 50; try++ {
		var run *store.Run
		now := time.Now() // the store decides by the caller's clock
		run, err = w.opts.Store.AcquireLease(ctx, &store.LeaseParams{RunID: runID, Owner: owner, TTL: 30 * time.Second, Now: now})
		if errors.Is(err, store.ErrConflict) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		ev.Seq, ev.Time, ev.RunID, ev.Flow = run.LastSeq+1, now, runID, run.Flow
		ev.Redact(w.red)
		err = w.opts.Store.Commit(ctx, &store.Transition{RunID: runID, Version: run.Version, Events: []*trace.Event{ev}, Now: now})
		if rerr := w.opts.Store.ReleaseLease(ctx, runID, owner); err == nil {
			err = rerr
		}
		return err
	}
	return fmt.Errorf("journal of task %s: %w", runID, err)
}

// adapterRecorder journals a source step's adapter call in the task's
// journal as its one call record (a call event built by
// invoke.Record.Journal, as the engine records its steps' calls), carrying
// the gate's decision on it: started before the adapter runs when the
// gate decided on it or the adapter is not idempotent, then settled (with
// its output, which a retried submission answers from); a call the gate
// refused is recorded failed. A start that cannot be journaled stops the
// call (Starting): an adapter is never called without the decision that
// let it through, and the start of one that is not idempotent, on record.
type adapterRecorder struct {
	ctx  context.Context
	w    *Workflow
	step *flow.Step
	// spec is the adapter's, set by Starting when it journaled the start.
	spec *tool.Spec
}

// GateDecided does nothing: the decision is in the call's record
// (invoke.Record.Gate), journaled by Starting or Called.
func (a *adapterRecorder) GateDecided(invoke.Position, *safety.Invocation, safety.Decision) {}

func (a *adapterRecorder) Starting(rec invoke.Record, spec tool.Spec) error {
	if spec.Idempotent && rec.Gate == nil {
		return nil
	}
	if err := a.journalCall(rec.At.RunID, rec.Journal(journal.CallStarted, &spec, false)); err != nil {
		if rec.Gate != nil {
			return fault.New(fault.Transient, fmt.Errorf("the gate's %s decision could not be journaled in task %s (the record of adapter %s's call), so the adapter was not called: %w; try again",
				rec.Gate.Decision.Verdict, rec.At.RunID, spec.Name, err))
		}
		return fault.New(fault.Transient, fmt.Errorf("the start of adapter %s could not be journaled in task %s, so it was not called: %w; try again", spec.Name, rec.At.RunID, err))
	}
	a.spec = &spec
	return nil
}

// Called journals the settled record of a call whose start was journaled,
// with its output (a retried submission answers from it), or the record of
// a call the gate refused.
func (a *adapterRecorder) Called(rec invoke.Record) {
	if a.spec == nil {
		if rec.Gate != nil && rec.Gate.Decision.Verdict != safety.Allow {
			_ = a.journalCall(rec.At.RunID, rec.Journal(journal.CallFailed, nil, false)) // refused: nothing ran
		}
		return
	}
	status := journal.CallFailed
	switch rec.Outcome {
	case invoke.OK:
		status = journal.CallSucceeded
	case invoke.Late:
		status = journal.CallLate
	case invoke.Cancelled, invoke.TimedOut:
		status = journal.CallStarted // it may run on: its outcome is unknown
	}
	_ = a.journalCall(rec.At.RunID, rec.Journal(status, a.spec, true)) // unjournaled, the start stays on record: unknown
}

func (a *adapterRecorder) journalCall(runID string, c *journal.Call) error {
	return a.w.journal(context.WithoutCancel(a.ctx), runID, &trace.Event{Kind: trace.CallRecorded, StepID: c.StepID,
		StepType: string(a.step.Type), Tool: c.Name, Attempt: c.Attempt, Status: string(c.Status), Call: c})
}
