package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/fanout"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// Defaults of ExecutorConfig.
const (
	DefaultMaxExecuted = 50
	DefaultConcurrency = 4
)

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	// Catalog is what plans are validated against. Required.
	Catalog *Catalog
	// Tools holds the implementation of every tool the catalog allows.
	// Required.
	Tools *tool.Registry
	// Gate decides on every tool call. Defaults to safety.AllowAll.
	Gate safety.Gate
	// Recorder, when set, receives every decision of the gate and the call
	// record of every tool call (package invoke), from the calls'
	// goroutines, concurrently — including the Late record of a tool that
	// returned after its call was given up at the context's deadline.
	Recorder invoke.Recorder
	// MaxExecuted is the executor's own budget of tool calls per run
	// (State), whatever the plans say. Defaults to DefaultMaxExecuted.
	MaxExecuted int
	// Concurrency bounds how many independent steps run at once. Defaults
	// to DefaultConcurrency.
	Concurrency int
	// OnEvent, when set, sees every plan event (so the engine can journal
	// and trace each call). It is called from the goroutine that called
	// Execute or Run, one event at a time, and must not block for long.
	OnEvent func(Event)
	// Now is the clock for durations. Defaults to time.Now.
	Now func() time.Time
	// RequireApproval names the tools whose every call needs a person's
	// approval (approval: required).
	RequireApproval map[string]bool
	// Pausable lets a step wait for a person instead of failing: a call
	// that needs approval (RequireApproval, or the gate's
	// require_approval) does not run, the step waits (a plan_step_waiting
	// event, not counted as executed), the steps that do not depend on it
	// go on, and Execute returns a *WaitError naming each waiting step with
	// its resolved args. The caller parks, and continues the plan with
	// the people's Decisions (plan.RunFrom, Progress.Decisions). Without
	// it such a call fails the step with a policy error.
	Pausable bool
	// Held, when set, is asked before each step starts: once it reports
	// true (the caller's run paused, as a failed premise elsewhere pauses
	// it) the executor starts no further step, the steps in flight finish
	// and settle, and Execute returns ErrHeld when steps are left. The
	// caller continues the plan later (RunFrom): the completed steps are
	// not run again.
	Held func() bool
}

// ErrHeld is Execute's error when ExecutorConfig.Held stopped the plan
// before all its steps ran; RunFrom returns it as is (no revision).
var ErrHeld = errors.New("plan held: its remaining steps wait until the run goes on")

// EventKind names what happened.
type EventKind string

// Event kinds.
const (
	PlanProposed EventKind = "plan_proposed"     // a planner returned Plan
	PlanRejected EventKind = "plan_rejected"     // the plan failed validation; nothing ran
	StepStarted  EventKind = "plan_step_started" // a tool call is about to be made
	StepSettled  EventKind = "plan_step_settled" // it succeeded or failed
	StepReused   EventKind = "plan_step_reused"  // a completed step, listed again, is not run
	StepWaiting  EventKind = "plan_step_waiting" // its call waits for a person's approval (Pausable); Args are the resolved args
	Replanning   EventKind = "plan_replan"       // a step failed; the planner is asked again
	// PlanStarted and PlanFinished delimit a plan run as a sub-run of its
	// caller (the agent's execute_plan); the executor itself emits neither.
	PlanStarted  EventKind = "plan_started"
	PlanFinished EventKind = "plan_finished"
)

// Statuses of a PlanRejected event that the planner's validation (not
// the executor's) rejected: corrected when the planner asks the model once
// more, final when it gave up. The executor's rejections have no status.
const (
	RejectedCorrected = "corrected"
	RejectedFinal     = "rejected"
)

// Event is one thing the executor or Run did.
type Event struct {
	Kind   EventKind
	RunID  string
	StepID string // the step that runs the plan
	// PlanStep and Tool name the plan step, for step events.
	PlanStep string
	Tool     string
	// Attempt is the plan's number in the run: 1 for the first plan, n+1
	// after n replans.
	Attempt        int
	IdempotencyKey string
	// Status is "succeeded" or "failed" for StepSettled.
	Status     string
	Duration   time.Duration
	ErrorClass fault.Class
	Error      string
	// Args are the resolved args (StepStarted); Output the output (a
	// succeeded StepSettled). They are shared, not copied.
	Args   any
	Output any
	// Plan is the plan (PlanProposed, PlanRejected).
	Plan *Plan
}

