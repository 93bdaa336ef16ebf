package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// kind is what the engine does with one step type. Every rule that
// depends on a step's type lives in its entry of kinds; the scheduler,
// the workers and the durable path ask the step's kind (bound.kinds).
type kind struct {
	// bind resolves the step's tools, models, router or catalog from the
	// engine's registries into b; problems go to bb.
	bind func(bb *binder, b *bound, s *flow.Step)
	// render renders one execution's input (its prompt or its args);
	// defaults are the args of a tool step without args:. The bounds come
	// by value so that they stay on the caller's stack.
	render func(s *flow.Step, scope map[string]any, bounds template.Bounds, defaults any) (prompt string, args any, err error)
	// call makes one attempt of the step; origin says who failed.
	call func(r *run, ctx context.Context, j *job, in unitInput, attempt int) (out any, origin trace.Origin, err error)
	// outputOrigin is who is blamed when the output breaks its checks.
	outputOrigin trace.Origin
	// idempotent reports whether step i, found in flight after a crash,
	// runs again (same attempt, same idempotency key) without a person;
	// otherwise the resume parks it as unknown.
	idempotent func(r *run, i int) bool
	// takesArgs: the step's input is tool args (defaulted from its
	// requires, digested as args, shown to whoever approves it).
	takesArgs bool
}

// kinds holds every step type the engine runs. Adding a step type means
// adding its entry here (and its decoding in package flow); one that waits
// for a person or an agent before it runs also gets its case in
// sched.WaitsFor.
var kinds = map[flow.Type]*kind{
	flow.LLM: {
		bind: func(bb *binder, b *bound, s *flow.Step) { b.models[s.Index] = bb.model(s.Model, s.ID) },
		render: func(s *flow.Step, scope map[string]any, bounds template.Bounds, _ any) (string, any, error) {
			p, err := renderField(&bounds, s, "prompt_template", s.Prompt.RenderStringBounded, scope)
			return p, nil, err
		},
		call: func(r *run, ctx context.Context, j *job, in unitInput, attempt int) (any, trace.Origin, error) {
			out, err := r.callLLM(ctx, j, r.b.models[j.index], j.step.Model, in, attempt, false)
			return out, trace.OriginModel, err
		},
		outputOrigin: trace.OriginModel,
		idempotent:   always, // model calls have no side effects
	},
	flow.Route: {
		bind: func(bb *binder, b *bound, s *flow.Step) {
			if b.routers == nil {
				b.routers = make([]*route.Router, len(b.tools))
			}
			rt, err := bb.e.bindRoute(s, bb.model)
			bb.check(s, err)
			b.routers[s.Index] = rt
		},
		render: func(s *flow.Step, scope map[string]any, bounds template.Bounds, _ any) (string, any, error) {
			p, err := renderField(&bounds, s, "text", s.RouteSpec.Text.RenderStringBounded, scope)
			return p, nil, err
		},
		call: func(r *run, ctx context.Context, j *job, in unitInput, attempt int) (any, trace.Origin, error) {
			out, err := r.callRoute(ctx, j, in, attempt)
			return out, trace.OriginModel, err
		},
		outputOrigin: trace.OriginTool,
		idempotent:   always,
	},
	flow.Agent: {
		bind: func(bb *binder, b *bound, s *flow.Step) {
			if b.agents == nil {
				b.agents = make([]*agent.Loop, len(b.tools))
			}
			l, err := bb.e.bindAgent(s, bb.model, b.pipe)
			bb.check(s, err)
			b.agents[s.Index] = l
		},
		render: func(s *flow.Step, scope map[string]any, bounds template.Bounds, _ any) (string, any, error) {
			p, err := renderField(&bounds, s, "prompt_template", s.Prompt.RenderStringBounded, scope)
			return p, nil, err
		},
		call: func(r *run, ctx context.Context, j *job, in unitInput, attempt int) (any, trace.Origin, error) {
			out, err := r.callAgent(ctx, j, in, attempt)
			var me *agent.ModelError
			if errors.As(err, &me) {
				return out, trace.OriginModel, err // the model failed, after its retries
			}
			return out, trace.OriginTool, err
		},
		outputOrigin: trace.OriginTool,
		// an agent step's loop keeps each call that may have had an effect
		// from running twice (package agent).
		idempotent: always,
	},
	flow.Plan: {
		bind: func(bb *binder, b *bound, s *flow.Step) {
			if b.catalogs == nil {
				b.catalogs = make([]*plan.Catalog, len(b.tools))
			}
			b.models[s.Index] = bb.model(s.Model, s.ID)
			cat, err := bb.e.bindPlan(s)
			bb.check(s, err)
			b.catalogs[s.Index] = cat
		},
		render: func(s *flow.Step, scope map[string]any, bounds template.Bounds, _ any) (string, any, error) {
			p, err := renderField(&bounds, s, "goal", s.PlanSpec.Goal.RenderStringBounded, scope)
			return p, nil, err
		},
		call: func(r *run, ctx context.Context, j *job, in unitInput, attempt int) (any, trace.Origin, error) {
			out, err := r.callPlan(ctx, j, in, attempt)
			return out, trace.OriginTool, err
		},
		outputOrigin: trace.OriginTool,
		// a plan may call any of its tools: safe to re-run only if all are
		// (invoke.Repeatable: idempotent, or reads at most).
		idempotent: func(r *run, i int) bool {
			for _, name := range r.f.Steps[i].PlanSpec.Tools {
				t, ok := r.e.cfg.Tools.Lookup(name)
				if !ok {
					return false
				}
				if spec := t.Spec(); !invoke.Repeatable(&spec) {
					return false
				}
			}
			return true
		},
	},
	flow.Tool: {
		bind: func(bb *binder, b *bound, s *flow.Step) {
			i := s.Index
			if b.tools[i] = bb.tool(s.Tool, s.ID); b.tools[i] != nil {
				b.specs[i] = b.tools[i].Spec()
				b.inSchemas[i] = bb.inputSchema(b.tools[i], s.ID)
			}
		},
		render: func(s *flow.Step, scope map[string]any, bounds template.Bounds, defaults any) (string, any, error) {
			if s.Args == nil {
				return "", defaults, nil
			}
			args, err := s.Args.RenderBounded(scope, &bounds)
			if err != nil {
				return "", nil, renderFailure(bounds.Ctx, s, "args", err)
			}
			return "", args, nil
		},
		call: func(r *run, ctx context.Context, j *job, in unitInput, attempt int) (any, trace.Origin, error) {
			return r.callTool(ctx, j, r.b.tools[j.index], in, attempt, false)
		},
		outputOrigin: trace.OriginTool,
		// the one rule for a call in doubt (invoke.Repeatable): its tool is
		// idempotent, or reads at most.
		idempotent: func(r *run, i int) bool { return invoke.Repeatable(&r.b.specs[i]) },
		takesArgs:  true,
	},
	flow.Approval: {
		// nothing to bind, render or call: a person answers it.
		bind:         func(*binder, *bound, *flow.Step) {},
		render:       func(*flow.Step, map[string]any, template.Bounds, any) (string, any, error) { return "", nil, nil },
		outputOrigin: trace.OriginEngine,
		idempotent:   never,
	},
	flow.Submit: agentAnswers,
	flow.Source: agentAnswers,
}

