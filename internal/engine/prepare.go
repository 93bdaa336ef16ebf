package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// job is everything a worker needs to execute one step; it is built by the
// scheduler so workers never read the run's env.
type job struct {
	index int
	step  *flow.Step
	in    unitInput
	// each holds a for_each step's items; nil for other steps.
	each *eachItems
	// scope is a private copy of env for gate and repeat evaluation.
	scope    map[string]any
	inputSHA string
	// renderErr is a failure to build the inputs; the step's on_error applies.
	renderErr error
	// out is the worker's report, allocated with the job.
	out outcome
	// approved: a person approved the step's call (gatePark).
	approved bool
	// message is the step's message rendered for a person (durable runs
	// only); badMessage: it did not render, and renderErr says why.
	message    string
	badMessage bool
}

// eachItems are a for_each step's items: their inputs, the items
// themselves, and (nil unless on_error applies per item) the errors of the
// items whose input could not be rendered.
type eachItems struct {
	inputs []unitInput
	values []any
	errs   []error
}

// items returns the per-item inputs of a for_each step; nil for others.
func (j *job) items() []unitInput {
	if j.each == nil {
		return nil
	}
	return j.each.inputs
}

// unitInput is the rendered input of one execution: args for a tool step,
// the prompt for an llm step.
type unitInput struct {
	args   any
	prompt string
	item   int // for_each item index, -1 otherwise
	round  int // repeat round from 1, 0 otherwise
}

// prepare renders step i's inputs against the current env.
func (r *run) prepare(i int) *job {
	s := r.f.Steps[i]
	j := &job{index: i, step: s, in: unitInput{item: -1}}
	if s.Gate != nil || s.Premise != nil || s.Repeat != nil || s.Fallback != nil && (s.Fallback.Args != nil || s.Fallback.Prompt != nil) {
		j.scope = r.scope()
	}
	switch {
	case s.ForEach != nil:
		j.each = &eachItems{}
		j.each.inputs, j.each.values, j.each.errs, j.renderErr = r.renderItems(s)
	case s.Repeat != nil:
		// rounds render against their own scope (previous, iteration).
	default:
		j.in, j.renderErr = renderInput(r.ctx, r.b.kinds[i], s, r.env, -1, r.defaultArgs(s), r.inputBound(s))
	}
	if j.renderErr == nil && s.Message != nil && r.d.on {
		// what a person is asked has the input bound args have, counted
		// before the bytes are made.
		var err error
		j.message, err = s.Message.RenderStringBounded(r.env, &template.Bounds{Ctx: r.ctx, MaxBytes: s.MaxInputBytes})
		if err != nil {
			j.renderErr, j.badMessage = renderFailure(r.ctx, s, "message", err), true
		}
	}
	if j.renderErr == nil {
		var err error
		if s.ForEach != nil {
			j.inputSHA, err = r.digestItems(j.each.inputs)
		} else if sha := r.passthroughDigest(s); sha != "" {
			j.inputSHA = sha
		} else if s.Repeat == nil {
			j.inputSHA, err = r.digestInput(s, j.in)
		}
		if err != nil {
			j.renderErr = fault.BusinessErr(err)
		}
	}
	return j
}

// defaultArgs is what a tool step without args receives: the outputs of its
// direct requires by id, and the run input for a root step.
func (r *run) defaultArgs(s *flow.Step) any {
	if !r.b.kinds[s.Index].takesArgs || s.Args != nil {
		return nil
	}
	m := make(map[string]any, len(s.RequireIdx)+1)
	if len(s.RequireIdx) == 0 {
		m["input"] = r.input
	}
	for _, k := range s.RequireIdx {
		up := r.f.Steps[k]
		m[up.ID] = r.env[up.ID]
	}
	return m
}

// renderInput renders one execution's input within maxBytes (the step's
// max_input_bytes, or 0 when inputBound proved it cannot be passed),
// stopping when ctx ends.
func renderInput(ctx context.Context, k *kind, s *flow.Step, scope map[string]any, item int, defaults any, maxBytes int64) (unitInput, error) {
	in := unitInput{item: item}
	var err error
	in.prompt, in.args, err = k.render(s, scope, template.Bounds{Ctx: ctx, MaxBytes: maxBytes}, defaults)
	return in, err
}

// inputBound is the bound step s's args render within: its
// max_input_bytes, or 0 (no bound to check) when the args are one upstream
// output whose canonical JSON is so small that the rendering's measure of
// it cannot pass the bound. That measure (template.Bounds) is at most 8
// times the canonical JSON's length: it counts 8 bytes for a value of
// another type, at most 24 for a number, one byte more than JSON for a
// true, an element or an entry; so this skips the walk of a value the
// limit would accept anyway, and nothing else.
func (r *run) inputBound(s *flow.Step) int64 {
	if k := r.passthroughStep(s); k >= 0 && s.MaxInputBytes > 0 {
		if n := r.steps[k].outputSize; n > 0 && n <= s.MaxInputBytes/8 {
			return 0
		}
	}
	return s.MaxInputBytes
}