// StepError is a plan step that failed; it unwraps to the classed cause
// (the tool's error, a policy decision, args that broke the input schema).
type StepError struct {
	StepID  string
	Tool    string
	Attempt int
	Err     error
}

// Error reads like `plan step weather (tool read_primary_weather) failed: upstream 503`.
func (e *StepError) Error() string {
	return fmt.Sprintf("plan step %s (tool %s) failed: %s", e.StepID, e.Tool, e.Cause())
}

// Cause is the cause's message without the "tool <name>: " the message
// already says.
func (e *StepError) Cause() string {
	return strings.TrimPrefix(e.Err.Error(), "tool "+e.Tool+": ")
}

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// Executor runs validated plans: each step once its dependencies have
// succeeded, independent steps in parallel (launched in plan order), every
// call through the gate. A tool receives resolved args that share the
// referenced outputs, and must not modify them. The executor does not
// retry: a failed step is the planner's to revise (see Run). It is safe for
// concurrent use by several runs, each with its own State.
type Executor struct {
	cfg   ExecutorConfig
	pipe  invoke.Pipeline
	tools map[string]tool.Tool
}

// NewExecutor checks cfg and fills in its defaults. It returns an error when
// the catalog or registry is missing or an allowed tool has no
// implementation.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("plan executor: no catalog")
	}
	if cfg.Tools == nil {
		return nil, errors.New("plan executor: no tool registry")
	}
	if cfg.Gate == nil {
		cfg.Gate = safety.AllowAll
	}
	if cfg.MaxExecuted <= 0 {
		cfg.MaxExecuted = DefaultMaxExecuted
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Executor{cfg: cfg, pipe: invoke.Pipeline{Gate: cfg.Gate, Now: cfg.Now}, tools: make(map[string]tool.Tool, len(cfg.Catalog.names))}
	for _, n := range cfg.Catalog.names {
		t, ok := cfg.Tools.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("plan executor: tool %q is in the catalog but not in the registry", n)
		}
		e.tools[n] = t
	}
	return e, nil
}

// Catalog returns the executor's catalog.
func (e *Executor) Catalog() *Catalog { return e.cfg.Catalog }

// Execute validates p against the executor's catalog and the steps st has
// completed, then runs it, recording outputs in st (nil: a fresh State).
// Steps st has already completed are reused, not run again. After a step
// fails no new step starts; those running finish. It returns nil when
// every step succeeded, a *ValidationError (nothing ran), a *StepError, a
// budget error naming max_executed_steps, a *WaitError (Pausable: steps
// wait for a person, none failed), or the context's error.
func (e *Executor) Execute(ctx context.Context, p *Plan, st *State) error {
	if st == nil {
		st = &State{}
	}
	return e.execute(ctx, p, st, e.cfg.Catalog)
}

func (e *Executor) emit(ev Event) {
	if e.cfg.OnEvent != nil {
		e.cfg.OnEvent(ev)
	}
}

// round is one execution of one plan.
type round struct {
	e       *Executor
	p       *Plan
	an      *analysis
	st      *State
	attempt int
	runID   string
	stepID  string
	// at is the position of the flow step's attempt the plan runs in;
	// every call's key extends its key.
	at invoke.Position
	// dag decides which step starts next (package sched/fan): plan
	// order, dependencies, Concurrency, the executed-steps budget.
	dag    fan.DAG
	budget int
	stop   error // the budget error, once the DAG stopped on it
	fails  []*StepError
	waits  []Waiting
}

// call is a plan step handed out, ready to be called.
type call struct {
	i    int
	args any
	req  *invoke.Request
}

type settled struct {
	i       int
	args    any
	out     any
	outcome invoke.Outcome
	err     error
	dur     time.Duration
	// called: the call was made (it counts as executed unless it waits).
	called bool
}

