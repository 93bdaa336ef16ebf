package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// ModelPlanner asks a language model for plans through model.Decide: the
// reply must be one plan document (Parse) that passes Validate against the
// request's catalog and completed steps; a rejected reply gets one
// corrective request carrying every problem with its JSON pointer, and a
// second rejection is a format error (wrapping *model.RejectedError).
type ModelPlanner struct {
	// Model answers. Required.
	Model model.Model
	// ModelName is passed as model.Request.Model.
	ModelName string
	// Instruction replaces the opening of the system message; the plan
	// schema is appended to it either way.
	Instruction string
	// Corrections is passed to model.Decide: zero means one corrective
	// request, negative none.
	Corrections int
	// MaxOutputBytes caps how much of each completed step's output the
	// prompt quotes. Defaults to 1 KiB.
	MaxOutputBytes int
}

var _ Planner = (*ModelPlanner)(nil)

const defaultPlannerInstruction = "You are the planner of a tool-running system. Reply with one JSON plan only, no prose"

// reply is how Decide hands a model's text to Parse.
type reply struct{ p *Plan }

func (r *reply) UnmarshalJSON(b []byte) error {
	p, err := Parse(b)
	if err != nil {
		return err
	}
	r.p = p
	return nil
}

// Plan asks the model for a plan for req. The model request's StepID is
// req.StepID, or "plan" when empty. Errors: the model's own (classed by its
// adapter), or a format error after the corrections are spent.
func (mp *ModelPlanner) Plan(ctx context.Context, req *Request) (*Plan, error) {
	if mp.Model == nil {
		return nil, fault.Errorf(fault.Business, "model planner: no model")
	}
	if req == nil || req.Catalog == nil {
		return nil, fault.Errorf(fault.Business, "model planner: request without a catalog")
	}
	sch, err := req.Catalog.PlanSchema()
	if err != nil {
		return nil, err
	}
	stepID := req.StepID
	if stepID == "" {
		stepID = "plan"
	}
	mreq := &model.Request{Model: mp.ModelName, Decision: "plan", RunID: req.RunID, StepID: stepID, Attempt: req.Replan + 1,
		Messages: []model.Message{{Role: model.User, Content: mp.prompt(req)}}}
	instr := mp.Instruction
	if instr == "" {
		instr = defaultPlannerInstruction
	}
	d, err := model.Decide(ctx, mp.Model, mreq, model.DecideOptions[reply]{
		Schema:      sch,
		Corrections: mp.Corrections,
		Instruction: instr,
		OnReject: func(_ int, problems error) {
			if req.OnReject != nil {
				req.OnReject(problems)
			}
		},
		Check: func(r reply) error {
			if r.p == nil {
				return fmt.Errorf("reply holds no plan")
			}
			return Validate(r.p, req.Catalog, req.Completed...)
		},
	})
	if err != nil {
		return nil, err
	}
	return d.Value.p, nil
}

// prompt writes the user turn: goal, tools, format rules, and on a replan
// the completed steps and the failure.
func (mp *ModelPlanner) prompt(req *Request) string {
	var b strings.Builder
	c := req.Catalog
	fmt.Fprintf(&b, "Goal: %s\n\nTools you may use (at most %d steps):\n", req.Goal, c.MaxSteps())
	declares := false
	for _, n := range c.names {
		e := c.lookup(n)
		fmt.Fprintf(&b, "- %s", n)
		if e.spec.Description != "" {
			fmt.Fprintf(&b, ": %s", e.spec.Description)
		}
		switch e.spec.Effect {
		case tool.EffectWrite, tool.EffectExternal, tool.EffectDestructive:
			fmt.Fprintf(&b, "\n  effect: %s (a step calling it needs a declaration)", e.spec.Effect)
			declares = true
		}
		if len(e.spec.InputSchema) > 0 {
			fmt.Fprintf(&b, "\n  args schema: %s", compactJSON(e.spec.InputSchema))
		}
		if len(e.spec.OutputSchema) > 0 {
			fmt.Fprintf(&b, "\n  output schema: %s", compactJSON(e.spec.OutputSchema))
		}
		b.WriteByte('\n')
	}
	b.WriteString(`
Plan format: {"goal": "...", "steps": [{"id": "...", "tool": "...", "depends_on": ["..."], "args": {...}}]}.
Step ids are letters, digits, _ or -, unique. A step may depend only on earlier steps.
An argument may be {"$ref": "step_id.field"} to pass an earlier step's output (or one of its fields, as its output schema declares); a $ref implies the dependency.
Independent steps run in parallel.
`)
	if declares {
		b.WriteString(`A step whose tool has an effect carries "declaration": {"action": "...", "facts": [{"claim": "...", "source": "user | db | tool:<name>", "evidence": "the exact text of that source"}]}; each fact is checked against the user's input or that tool's output in this run before the step runs, so plan the lookups it cites first.
`)
	}
	if len(req.Completed) > 0 {
		limit := mp.MaxOutputBytes
		if limit <= 0 {
			limit = 1 << 10
		}
		b.WriteString("\nSteps already completed (they will not run again; use their ids in $ref instead of repeating them):\n")
		for _, r := range req.Completed {
			out, err := value.Canonical(r.Output)
			text := string(out)
			if err != nil {
				text = "(not JSON)"
			} else if len(text) > limit {
				text = value.Preview(out, limit)
			}
			fmt.Fprintf(&b, "- %s (tool %s): %s\n", r.ID, r.Tool, text)
		}
	}
	if f := req.Failure; f != nil {
		fmt.Fprintf(&b, "\nThe previous plan failed: step %s (tool %s) failed with a %s error: %s\nPropose a revised plan for what remains of the goal.\n", f.StepID, f.Tool, f.Class, f.Error)
	}
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	out, err := value.Canonical(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// Scripted is a planner for tests: it returns its plans in order, one per
// call, and records every request. Asked once more than it has plans, it
// fails with a business error. It is safe for concurrent use.
type Scripted struct {
	mu       sync.Mutex
	plans    []*Plan
	requests []Request
}

var _ Planner = (*Scripted)(nil)

// NewScripted returns a planner answering with plans, in order.
func NewScripted(plans ...*Plan) *Scripted { return &Scripted{plans: plans} }

// Plan returns the next plan.
func (s *Scripted) Plan(ctx context.Context, req *Request) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, *req)
	n := len(s.requests)
	if n > len(s.plans) {
		return nil, fault.Errorf(fault.Business, "scripted planner: asked for plan %d, has %d", n, len(s.plans))
	}
	return s.plans[n-1], nil
}

// Requests returns the requests received so far, in order.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}
