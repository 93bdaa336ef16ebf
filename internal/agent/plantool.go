package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// PlanOptions configure the execute_plan meta-tool (Config.ExecutePlan).
type PlanOptions struct {
	// MaxSteps is each plan's own step budget: it bounds the plan's length
	// (a longer plan is answered error_type "budget" before anything runs)
	// and the tool calls its sub-run makes, which never count against
	// Budgets.MaxToolCalls. Defaults to plan.DefaultMaxSteps (20).
	MaxSteps int
	// AllowExternal lets plans call tools whose effect is external.
	AllowExternal bool
}

// PlanJournal is a Journal that also keeps the sub-runs of execute_plan
// calls, with the turn and call each belongs to: PlanRun as a sub-run
// starts or continues (Status PlanActive: plan_started) and as it stops
// (its final or waiting status: plan_finished), and between them every
// event of its executor (steps started, waiting, settled; a plan
// rejected). It is called from the call's goroutine; calls of one turn
// run concurrently.
type PlanJournal interface {
	PlanEvent(turn, call int, ev plan.Event)
	PlanRun(turn, call int, run *PlanRun)
}

// planner is a Loop's execute_plan: the catalog of the agent's tools
// (compiled once) and the registry the executor calls them through.
type planner struct {
	opts     PlanOptions
	catalog  *plan.Catalog
	registry *tool.Registry
	tools    map[string]*boundTool
	// approval names the tools whose calls need a person's approval.
	approval map[string]bool
}

// planRunning marks a context in which an execute_plan call runs: an agent
// called from inside a plan does not start another one.
type planRunning struct{}

// PlanRunning reports whether ctx is inside an execute_plan call. An
// embedder building an agent loop for a tool call should leave
// Config.ExecutePlan nil when it is: plans do not nest.
func PlanRunning(ctx context.Context) bool { return ctx.Value(planRunning{}) != nil }

// WithPlanRunning returns ctx marked as inside an execute_plan call.
func WithPlanRunning(ctx context.Context) context.Context {
	return context.WithValue(ctx, planRunning{}, true)
}

const planInputSchema = `{"type":"object","required":["objective","steps"],"additionalProperties":false,
"properties":{"objective":{"type":"string","description":"what the plan is for"},
"steps":{"type":"array","minItems":1,"items":{"type":"object","required":["id","tool"],"additionalProperties":false,
"properties":{"id":{"type":"string"},"tool":{"type":"string"},"depends_on":{"type":"array","items":{"type":"string"}},
"args":{"type":"object","description":"the tool's arguments; a value {\"$ref\": \"<step id>.<path>\"} is that earlier step's output at path"},
"declaration":` + safety.DeclarationSchema + `}}}}}`

const planDescription = "Run several of your tools as one plan: steps run once the steps they depend on (depends_on, or a {\"$ref\": \"step.path\"} in args) have succeeded, independent steps in parallel. The whole plan is checked before anything runs. Answers {success, objective, result (each completed step's output by id), completed_steps, error, error_type, failed_steps}."

// newPlanner builds the meta-tool over the loop's tools.
func newPlanner(opts PlanOptions, tools map[string]*boundTool) (*planner, *boundTool, error) {
	if _, taken := tools[plan.MetaTool]; taken {
		return nil, nil, fmt.Errorf("agent: a tool is named %s, the name of the plan meta-tool: rename it, or disable execute_plan", plan.MetaTool)
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = plan.DefaultMaxSteps
	}
	p := &planner{opts: opts, registry: &tool.Registry{}, tools: tools, approval: map[string]bool{}}
	specs := make([]tool.Spec, 0, len(tools))
	allowed := []string{}
	spec := tool.Spec{Name: plan.MetaTool, Description: planDescription, InputSchema: json.RawMessage(planInputSchema),
		Effect: tool.EffectNone, Idempotent: true}
	for name, bt := range tools {
		if bt.sub != nil || bt.back != nil {
			continue // a sub-agent or a hand-back is called directly, not from a plan
		}
		specs = append(specs, bt.spec)
		allowed = append(allowed, name)
		if bt.Approval {
			p.approval[name] = true
		}
		if err := p.registry.Register(bt.Tool.Tool); err != nil {
			return nil, nil, fmt.Errorf("agent: execute_plan: %w", err)
		}
		spec.Effect = strongerEffect(spec.Effect, bt.spec.Effect)
		spec.Idempotent = spec.Idempotent && invoke.Repeatable(&bt.spec)
	}
	var err error
	if p.catalog, err = plan.NewCatalog(plan.CatalogConfig{Tools: specs, Allowed: allowed, MaxSteps: opts.MaxSteps}); err != nil {
		return nil, nil, fmt.Errorf("agent: execute_plan: %w", err)
	}
	bt := &boundTool{Tool: Tool{Tool: tool.Func(spec, nil)}, spec: spec}
	if bt.input, err = compileSchema(plan.MetaTool+" input_schema", spec.InputSchema); err != nil {
		return nil, nil, err
	}
	return p, bt, nil
}

