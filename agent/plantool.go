package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/invoke"
	"github.com/reinhq/rein/plan"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// PlanOptions configure the execute_plan meta-tool (Config.ExecutePlan).
type PlanOptions struct {
	// MaxSteps bounds a plan's length and the tool calls one execute_plan
	// call makes. Defaults to plan.DefaultMaxSteps.
	MaxSteps int
	// AllowExternal lets plans call tools whose effect is external.
	AllowExternal bool
}

// PlanJournal is a Journal that also keeps what execute_plan's executor
// does: every plan event (steps started, settled, a plan rejected), with
// the turn and call of the execute_plan call it belongs to. It is called
// from the call's goroutine; calls of one turn run concurrently.
type PlanJournal interface {
	PlanEvent(turn, call int, ev plan.Event)
}

// planner is a Loop's execute_plan: the catalog of the agent's tools
// (compiled once) and the registry the executor calls them through.
type planner struct {
	opts     PlanOptions
	catalog  *plan.Catalog
	registry *tool.Registry
	tools    map[string]*boundTool
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
	p := &planner{opts: opts, registry: &tool.Registry{}, tools: tools}
	specs := make([]tool.Spec, 0, len(tools))
	allowed := []string{}
	spec := tool.Spec{Name: plan.MetaTool, Description: planDescription, InputSchema: json.RawMessage(planInputSchema),
		Effect: tool.EffectNone, Idempotent: true}
	for name, bt := range tools {
		specs = append(specs, bt.spec)
		allowed = append(allowed, name)
		t := bt.Tool.Tool
		if bt.Approval {
			t = approvalGated(t)
		}
		if err := p.registry.Register(t); err != nil {
			return nil, nil, fmt.Errorf("agent: execute_plan: %w", err)
		}
		spec.Effect = strongerEffect(spec.Effect, bt.spec.Effect)
		spec.Idempotent = spec.Idempotent && safeToRepeat(bt.spec)
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
// that acts outside the system unless allowed) before anything runs; then the plan executor runs it through l's pipeline,
// recorder and keys (run/step/attempt/turn<t>/call<c>/plan1/<plan-step>).
// Whatever happens, the answer is an observation, never an error of the
// loop: the loop's own state is not touched by the plan.
func (l *Loop) executePlan(ctx context.Context, turn int, c *Call, args any, turnEv *safety.Evidence) (any, error) {
	p, call := l.planner, c.Index
	onEvent := func(plan.Event) {}
	if pj, ok := l.cfg.Journal.(PlanJournal); ok {
		onEvent = func(ev plan.Event) { pj.PlanEvent(turn, call, ev) }
	}
	if PlanRunning(ctx) {
		return &planResult{ErrorType: "recursion", FailedSteps: []planStepError{},
			Error: "execute_plan is already running: plans do not nest; put the steps in the running plan"}, nil
	}
	m, _ := args.(map[string]any)
	objective, _ := m["objective"].(string)
	res := &planResult{Objective: objective, Result: map[string]any{}, CompletedSteps: []string{}, FailedSteps: []planStepError{}}
	doc := map[string]any{"goal": objective, "steps": m["steps"]}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fault.Errorf(fault.Format, "execute_plan: the arguments do not encode as JSON: %v", err)
	}
	pl, err := plan.Parse(raw)
	if err != nil {
		return p.rejected(res, err, onEvent), nil
	}
	var problems []plan.Problem
	for i, s := range pl.Steps {
		bt := p.tools[s.Tool]
		if bt == nil {
			continue // Validate names it
		}
		ptr := "/steps/" + strconv.Itoa(i) + "/tool"
		switch {
		case bt.spec.Effect == tool.EffectExternal && !p.opts.AllowExternal:
			problems = append(problems, plan.Problem{Pointer: ptr, Message: fmt.Sprintf("tool %q acts outside the system (effect: external), which plans may not unless the agent allows it (execute_plan: {allow_external: true}): call it directly, not in a plan", s.Tool)})
		}
	}
	if err := plan.Validate(pl, p.catalog); err != nil {
		var ve *plan.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		problems = append(problems, ve.Problems...)
	}
	if len(problems) > 0 {
		return p.rejected(res, &plan.ValidationError{Problems: problems}, onEvent), nil
	}
	ex, err := plan.NewExecutor(plan.ExecutorConfig{Catalog: p.catalog, Tools: p.registry, Gate: l.cfg.Pipeline.Gate,
		Recorder: l.cfg.Recorder, MaxExecuted: p.opts.MaxSteps, Concurrency: l.cfg.Concurrency, Now: l.cfg.Now, OnEvent: onEvent})
	if err != nil {
		return nil, fmt.Errorf("execute_plan: %w", err)
	}
	var ev *safety.Evidence // what the plan's literals are traced to, for the gate
	if l.gated() {
		ev = &safety.Evidence{} // its own: the plan adds its steps' outputs
		ev.Include(turnEv)
	}
	g := &planGate{decisions: c.decisions}
	pctx := context.WithValue(WithPlanRunning(ctx), planGateKey{}, g)
	var completed []plan.StepResult
	executed := 0
	if c.Plan == nil {
		st := &plan.State{Evidence: ev}
		err = ex.Execute(pctx, pl, st)
		completed, executed = st.Completed(), st.Executed()
	} else {
		// the plan waited for people: it continues from where it stopped
		g.waited = c.Plan.Waiting
		var pr *plan.Result
		pr, err = plan.RunFrom(pctx, noReplan{}, ex, objective, plan.Limits{MaxExecuted: p.opts.MaxSteps},
			&plan.Progress{Plan: pl, Number: 1, Completed: c.Plan.Completed, Executed: c.Plan.Executed, Evidence: ev})
		if pr != nil {
			completed, executed = pr.Completed, pr.Executed
		}
	}
	if len(g.waiting) > 0 && ctx.Err() == nil {
		return nil, &planPaused{wait: &PlanWait{Completed: completed, Executed: executed - len(g.waiting), Waiting: g.waiting}}
	}
	for _, r := range completed {
		res.CompletedSteps = append(res.CompletedSteps, r.ID)
		res.Result[r.ID] = r.Output
	}
	if err == nil {
		res.Success = true
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, err // the call is cancelled: the loop leaves it chosen
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

// rejected answers a plan refused before anything ran.
func (p *planner) rejected(res *planResult, err error, onEvent func(plan.Event)) *planResult {
	onEvent(plan.Event{Kind: plan.PlanRejected, ErrorClass: fault.Format, Error: err.Error()})
	res.ErrorType = "invalid_plan"
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

// planGateKey keys the planGate of a running execute_plan call.
type planGateKey struct{}

// planGate is what the approval-gated tools of one execute_plan call
// share: the people's decisions by plan step, the steps that waited (with
// the args they were approved with), and the steps that now wait.
type planGate struct {
	decisions map[string]Decision
	waited    []PlanStepWait
	mu        sync.Mutex
	waiting   []PlanStepWait
}

// approvalGated wraps a tool whose every call needs a person's approval
// for plans: a call without a decision does not run and records its plan
// step as waiting; an approved call runs when its args are exactly those
// approved; a rejected one fails with the person's comment.
func approvalGated(t tool.Tool) tool.Tool {
	spec := t.Spec()
	return tool.Func(spec, func(ctx context.Context, args any) (any, error) {
		g, _ := ctx.Value(planGateKey{}).(*planGate)
		info := tool.CallInfoFrom(ctx)
		step := info.StepID[strings.LastIndexByte(info.StepID, '/')+1:]
		if g == nil {
			return nil, fault.New(fault.Policy, &invoke.ApprovalError{Tool: spec.Name, Reason: "its declaration says approval: required"})
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fault.Errorf(fault.Format, "plan step %s: the args of %s do not encode as JSON: %v", step, spec.Name, err)
		}
		d, decided := g.decisions[step]
		if !decided {
			g.mu.Lock()
			g.waiting = append(g.waiting, PlanStepWait{Step: step, Tool: spec.Name, Args: string(raw), Reason: "its declaration says approval: required"})
			g.mu.Unlock()
			return nil, fault.New(fault.Policy, &invoke.ApprovalError{Tool: spec.Name, Reason: "its declaration says approval: required"})
		}
		switch d.Verdict {
		case Approve:
			for _, w := range g.waited {
				if w.Step == step && w.Args != string(raw) {
					return nil, fault.Errorf(fault.Conflict, "plan step %s: %s was approved with args %s but would run with %s: it does not run; call execute_plan again", step, spec.Name, quoteCut(w.Args, 200), quoteCut(string(raw), 200))
				}
			}
			return t.Call(ctx, args)
		case Reject:
			return nil, fault.Errorf(fault.Business, "rejected by a person: %s", d.Comment)
		default:
			return nil, fault.Errorf(fault.Business, "plan step %s waits for approval; %s is for calls whose outcome is unknown: approve or reject it", step, d.Verdict)
		}
	})
}

// noReplan is the planner of a resumed execute_plan call: the model wrote
// the plan, and a failed plan is its answer, not revised.
type noReplan struct{}

func (noReplan) Plan(context.Context, *plan.Request) (*plan.Plan, error) {
	return nil, fault.Errorf(fault.Business, "%s does not revise plans", plan.MetaTool)
}
