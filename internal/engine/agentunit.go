package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// An agent step outside the runner, one unit at a time: a workflow engine
// (package github.com/reinhq/rein/temporal) holds the step's Session in
// its workflow code, asks agent.NextUnits what follows, and hands each
// unit (the model's next turn, or one call of the last turn) to a worker
// as an activity. The worker carries it out here, with the step's loop as
// the runner binds it (tools, model, pipeline and gate, budgets,
// guardrails), so the loop's decisions are the ones a local run makes.

// AgentUnitRequest names one unit of an agent step's attempt.
type AgentUnitRequest struct {
	RunID string
	// Step is the agent step's index; Attempt its attempt (the calls' keys
	// are run/step/attempt/turn<t>/call<c>).
	Step, Attempt int
	// Turns are the step's turns so far, as the driver recorded them;
	// Decisions people's decisions on its calls, by ref (turn<t>/call<c>).
	Turns     []agent.Turn
	Decisions map[string]agent.Decision
	// Started is when the attempt began (or went on after waiting for
	// people): the start of the wall-time budget and of the step's timeout.
	Started time.Time
	Unit    agent.Unit
	// OnEffect is AttemptRequest.OnEffect for the unit's calls.
	OnEffect func(journal.Effect)
	// OnTier is AttemptRequest.OnTier for the unit.
	OnTier func(tier int)
}

// AgentUnitResult is what a unit came to.
type AgentUnitResult struct {
	// Status is agent.StatusStepped (more follows), StatusPaused (Pending
	// wait for people) or StatusAnswered (Output is the step's output).
	Status  agent.Status
	Pending []agent.Pending
	// Turns are the session's turns after the unit.
	Turns  []agent.Turn
	Output any
}

// AgentUnit carries out one unit of agent step req.Step (agent.Loop.Step)
// on what s settled: the step's prompt rendered as the task, the session
// continued from req.Turns. An answered step's output is checked as a
// local attempt's is (max_output_bytes; an output_schema the loop already
// holds the answer to). Errors are classed, as Attempt's.
func (e *Engine) AgentUnit(ctx context.Context, f *flow.Flow, s *Settled, req AgentUnitRequest) (*AgentUnitResult, error) {
	if req.Step < 0 || req.Step >= len(f.Steps) || f.Steps[req.Step].Type != flow.Agent {
		return nil, fmt.Errorf("engine: step %d of flow %s is not an agent step", req.Step, f.Name)
	}
	r, err := e.runAt(ctx, f, req.RunID, s)
	if err != nil {
		return nil, err
	}
	defer r.end()
	defer r.reportTier(req.OnTier)
	r.onEffect = req.OnEffect
	j := r.prepare(req.Step)
	r.assessStep(req.Step, j) // the step's start (its tools), as the runner's
	if j.renderErr != nil {
		return nil, j.renderErr
	}
	st := j.step
	attempt := max(req.Attempt, 1)
	actx := withScope(r.ctx, &callScope{r: r, step: st, index: j.index, attempt: attempt})
	actx = withoutDeltas(actx, st.Agent.Guardrails)
	if st.Timeout > 0 && !req.Started.IsZero() {
		// the step's timeout bounds the attempt from its start, as the
		// runner's (a transient error: retried by class there).
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadlineCause(actx, req.Started.Add(st.Timeout), stepTimeout(st))
		defer cancel()
	}
	sess := &agent.Session{Task: j.in.prompt, History: inputHistory(r.input), Turns: req.Turns, Decisions: req.Decisions, Started: req.Started}
	loop := r.b.agents[j.index].With(r.id, st.ID, attempt, &agentJournal{r: r, step: st, attempt: attempt}, (*callRecorder)(r), nil)
	if r.ev != nil {
		loop = loop.WithEvidence(r.ev)
	}
	res, err := loop.Step(actx, sess, req.Unit)
	if err != nil {
		return nil, err
	}
	out := &AgentUnitResult{Status: res.Status, Pending: res.Pending, Turns: sess.Turns}
	if res.Status == agent.StatusAnswered {
		v := appendWorkflowResults(st.Agent.Tools, sess.Turns, res.Answer)
		var o outcome
		if err := r.finishOutput(st, v, &o); err != nil {
			return nil, err
		}
		out.Output = v
	}
	return out, nil
}

