package engine

import (
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/tool"
)

// A call in doubt outside the runner: a driver that runs a step's calls
// one by one (package github.com/reinhq/rein/temporal) names the call its
// lost worker was making as an AttemptRequest (Item, Round, Fallback), and
// Reconcile finds its tool, args and key here as the runner's resume does
// (reconcile.go: a for_each item's or its fallback's, a repeat round's, a
// step's fallback's).

// doubtCall is the call of tool t (name, spec) that req names, with the
// args it was made with and its position (the key is at.Key()).
type doubtCall struct {
	t    tool.Tool
	name string
	spec *tool.Spec
	at   invoke.Position
	args any
}

// callInDoubt renders the call req names on job j (step req.Step,
// prepared): the step's own call (a plain tool step's, item req.Item's,
// round req.Round's with req.Previous), or with req.Fallback its
// fallback's (item req.Item's, or the step's, in the scope of the round
// its rounds stopped at). Its key is the one the call was made with
// (Attempt's).
func (r *run) callInDoubt(j *job, req AttemptRequest) (*doubtCall, error) {
	s := j.step
	i := j.index
	at := invoke.Position{RunID: r.id, StepID: s.ID, ForEach: req.Item >= 0, Item: req.Item, Fallback: req.Fallback, Attempt: max(req.Attempt, 1)}
	if s.ForEach != nil && (req.Item < 0 || req.Item >= len(j.each.inputs)) {
		return nil, fmt.Errorf("engine: step %s has %d items, not item %d", s.ID, len(j.each.inputs), req.Item)
	}
	if req.Fallback {
		if s.Fallback == nil || i >= len(r.b.fbTool) || r.b.fbTool[i] == nil {
			return nil, fmt.Errorf("engine: step %s has no fallback tool", s.ID)
		}
		t := r.b.fbTool[i]
		spec := t.Spec()
		c := &doubtCall{t: t, name: s.Fallback.Tool, spec: &spec, at: at}
		if s.ForEach != nil {
			_, args, ok := r.fallbackCall(j, req.Item)
			if !ok {
				return nil, fmt.Errorf("engine: the fallback args of step %s, item %d, do not render", s.ID, req.Item)
			}
			c.args = args
			return c, nil
		}
		scope := j.scope
		if s.Repeat != nil && req.Round > 0 {
			RoundScope(scope, req.Round-1, req.Previous)
			if req.Round > 1 {
				SettleRound(scope, s, req.Previous)
			}
		}
		c.args = j.in.args
		if s.Fallback.Args != nil {
			a, err := s.Fallback.Args.RenderBounded(scope, &template.Bounds{Ctx: r.ctx, MaxBytes: s.MaxInputBytes})
			if err != nil {
				return nil, renderFailure(r.ctx, s, "fallback.args", err)
			}
			c.args = a
		}
		return c, nil
	}
	if s.Type != flow.Tool || r.b.tools[i] == nil {
		return nil, fmt.Errorf("engine: step %s is not a tool step", s.ID)
	}
	c := &doubtCall{t: r.b.tools[i], name: s.Tool, spec: &r.b.specs[i], at: at}
	switch {
	case s.ForEach != nil:
		c.args = j.each.inputs[req.Item].args
	case s.Repeat != nil:
		if req.Round < 1 {
			return nil, fmt.Errorf("engine: step %s is a repeat step: a call in doubt names its round (from 1)", s.ID)
		}
		in, err := r.roundInput(r.ctx, j, req.Round-1, req.Previous, req.Round > 1)
		if err != nil {
			return nil, err
		}
		c.at.Round, c.args = req.Round, in.args
	default:
		c.args = j.in.args
	}
	return c, nil
}

// ReconcilesCall is Reconciles for any tool call of step i found in doubt
// (its worker was lost while it ran): the step's own call (a plain tool
// step's, a for_each item's, a repeat round's) or, with fallback, its
// fallback's (the step's, or an item's). again: it is made again with the
// same key, nobody asked (its tool is idempotent or reads at most,
// invoke.Repeatable); check: its tool declares a check: that Reconcile
// asks before a person. Neither: a person decides at once.
func (e *Engine) ReconcilesCall(f *flow.Flow, i int, fallback bool) (again, check bool, err error) {
	b, err := e.bind(f)
	if err != nil {
		return false, false, err
	}
	if i < 0 || i >= len(f.Steps) {
		return false, false, fmt.Errorf("engine: flow %s has no step %d", f.Name, i)
	}
	var t tool.Tool
	switch {
	case fallback && i < len(b.fbTool):
		t = b.fbTool[i]
	case !fallback && f.Steps[i].Type == flow.Tool:
		t = b.tools[i]
	}
	if t == nil {
		return false, false, nil
	}
	spec := t.Spec()
	if invoke.Repeatable(&spec) {
		return true, false, nil
	}
	_, check = t.(tool.Checker)
	return false, check, nil
}