// plannerTool is the execute_plan tool of l, or nil.
func (l *Loop) plannerTool() *boundTool {
	if l.planner == nil {
		return nil
	}
	return l.tools[plan.MetaTool]
}

// strongerEffect is the effect that says more about the world of a and b.
func strongerEffect(a, b tool.Effect) tool.Effect {
	rank := map[tool.Effect]int{"": 0, tool.EffectNone: 0, tool.EffectRead: 1, tool.EffectWrite: 2, tool.EffectExternal: 3, tool.EffectDestructive: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// planResult is execute_plan's answer.
type planResult struct {
	Success        bool            `json:"success"`
	Objective      string          `json:"objective"`
	Result         map[string]any  `json:"result"`
	CompletedSteps []string        `json:"completed_steps"`
	Error          string          `json:"error,omitempty"`
	ErrorType      string          `json:"error_type,omitempty"`
	Problems       []plan.Problem  `json:"problems,omitempty"`
	FailedSteps    []planStepError `json:"failed_steps"`
}

type planStepError struct {
	ID    string `json:"id"`
	Tool  string `json:"tool"`
	Error string `json:"error"`
}

// executePlan runs one execute_plan call: args are {objective, steps}.
// The plan is parsed and validated as planner plans are (plus: no tool
// that acts outside the system unless allowed) before anything runs; then
// the plan executor runs it as a sub-run (PlanRun) through l's pipeline,
// recorder and keys (run/step/attempt/turn<t>/call<c>/plan1/<plan-step>),
// pausable: a step that needs a person's approval makes the call wait
// (*planPaused). Whatever happens inside — a failed step, the budget, a
// panic — the answer is an observation, never an error of the loop: the
// plan does not touch the Session (transcript, status, budgets), and the
// loop goes on from the turn it was at. turnEv is what the model had
// seen, which the plan's literals are traced to (gated loops only).
// approved says a person approved this execute_plan call: its plan, as
// written, is what they approved, so each plan step whose args are all
// literals (no $ref: the person saw exactly them) runs approved, once,
// and only a step whose args come from another step's output still asks.
func (l *Loop) executePlan(ctx context.Context, turn int, c *Call, args any, approved bool, turnEv *safety.Evidence) (out any, err error) {
	p, call := l.planner, c.Index
	pj, _ := l.cfg.Journal.(PlanJournal)
	onEvent := func(plan.Event) {}
	if pj != nil {
		onEvent = func(ev plan.Event) { pj.PlanEvent(turn, call, ev) }
	}
	if PlanRunning(ctx) {
		c.PlanRun = &PlanRun{Status: PlanRejected, ErrorType: "recursion", MaxSteps: p.opts.MaxSteps}
		return &planResult{ErrorType: "recursion", FailedSteps: []planStepError{},
			Error: "execute_plan is already running: plans do not nest; put the steps in the running plan"}, nil
	}
	m, _ := args.(map[string]any)
	objective, _ := m["objective"].(string)
	res := &planResult{Objective: objective, Result: map[string]any{}, CompletedSteps: []string{}, FailedSteps: []planStepError{}}
	pl, err := p.check(m)
	if err != nil {
		var pe *plan.ParseError
		var ve *plan.ValidationError
		if !errors.As(err, &pe) && !errors.As(err, &ve) {
			return nil, err
		}
		out := p.rejected(res, err, onEvent)
		c.PlanRun = &PlanRun{Objective: objective, Status: PlanRejected, MaxSteps: p.opts.MaxSteps, ErrorType: out.ErrorType, Error: out.Error}
		return out, nil
	}
	var from *PlanWait
	if c.Plan != nil {
		from = c.Plan
	}
	run := newPlanRun(pl, objective, p.opts.MaxSteps, from.completed(), from.executed())
	if pj != nil {
		pj.PlanRun(turn, call, run)
	}
	ex, err := plan.NewExecutor(plan.ExecutorConfig{Catalog: p.catalog, Tools: p.registry, Gate: l.cfg.Pipeline.Gate,
		Recorder: l.cfg.Recorder, MaxExecuted: p.opts.MaxSteps, Concurrency: l.cfg.Concurrency, Now: l.cfg.Now,
		RequireApproval: p.approval, Pausable: true,
		OnEvent: func(ev plan.Event) { run.see(ev); onEvent(ev) }})
	if err != nil {
		return nil, fmt.Errorf("execute_plan: %w", err)
	}
	var ev *safety.Evidence // what the plan's literals are traced to, for the gate
	if l.gated() {
		ev = &safety.Evidence{} // its own: the plan adds its steps' outputs
		ev.Include(turnEv)
	}
	var pre map[string]plan.Decision
	if approved {
		pre = literalSteps(pl)
	}
	completed, executed, err := p.execute(WithPlanRunning(ctx), ex, pl, objective, from, c.decisions, pre, ev)
	if ctx.Err() != nil {
		return nil, err // the call is cancelled: the loop leaves it chosen
	}
	var we *plan.WaitError
	waiting := errors.As(err, &we)
	run.finish(executed, err, waiting)
	c.PlanRun = run
	if pj != nil {
		pj.PlanRun(turn, call, run)
	}
	if waiting {
		return nil, &planPaused{wait: &PlanWait{Completed: completed, Executed: executed, Waiting: we.Steps}}
	}
	for _, r := range completed {
		res.CompletedSteps = append(res.CompletedSteps, r.ID)
		res.Result[r.ID] = r.Output
	}
	if err == nil {
		res.Success = true
		return res, nil
	}
	var se *plan.StepError
	if errors.As(err, &se) {
		err = se // a resumed plan is not revised: its failure is the step's
	}
	res.Error, res.ErrorType = err.Error(), string(fault.ClassOf(err))
	if se != nil {
		res.FailedSteps = append(res.FailedSteps, planStepError{ID: se.StepID, Tool: se.Tool, Error: se.Cause()})
	}
	return res, nil
}

// check turns execute_plan's args into a plan and validates it before
// anything runs: a *plan.ParseError or *plan.ValidationError (which, for a
// plan longer than the budget, unwraps to the max_steps budget error)
// lists every problem with its JSON pointer.
func (p *planner) check(m map[string]any) (*plan.Plan, error) {
	objective, _ := m["objective"].(string)
	raw, err := json.Marshal(map[string]any{"goal": objective, "steps": m["steps"]})
	if err != nil {
		return nil, fault.Errorf(fault.Format, "execute_plan: the arguments do not encode as JSON: %v", err)
	}
	pl, err := plan.Parse(raw)
	if err != nil {
		return nil, err
	}
	var problems []plan.Problem
	for i, s := range pl.Steps {
		bt := p.tools[s.Tool]
		if bt == nil {
			continue // Validate names it
		}
		if bt.spec.Effect == tool.EffectExternal && !p.opts.AllowExternal {
			problems = append(problems, plan.Problem{Pointer: "/steps/" + strconv.Itoa(i) + "/tool", Message: fmt.Sprintf("tool %q acts outside the system (effect: external), which plans may not unless the agent allows it (execute_plan: {allow_external: true}): call it directly, not in a plan", s.Tool)})
		}
	}
	verr := plan.Validate(pl, p.catalog)
	if verr == nil && len(problems) == 0 {
		return pl, nil
	}
	var ve *plan.ValidationError
	if verr != nil && !errors.As(verr, &ve) {
		return nil, verr
	}
	if len(problems) == 0 {
		return nil, verr
	}
	if ve != nil {
		problems = append(problems, ve.Problems...)
	}
	return nil, &plan.ValidationError{Problems: problems}
}

// execute runs pl, or continues it from where it waited for people (from
// non-nil) with their decisions by plan step; ev (nil: none) is the
// evidence its literals are traced to; pre are the steps approved with the
// execute_plan call itself (literalSteps), which people's decisions on
// waiting steps override. It returns the completed steps, the tool calls
// made, and the executor's error (a *plan.WaitError when steps wait). A
// panic in it is the plan's failure, not the loop's.
func (p *planner) execute(ctx context.Context, ex *plan.Executor, pl *plan.Plan, objective string, from *PlanWait, decided map[string]Decision, pre map[string]plan.Decision, ev *safety.Evidence) (completed []plan.StepResult, executed int, err error) {
	defer func() {
		if v := recover(); v != nil {
			completed, executed = from.completed(), from.executed()
			err = fault.Errorf(fault.Business, "execute_plan panicked: %v", v)
		}
	}()
	if from == nil {
		st := &plan.State{Evidence: ev, Decisions: pre}
		err = ex.Execute(ctx, pl, st)
		return st.Completed(), st.Executed(), err
	}
	decisions := make(map[string]plan.Decision, len(decided)+len(pre))
	for id, d := range pre {
		decisions[id] = d
	}
	for _, w := range from.Waiting {
		d, ok := decided[w.ID]
		if !ok {
			continue
		}
		pd := plan.Decision{Approved: d.Verdict == Approve, Args: w.Args, Comment: d.Comment}
		if d.Verdict == Settle {
			pd.Comment = "settled, but settle is for calls whose outcome is unknown; the step waited for approval and did not run"
		}
		decisions[w.ID] = pd
	}
	pr, err := plan.RunFrom(ctx, noReplan{}, ex, objective, plan.Limits{MaxExecuted: p.opts.MaxSteps},
		&plan.Progress{Plan: pl, Number: 1, Completed: from.Completed, Executed: from.Executed, Decisions: decisions, Evidence: ev})
	return pr.Completed, pr.Executed, err
}

// literalSteps are the steps of pl whose args hold no $ref, each approved
// with exactly its args: what a person who approved the execute_plan call
// saw of them.
func literalSteps(pl *plan.Plan) map[string]plan.Decision {
	out := make(map[string]plan.Decision, len(pl.Steps))
	for _, s := range pl.Steps {
		args := s.Args
		if args == nil {
			args = map[string]any{}
		}
		if hasRef(args) {
			continue
		}
		b, err := value.Canonical(args)
		if err != nil {
			continue
		}
		out[s.ID] = plan.Decision{Approved: true, Args: string(b)}
	}
	return out
}

// hasRef reports whether v holds a {"$ref": …} value anywhere.
func hasRef(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$ref"]; ok {
			return true
		}
		for _, e := range x {
			if hasRef(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasRef(e) {
				return true
			}
		}
	}
	return false
}

func (w *PlanWait) completed() []plan.StepResult {
	if w == nil {
		return nil
	}
	return w.Completed
}

func (w *PlanWait) executed() int {
	if w == nil {
		return 0
	}
	return w.Executed
}

// rejected answers a plan refused before anything ran: error_type budget
// for a plan longer than max_steps, invalid_plan otherwise.
func (p *planner) rejected(res *planResult, err error, onEvent func(plan.Event)) *planResult {
	onEvent(plan.Event{Kind: plan.PlanRejected, ErrorClass: fault.ClassOf(err), Error: err.Error()})
	res.ErrorType = "invalid_plan"
	if fault.BudgetOf(err) != "" {
		res.ErrorType = string(fault.Budget)
	}
	var pe *plan.ParseError
	var ve *plan.ValidationError
	switch {
	case errors.As(err, &pe):
		res.Problems = pe.Problems
	case errors.As(err, &ve):
		res.Problems = ve.Problems
	}
	res.Error = err.Error() + "; nothing ran: fix the plan and call execute_plan again"
	return res
}

// planPaused is execute_plan's error when steps of its plan wait for a
// person's approval: the loop makes the call wait with wait as its Plan.
type planPaused struct{ wait *PlanWait }

func (e *planPaused) Error() string {
	return fmt.Sprintf("%s waits: %d step(s) of its plan need a person's approval", plan.MetaTool, len(e.wait.Waiting))
}

// noReplan is the planner of a resumed execute_plan call: the model wrote
// the plan, and a failed plan is its answer, not revised.
type noReplan struct{}

func (noReplan) Plan(context.Context, *plan.Request) (*plan.Plan, error) {
	return nil, fault.Errorf(fault.Business, "%s does not revise plans", plan.MetaTool)
}