func (e *Executor) execute(ctx context.Context, p *Plan, st *State, cat *Catalog) error {
	info := tool.CallInfoFrom(ctx)
	runID, stepID := cmpOr(st.RunID, info.RunID), cmpOr(st.StepID, info.StepID)
	an, verr := analyze(p, cat, st.results)
	if verr != nil {
		e.emit(Event{Kind: PlanRejected, RunID: runID, StepID: stepID, Attempt: st.attempt + 1, Plan: p, ErrorClass: fault.ClassOf(verr), Error: verr.Error()})
		return verr
	}
	st.attempt++
	if st.Evidence == nil {
		st.Evidence = &safety.Evidence{}
	}
	r := &round{e: e, p: p, an: an, st: st, attempt: st.attempt, runID: runID, stepID: stepID,
		at: invoke.Position{RunID: runID, StepID: stepID, Attempt: info.Attempt, Plan: st.attempt}}
	if info.IdempotencyKey != "" && info.RunID == runID && info.StepID == stepID {
		r.at.Parent = info.IdempotencyKey
	} else {
		r.at.Parent = r.at.Key()
	}
	if a, ok := e.cfg.Gate.(safety.Assessor); ok {
		// the tier takes in the whole plan before its first step runs.
		a.AssessAhead(ctx, "plan", stepID, r.signals())
	}
	r.budget = e.cfg.MaxExecuted
	if st.MaxExecuted > 0 && st.MaxExecuted < r.budget {
		r.budget = st.MaxExecuted
	}
	from := len(st.results)
	defer st.settleRound(from)
	deps := make([][]int, len(p.Steps))
	for i := range deps {
		deps[i] = an.steps[i].deps
	}
	r.dag.Reset(deps, e.cfg.Concurrency, st.executed, r.budget)
	for i := range p.Steps {
		if an.steps[i].reused {
			r.dag.Reuse(i)
			e.emit(Event{Kind: StepReused, RunID: runID, StepID: stepID, PlanStep: p.Steps[i].ID, Tool: p.Steps[i].Tool, Attempt: r.attempt})
		}
	}
	_ = fanout.Run(ctx, r, r.call, func(_ call, s settled) error { r.settle(s); return nil }) // never fails: r.stop says why
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("plan stopped: %w", context.Cause(ctx))
	case r.stop != nil:
		return r.stop
	case len(r.fails) > 0:
		first := r.fails[0]
		for _, f := range r.fails[1:] {
			if r.indexOf(f.StepID) < r.indexOf(first.StepID) {
				first = f
			}
		}
		return first
	case len(r.waits) > 0:
		return r.waitError()
	case r.held():
		for i := range p.Steps {
			if r.dag.State(i) != fan.Succeeded {
				return ErrHeld
			}
		}
	}
	for i := range p.Steps {
		if r.dag.State(i) != fan.Succeeded {
			return fault.Errorf(fault.Business, "plan step %s did not run (internal error: nothing was ready)", p.Steps[i].ID)
		}
	}
	return nil
}

// Next hands out the next step the DAG decides (fanout.Source), its args
// resolved and its start announced; a step that fails before its call
// settles at once, and the DAG hands out nothing more. It is called on the
// goroutine that runs the plan, as every method of round is.
func (r *round) Next(inFlight int) (call, bool) {
	if r.held() {
		return call{}, false
	}
	for {
		i, ok := r.dag.Next(inFlight)
		r.st.executed = r.dag.Executed()
		if !ok {
			if o := r.dag.OverBudget(); o >= 0 && r.stop == nil {
				r.stop = fault.BudgetErr("max_executed_steps", "plan step %s would be tool call %d of this run, more than max_executed_steps=%d", r.p.Steps[o].ID, r.st.executed+1, r.budget)
			}
			return call{}, false
		}
		if c, ok := r.launch(i); ok {
			return c, true
		}
	}
}

// CanStart is the DAG's (fanout.Source), false once held.
func (r *round) CanStart(inFlight int) bool { return !r.held() && r.dag.CanStart(inFlight) }

// held reports whether the caller holds the plan (ExecutorConfig.Held).
func (r *round) held() bool { return r.e.cfg.Held != nil && r.e.cfg.Held() }

// Limit is the DAG's (fanout.Source).
func (r *round) Limit() int { return r.dag.Limit() }

