package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// callScope ties a model call made on a step's behalf (by the router or
// the planner) to its run, so it is budgeted and traced like an llm step's.
type callScope struct {
	r       *run
	step    *flow.Step
	index   int // the step's index, for its usage
	attempt int
	// unit names the for_each item ("i3") or repeat round ("r2") the
	// calls are made for; "" for the step itself.
	unit string
	// tokens the scope's model calls used (one call at a time).
	tokensIn, tokensOut int
}

type scopeKey struct{}

func withScope(ctx context.Context, c *callScope) context.Context {
	return context.WithValue(ctx, scopeKey{}, c)
}

// metered is the model the router and planner of a flow step ask: it
// counts the run's model calls and tokens against its budgets and records
// a model_call event for each exchange.
type metered struct {
	name string
	m    model.Model
}

func (mm metered) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	c, _ := ctx.Value(scopeKey{}).(*callScope)
	if c == nil {
		sctx, done := streamCall(ctx, req)
		resp, err := mm.m.Generate(sctx, req)
		done(err)
		return resp, err
	}
	r, s := c.r, c.step
	if err := r.budget.LLMCall(); err != nil {
		return nil, err
	}
	req.RunID, req.StepID, req.Attempt = r.id, s.ID, c.attempt
	if req.Model == "" {
		req.Model = mm.name
	}
	settle, err := r.reserve(ctx, c, mm.name, req)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", mm.name, err)
	}
	start := r.e.cfg.Clock.Now()
	sctx, done := streamCall(ctx, req)
	resp, err := mm.m.Generate(sctx, req)
	done(err)
	settle(resp)
	ev := trace.Event{Kind: trace.ModelCall, StepID: s.ID, StepType: string(s.Type), Attempt: c.attempt, Model: mm.name,
		DurationMS: trace.Millis(r.e.cfg.Clock.Now().Sub(start)), Status: "ok", Decision: req.Decision}
	if resp != nil {
		ev.TokensIn, ev.TokensOut = resp.Usage.In, resp.Usage.Out
		c.tokensIn, c.tokensOut = c.tokensIn+resp.Usage.In, c.tokensOut+resp.Usage.Out
		if resp.Model != "" {
			ev.Model = resp.Model
		}
	}
	if err != nil {
		ev.Status, ev.ErrorClass, ev.Error, ev.Origin = "failed", string(fault.ClassOf(err)), err.Error(), trace.OriginModel
	}
	r.record(ev)
	r.addUse(c.index, stepUse{llmCalls: 1, tokensIn: ev.TokensIn, tokensOut: ev.TokensOut})
	if resp != nil {
		if berr := r.budget.Tokens(resp.Usage.In, resp.Usage.Out); berr != nil {
			return nil, berr
		}
	}
	return resp, err
}

// bindRoute builds a route step's router: its rules, and a semantic router
// on the step's model when it names one.
func (e *Engine) bindRoute(s *flow.Step, lookupModel func(name, step string) model.Model) (*route.Router, error) {
	rs := s.RouteSpec
	cfg := route.Config{Routes: rs.Routes, Rules: rs.Rules, Fallback: rs.Fallback}
	if s.Model != "" {
		m := lookupModel(s.Model, s.ID)
		if m == nil {
			return nil, nil // the problem is reported by lookupModel
		}
		cfg.Semantic = route.NewModelSemantic(metered{name: s.Model, m: m}, &route.ModelOptions{Model: s.Model, StepID: s.ID})
	}
	return route.New(cfg)
}

// bindPlan builds a plan step's catalog from the engine's tools.
func (e *Engine) bindPlan(s *flow.Step) (*plan.Catalog, error) {
	ps := s.PlanSpec
	specs := make([]tool.Spec, 0, len(ps.Tools))
	for _, name := range ps.Tools {
		t, ok := e.cfg.Tools.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("tool %q is not registered with the engine", name)
		}
		specs = append(specs, t.Spec())
	}
	return plan.NewCatalog(plan.CatalogConfig{Tools: specs, Allowed: ps.Tools, MaxSteps: ps.MaxSteps})
}

// callRoute routes the step's rendered text.
func (r *run) callRoute(ctx context.Context, j *job, in unitInput, attempt int) (any, error) {
	s := j.step
	ctx = withScope(ctx, &callScope{r: r, step: s, index: j.index, attempt: attempt})
	req := route.Request{Text: in.prompt}
	if m, ok := r.input.(map[string]any); ok {
		req.Metadata = m
	}
	res, err := r.b.routers[j.index].Route(ctx, req)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"route": res.Route, "source": string(res.Source), "reason": res.Reason}
	if res.Rule != nil {
		out["rule"] = map[string]any{"index": float64(res.Rule.Index), "kind": res.Rule.Kind, "pattern": res.Rule.Pattern}
	}
	return out, nil
}