// renderFailure classifies a failed rendering or evaluation of step s's
// field: once ctx ended, its cause (the run's timeout or cancellation, which
// stops the run); past max_input_bytes, a business error saying so;
// anything else, a business error about the field.
func renderFailure(ctx context.Context, s *flow.Step, field string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var se *template.SizeError
	if errors.As(err, &se) {
		return fault.BusinessErr(fmt.Errorf("%s: the rendered input is more than max_input_bytes (%d bytes): pass less to the step, or raise its max_input_bytes", field, se.Max))
	}
	return fault.BusinessErr(fmt.Errorf("%s: %w", field, err))
}

// renderItems evaluates for_each and renders one input per item, with item
// and index visible. With on_error skip or fallback an item whose input
// cannot be rendered is that item's failure (errs[k]); otherwise it fails
// the step before any item runs.
func (r *run) renderItems(s *flow.Step) (out []unitInput, list []any, errs []error, err error) {
	ectx, cancel := r.evalCtx(s)
	v, err := s.ForEach.Items.EvalValueContext(ectx, r.env)
	cancel()
	if err != nil {
		return nil, nil, nil, renderFailure(ectx, s, fmt.Sprintf("for_each %q", s.ForEach.Items.Source()), err)
	}
	list, ok := v.([]any)
	if !ok && v != nil {
		return nil, nil, nil, fault.BusinessErr(fmt.Errorf("for_each %q gave %s, not a list", s.ForEach.Items.Source(), ref.TypeName(v)))
	}
	perItem := s.OnError == flow.Skip || s.OnError == flow.Fallback
	oldItem, hadItem := r.env["item"]
	oldIndex, hadIndex := r.env["index"]
	defer func() {
		restore(r.env, "item", oldItem, hadItem)
		restore(r.env, "index", oldIndex, hadIndex)
	}()
	out = make([]unitInput, len(list))
	for k, it := range list {
		r.env["item"], r.env["index"] = it, float64(k)
		args := any(nil)
		if r.b.kinds[s.Index].takesArgs && s.Args == nil {
			args = it
		}
		in, err := renderInput(r.ctx, r.b.kinds[s.Index], s, r.env, k, args, s.MaxInputBytes)
		out[k] = in
		if err == nil {
			continue
		}
		if !perItem {
			return nil, nil, nil, fmt.Errorf("item %d: %w", k, err)
		}
		if errs == nil {
			errs = make([]error, len(list))
		}
		errs[k] = err
	}
	return out, list, errs, nil
}

func restore(m map[string]any, k string, v any, had bool) {
	if had {
		m[k] = v
	} else {
		delete(m, k)
	}
}

// passthroughDigest is the input digest of a tool step whose args are one
// upstream step's whole output: that output's digest, already computed.
func (r *run) passthroughDigest(s *flow.Step) string {
	if k := r.passthroughStep(s); k >= 0 {
		return r.steps[k].outputSHA
	}
	return ""
}

// passthroughStep is the index of the upstream step whose whole output is
// step s's args (`args: "{extract}"`), or -1.
func (r *run) passthroughStep(s *flow.Step) int {
	if !r.b.kinds[s.Index].takesArgs {
		return -1
	}
	p, ok := s.Args.Passthrough()
	if !ok || len(p) != 1 {
		return -1
	}
	for _, k := range s.RequireIdx {
		if r.f.Steps[k].ID == p[0].Key {
			return k
		}
	}
	return -1
}

// digestInput hashes what the step is about to send (args or prompt).
func (r *run) digestInput(s *flow.Step, in unitInput) (string, error) {
	v := any(in.args)
	if !r.b.kinds[s.Index].takesArgs {
		v = in.prompt
	}
	buf, err := value.AppendCanonical(r.buf[:0], v)
	r.buf = buf
	if err != nil {
		return "", err
	}
	return value.Digest(buf), nil
}

func (r *run) digestItems(items []unitInput) (string, error) {
	all := make([]any, len(items))
	for k, it := range items {
		if it.args != nil {
			all[k] = it.args
		} else {
			all[k] = it.prompt
		}
	}
	buf, err := value.AppendCanonical(r.buf[:0], all)
	r.buf = buf
	if err != nil {
		return "", err
	}
	return value.Digest(buf), nil
}

// failStatus is the status of a step that failed for good.
func (o *outcome) failStatus() trace.StepStatus {
	if fault.ClassOf(o.err) == fault.Policy {
		return trace.StepBlocked
	}
	return trace.StepFailed
}