// call makes step c's call through the pipeline; it runs on a goroutine
// of fanout.Run's, or in place.
func (r *round) call(ctx context.Context, c call) settled {
	start := r.e.cfg.Now()
	out, outcome, err := r.e.pipe.Call(ctx, c.req)
	return settled{i: c.i, args: c.args, out: out, outcome: outcome, err: err, dur: r.e.cfg.Now().Sub(start), called: true}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (r *round) indexOf(id string) int {
	for i := range r.p.Steps {
		if r.p.Steps[i].ID == id {
			return i
		}
	}
	return len(r.p.Steps)
}

func (r *round) qualified(planStep string) string {
	if r.stepID == "" {
		return planStep
	}
	return r.stepID + "/" + planStep
}

// position places plan step planStep (its key: package invoke).
func (r *round) position(planStep string) invoke.Position {
	at := r.at
	at.PlanStep = planStep
	return at
}

// launch resolves step i's args, announces its start and builds its
// call. A step whose references do not resolve, or whose person's
// decision refuses it, fails without a call (and is not counted).
func (r *round) launch(i int) (call, bool) {
	s := &r.p.Steps[i]
	at := r.position(s.ID)
	key := at.Key()
	args, err := r.resolve(i)
	r.e.emit(Event{Kind: StepStarted, RunID: r.runID, StepID: r.stepID, PlanStep: s.ID, Tool: s.Tool, Attempt: r.attempt, IdempotencyKey: key, Args: args})
	var approved bool
	if err == nil {
		approved, err = r.decided(s, args)
	}
	if err != nil {
		r.settle(settled{i: i, err: err})
		return call{}, false
	}
	req := &invoke.Request{Tool: r.e.tools[s.Tool], Args: args, At: at, Recorder: r.e.cfg.Recorder,
		Info:            &tool.CallInfo{RunID: r.runID, StepID: r.qualified(s.ID), Attempt: r.attempt},
		RequireApproval: r.e.cfg.RequireApproval[s.Tool], Pausable: r.e.cfg.Pausable, Approved: approved}
	// the gate sees where each argument came from, and the caller's
	// effect graph records it.
	req.Provenance = r.provenance(i)
	if r.e.cfg.Gate != safety.AllowAll {
		// a model wrote the plan: the gate sees what the run confirms,
		// and the step's declaration checked.
		req.Verified = r.st.Evidence.Verify(args, req.Provenance)
		req.Chosen, req.Declaration = true, s.Declaration
		req.Claims = safety.CheckDeclaration(s.Declaration, r.st.Evidence)
	}
	if ent := r.an.steps[i].entry; ent != nil {
		req.Spec, req.Input = &ent.spec, (*argsCheck)(ent)
		if ent.out != nil {
			req.Output = ent.out
		}
	}
	return call{i: i, args: args, req: req}, true
}

// resolve returns step i's args with every reference replaced by the value
// it names.
func (r *round) resolve(i int) (any, error) {
	s := &r.p.Steps[i]
	var args any = s.Args
	if s.Args == nil {
		args = map[string]any{}
	}
	refs := r.an.steps[i].refs
	if len(refs) == 0 {
		return args, nil
	}
	vals := make(map[string]any, len(refs))
	for _, a := range refs {
		v, err := ref.Resolve(r.st.outputs, a.path)
		if err != nil {
			return nil, fault.BusinessErr(fmt.Errorf("args%s: $ref %q: %w", a.ptr, a.raw, err))
		}
		vals[a.raw] = v
	}
	out, _, err := substitute(args, func(raw string) (any, error) { return vals[raw], nil })
	return out, err
}

func (r *round) settle(s settled) {
	if r.wait(s) {
		return
	}
	step := &r.p.Steps[s.i]
	at := r.position(step.ID)
	ev := Event{Kind: StepSettled, RunID: r.runID, StepID: r.stepID, PlanStep: step.ID, Tool: step.Tool, Attempt: r.attempt,
		IdempotencyKey: at.Key(), Duration: s.dur, Status: "succeeded", Output: s.out}
	if s.err != nil {
		r.dag.Settle(s.i, fan.Failed, s.called)
		r.st.executed = r.dag.Executed()
		if ve := (*invoke.VerifyError)(nil); errors.As(s.err, &ve) {
			s.err = fmt.Errorf("%s; %w", joinProblems(declarationProblems(s.i, step, ve)), s.err)
		}
		r.fails = append(r.fails, &StepError{StepID: step.ID, Tool: step.Tool, Attempt: r.attempt, Err: s.err})
		ev.Status, ev.ErrorClass, ev.Error, ev.Output = "failed", fault.ClassOf(s.err), s.err.Error(), nil
	} else {
		r.dag.Settle(s.i, fan.Succeeded, true)
		r.st.complete(s.i, step.ID, step.Tool, s.out)
		if t := r.e.tools[step.Tool]; t != nil {
			spec := t.Spec()
			r.st.Evidence.AddTool("plan step "+step.ID, &spec, s.out)
		}
	}
	r.e.emit(ev)
}

// argsCheck is an entry's args check: the quick form accepts what it can
// vouch for, and everything else goes to the full validator (whose
// messages are the ones users see).
type argsCheck entry

// Validate checks args against the tool's input schema.
func (a *argsCheck) Validate(args any) error {
	if a.in == nil || a.inQ != nil && a.inQ.valid(args, false) {
		return nil
	}
	return a.in.Validate(args)
}