// callPlan has the step's planner propose a plan for the rendered goal, the
// executor run it (every call through the gate, traced), and replans a
// bounded number of times. The step's output is {goal, result, outputs,
// executed, replans, failures}; result is the last plan step's output.
func (r *run) callPlan(ctx context.Context, j *job, in unitInput, attempt int) (any, error) {
	s := j.step
	ps := s.PlanSpec
	// the plan's calls extend this attempt's key (package invoke).
	at := invoke.Position{RunID: r.id, StepID: s.ID, ForEach: in.item >= 0, Item: in.item, Round: in.round, Attempt: attempt}
	ex, err := plan.NewExecutor(plan.ExecutorConfig{Catalog: r.b.catalogs[j.index], Tools: r.e.cfg.Tools, Gate: r.b.gate, Recorder: (*callRecorder)(r),
		MaxExecuted: ps.MaxExecuted, Now: r.e.cfg.Clock.Now, Pausable: r.pausablePlan(j, in), Held: r.heldFunc(j.index), OnEvent: func(ev plan.Event) {
			if ev.Kind == plan.PlanProposed {
				r.recordPlan(s, &at, &ev)
			}
			r.recordPlanEvent(j, ev)
			if r.onPlan != nil {
				r.onPlan(ev)
			}
		}})
	if err != nil {
		return nil, err
	}
	planner := &plan.ModelPlanner{Model: metered{name: s.Model, m: r.b.models[j.index]}, ModelName: s.Model}
	ctx = withScope(ctx, &callScope{r: r, step: s, index: j.index, attempt: attempt})
	ctx = tool.WithCallInfo(ctx, &tool.CallInfo{RunID: r.id, StepID: s.ID, Attempt: attempt, IdempotencyKey: at.Key()})
	prog := r.planProgress(j.index, in.item)
	if prog == nil {
		prog = &plan.Progress{}
	}
	prog.Evidence = r.planEvidence()
	res, err := plan.RunFrom(ctx, planner, ex, in.prompt, plan.Limits{MaxSteps: ps.MaxSteps, MaxReplans: ps.MaxReplans, MaxExecuted: ps.MaxExecuted}, prog)
	if err != nil {
		if errors.Is(err, plan.ErrHeld) {
			return nil, errHeld // a failed premise stopped the plan steps left
		}
		if w := planWait(err); w != err { //nolint:errorlint // identity: did planWait make a wait of it
			return nil, w // plan steps wait for people: the step parks
		}
		if res != nil && res.Executed > 0 && fault.ClassOf(err) == fault.Transient {
			// plan steps already ran: retrying the step would run them again.
			err = fault.BusinessErr(fmt.Errorf("%w (not retried: %d plan steps already ran)", err, res.Executed))
		}
		return nil, err
	}
	failures := make([]any, len(res.Failures))
	for k, f := range res.Failures {
		failures[k] = map[string]any{"step_id": f.StepID, "tool": f.Tool, "error_type": string(f.Class), "error": f.Error}
	}
	outputs := make(map[string]any, len(res.Outputs))
	for k, v := range res.Outputs {
		outputs[k] = v
	}
	return map[string]any{"goal": res.Goal, "result": res.Output, "outputs": outputs,
		"executed": float64(res.Executed), "replans": float64(res.Replans), "failures": failures}, nil
}

// recordPlanEvent traces one event of a plan step's planner or executor.
// A rejected plan is the model's doing; a corrective request the planner
// makes counts as the step's correction.
func (r *run) recordPlanEvent(j *job, ev plan.Event) {
	s := j.step
	e := trace.Event{Kind: trace.Kind(ev.Kind), StepID: s.ID, StepType: string(s.Type), Attempt: ev.Attempt,
		PlanStep: ev.PlanStep, Tool: ev.Tool, Status: ev.Status, DurationMS: trace.Millis(ev.Duration),
		ErrorClass: string(ev.ErrorClass), Error: ev.Error}
	if ev.ErrorClass != "" {
		e.Origin = trace.OriginTool
		if ev.Kind == plan.PlanRejected {
			e.Origin = trace.OriginModel
		}
	}
	r.record(e)
	if ev.Kind == plan.PlanRejected && ev.Status == plan.RejectedCorrected {
		r.addUse(j.index, stepUse{corrections: 1})
	}
}