// agentAnswers is the kind of submit and source steps: they take their
// output from an agent (a submission, or an adapter the agent asks to
// run), so there is nothing to bind, render or call; the machine parks
// them (sched.WaitsFor, sched.Machine.Answer).
var agentAnswers = &kind{
	bind:         func(*binder, *bound, *flow.Step) {},
	render:       func(*flow.Step, map[string]any, template.Bounds, any) (string, any, error) { return "", nil, nil },
	outputOrigin: trace.OriginEngine,
	idempotent:   never,
}

func always(*run, int) bool { return true }
func never(*run, int) bool  { return false }

// renderField renders a step's string field within bounds, classifying a
// failure (renderFailure).
func renderField(bounds *template.Bounds, s *flow.Step, field string, render func(map[string]any, *template.Bounds) (string, error), scope map[string]any) (string, error) {
	out, err := render(scope, bounds)
	if err != nil {
		return "", renderFailure(bounds.Ctx, s, field, err)
	}
	return out, nil
}

// binder looks up what a flow's steps name, collecting the problems.
type binder struct {
	e        *Engine
	problems []string
}

func (bb *binder) check(s *flow.Step, err error) {
	if err != nil {
		bb.problems = append(bb.problems, fmt.Sprintf("step %s: %v", s.ID, err))
	}
}

func (bb *binder) tool(name, step string) tool.Tool {
	t, ok := bb.e.cfg.Tools.Lookup(name)
	if !ok {
		bb.problems = append(bb.problems, fmt.Sprintf("step %s: tool %q is not registered with the engine (known: %s)", step, name, strings.Join(bb.e.cfg.Tools.Names(), ", ")))
	}
	return t
}

func (bb *binder) model(name, step string) model.Model {
	m, err := bb.e.cfg.Models.Lookup(name)
	if err != nil {
		bb.problems = append(bb.problems, fmt.Sprintf("step %s: %v", step, err))
	}
	return m
}

// inputSchema compiles a tool's input schema, if it has one.
func (bb *binder) inputSchema(t tool.Tool, step string) *flow.Schema {
	if t == nil || len(t.Spec().InputSchema) == 0 {
		return nil
	}
	sch, err := flow.CompileSchema(t.Spec().Name+" input_schema", t.Spec().InputSchema)
	if err != nil {
		bb.problems = append(bb.problems, fmt.Sprintf("step %s: %v", step, err))
	}
	return sch
}