// Reconciliation is what the check of a call in doubt found (Reconcile).
type Reconciliation struct {
	// Happened: the call took effect; Output is what its tool's check
	// returned (fit to the tool's output schema).
	Happened bool
	Output   any
	// Again: it did not take effect and may be made again with the same
	// key (a person had approved it, or its tool is safe to repeat).
	Again bool
	// Reason says why a person decides (neither of the above): the check
	// found it did not happen, or could not say, or the tool has none.
	Reason string
}

// Reconcile asks the check of attempt req.Attempt of tool step req.Step,
// found in doubt (its worker was lost while the call ran), whether the
// call took effect, by the one rule for calls in doubt (invoke.Resolve,
// as a local resume does): with the call's arguments rendered on what s
// settled and the call's idempotency key. The call is the step's own (a
// plain tool step's; item req.Item's of a for_each step; round
// req.Round's of a repeat step, req.Previous the round before's output)
// or, with req.Fallback, its fallback's (the step's, or item req.Item's;
// callInDoubt). req.Approved says a person approved the call. A call of a
// tool that declares no check: is a person's to decide; one of a tool
// safe to repeat is made again (Again).
func (e *Engine) Reconcile(ctx context.Context, f *flow.Flow, s *Settled, req AttemptRequest) (*Reconciliation, error) {
	if req.Step < 0 || req.Step >= len(f.Steps) {
		return nil, fmt.Errorf("engine: flow %s has no step %d", f.Name, req.Step)
	}
	st := f.Steps[req.Step]
	if st.Type == flow.Plan && req.Plan != nil && req.PlanCall != nil {
		return e.reconcilePlanCall(ctx, f, s, req)
	}
	if st.Type != flow.Tool && !req.Fallback {
		return &Reconciliation{Reason: "only a tool call is reconciled with its tool's check"}, nil
	}
	r, err := e.runAt(ctx, f, req.RunID, s)
	if err != nil {
		return nil, err
	}
	defer r.end()
	j := r.prepare(req.Step)
	if j.renderErr != nil {
		return nil, j.renderErr
	}
	c, err := r.callInDoubt(j, req)
	if err != nil {
		return nil, err
	}
	if _, ok := c.t.(tool.Checker); !ok && !invoke.Repeatable(c.spec) {
		return &Reconciliation{Reason: fmt.Sprintf("tool %s declares no check: (rein.yaml check:), so whether the call took effect is a person's to say", c.name)}, nil
	}
	if req.Approved {
		r.d.decisions = map[string]*store.Approval{st.ID: {Status: store.ApprovalApproved}}
	}
	out, happened, ok := r.askCheck(req.Step, c.t, c.name, c.spec, c.at, c.at.Key(), c.args)
	switch {
	case happened:
		return &Reconciliation{Happened: true, Output: out}, nil
	case ok:
		return &Reconciliation{Again: true}, nil
	}
	reason := r.d.notes[req.Step]
	if reason == "" {
		reason = "its tool's check could not settle it"
	}
	return &Reconciliation{Reason: reason}, nil
}

// Reconciles reports whether a call of step i found in doubt may be asked
// of its tool's check (Reconcile): a plain tool step whose tool (or a
// registered Go tool) declares one. A driver asks a person directly
// otherwise.
func (e *Engine) Reconciles(f *flow.Flow, i int) (bool, error) {
	b, err := e.bind(f)
	if err != nil {
		return false, err
	}
	if i < 0 || i >= len(f.Steps) {
		return false, fmt.Errorf("engine: flow %s has no step %d", f.Name, i)
	}
	s := f.Steps[i]
	if s.Type != flow.Tool || s.ForEach != nil || s.Repeat != nil {
		return false, nil
	}
	r := &run{e: e, f: f, b: b}
	return r.checker(i) != nil, nil
}
