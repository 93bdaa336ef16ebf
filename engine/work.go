package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// outcome is what a worker reports for one step.
type outcome struct {
	index    int
	status   trace.StepStatus
	output   any
	attempts int
	// err is a failure the step could not absorb: the run fails.
	err error
	// lastErr is a failure that on_error absorbed (skip or fallback).
	lastErr   error
	origin    trace.Origin
	outputSHA string
	// outputJSON: the canonical JSON of output, for a durable run's journal.
	outputJSON []byte
	preview    string
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// work executes one step: its body (plain, for_each or repeat), then the
// output checks, then on_error. It never panics.
func (r *run) work(j *job) (o *outcome) {
	s := j.step
	o = &j.out
	o.index = j.index
	defer func() {
		if p := recover(); p != nil {
			o.err = fault.Errorf(fault.Business, "engine bug: step %s panicked: %v\n%s", s.ID, p, debug.Stack())
			o.origin = trace.OriginEngine
		}
	}()
	var out any
	var err error
	if j.renderErr != nil {
		err, o.origin = j.renderErr, trace.OriginEngine
	} else {
		switch {
		case s.ForEach != nil:
			out, err = r.runItems(j, o)
			if err == nil && s.Gate != nil {
				err = r.checkGate(j, out)
				if err != nil {
					o.origin = trace.OriginEngine
				}
			}
		case s.Repeat != nil:
			out, err = r.runRepeat(j, o)
		default:
			out, err = r.runUnit(r.ctx, j, j.in, o)
		}
	}
	if err == nil {
		o.status = trace.StepSucceeded
		if err = r.finishOutput(s, out, o); err == nil {
			return o
		}
		o.origin = trace.OriginTool
		if s.Type == flow.LLM {
			o.origin = trace.OriginModel
		}
	}
	r.applyOnError(j, err, o)
	return o
}

// finishOutput enforces max_output_bytes and digests the output.
func (r *run) finishOutput(s *flow.Step, out any, o *outcome) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf, err := value.AppendCanonical((*bp)[:0], out)
	*bp = buf
	if err != nil {
		return fault.BusinessErr(fmt.Errorf("output is not JSON: %w", err))
	}
	if int64(len(buf)) > s.MaxOutputBytes {
		return fault.BusinessErr(fmt.Errorf("output is %d bytes, more than max_output_bytes %d", len(buf), s.MaxOutputBytes))
	}
	o.output = out
	o.outputSHA = value.Digest(buf)
	o.outputJSON = nil
	if r.d.on {
		o.outputJSON = bytes.Clone(buf)
	}
	o.preview = value.Preview(buf, trace.PreviewBytes)
	return nil
}

// applyOnError decides what a final failure means for the step.
func (r *run) applyOnError(j *job, err error, o *outcome) {
	s := j.step
	class := fault.ClassOf(err)
	if class == fault.Budget || class == fault.Cancelled || class == fault.Policy || r.ctx.Err() != nil {
		o.err = r.ctxCause(err)
		return
	}
	switch s.OnError {
	case flow.Skip:
		o.lastErr, o.status = err, trace.StepDefaulted
		if ferr := r.finishOutput(s, s.FallbackValue, o); ferr != nil {
			o.err = ferr
		}
		return
	case flow.Fallback:
		out, ferr := r.runFallback(j)
		if ferr != nil {
			o.err = fmt.Errorf("%w (after the step failed: %v)", ferr, err)
			if fault.ClassOf(ferr) != fault.Budget && fault.ClassOf(ferr) != fault.Cancelled {
				o.err = fault.New(fault.ClassOf(ferr), o.err)
			}
			return
		}
		o.lastErr, o.status = err, trace.StepFellBack
		if ferr := r.finishOutput(s, out, o); ferr != nil {
			o.err = ferr
		}
		return
	}
	o.err = err
}

// runFallback runs the step's fallback: a tool, a model or a value, or the
// fallback_value.
func (r *run) runFallback(j *job) (any, error) {
	s := j.step
	fb := s.Fallback
	switch {
	case fb == nil:
		return s.FallbackValue, nil
	case fb.HasValue:
		return fb.Value, nil
	case fb.Tool != "":
		in := unitInput{item: -1, args: j.in.args}
		if fb.Args != nil {
			a, err := fb.Args.Render(j.scope)
			if err != nil {
				return nil, fault.BusinessErr(fmt.Errorf("fallback.args: %w", err))
			}
			in.args = a
		}
		out, _, err := r.callTool(r.ctx, j, r.b.fbTool[j.index], in, 1, true)
		return out, err
	case fb.Model != "":
		in := j.in
		if fb.Prompt != nil {
			p, err := fb.Prompt.RenderString(j.scope)
			if err != nil {
				return nil, fault.BusinessErr(fmt.Errorf("fallback.prompt_template: %w", err))
			}
			in.prompt = p
		}
		out, err := r.callLLM(r.ctx, j, r.b.fbMdl[j.index], fb.Model, in, 1)
		if err != nil {
			return nil, fmt.Errorf("fallback model %s: %w", fb.Model, err)
		}
		return out, nil
	}
	return nil, errors.New("fallback: nothing to run")
}

// runItems runs a for_each step's items with bounded concurrency and
// collects their outputs in order. The first item that fails for good
// cancels the others.
func (r *run) runItems(j *job, o *outcome) (any, error) {
	out := make([]any, len(j.items))
	if len(j.items) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	sem := make(chan struct{}, j.step.ForEach.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	firstOrigin := trace.Origin("")
	for k := range j.items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			defer func() { <-sem }()
			sub := &outcome{}
			v, err := r.runUnit(ctx, j, j.items[k], sub)
			mu.Lock()
			defer mu.Unlock()
			o.attempts = max(o.attempts, sub.attempts)
			if err != nil {
				if firstErr == nil {
					firstErr, firstOrigin = fmt.Errorf("item %d: %w", k, err), sub.origin
					cancel(firstErr)
				}
				return
			}
			out[k] = v
		}(k)
	}
	wg.Wait()
	if firstErr != nil {
		o.origin = firstOrigin
		return nil, firstErr
	}
	return out, nil
}

// runRepeat runs rounds until repeat.until holds or max rounds ran; the
// output is the last round's.
func (r *run) runRepeat(j *job, o *outcome) (any, error) {
	s := j.step
	scope := j.scope
	var last any
	for round := 0; round < s.Repeat.Max; round++ {
		scope["previous"], scope["iteration"] = last, float64(round)
		in, err := renderInput(s, scope, -1, nil)
		in.round = round + 1
		if err != nil {
			o.origin = trace.OriginEngine
			return nil, err
		}
		if s.Type == flow.Tool && s.Args == nil {
			in.args = map[string]any{"previous": last, "iteration": float64(round)}
		}
		sub := &outcome{}
		out, err := r.runUnit(r.ctx, j, in, sub)
		o.attempts = max(o.attempts, sub.attempts)
		if err != nil {
			o.origin = sub.origin
			return nil, err
		}
		last = out
		scope["output"], scope[s.ID] = out, out
		done, err := s.Repeat.Until.Eval(scope)
		if err != nil {
			o.origin = trace.OriginEngine
			return nil, fault.BusinessErr(fmt.Errorf("repeat.until %q: %w", s.Repeat.Until.Source(), err))
		}
		if done {
			break
		}
	}
	return last, nil
}

// checkGate evaluates the step's gate on an output.
func (r *run) checkGate(j *job, out any) error {
	s := j.step
	scope := j.scope
	scope["output"], scope[s.ID] = out, out
	ok, err := s.Gate.Eval(scope)
	if err != nil {
		return fault.BusinessErr(fmt.Errorf("gate %q could not be evaluated: %w", s.Gate.Source(), err))
	}
	if !ok {
		return fault.BusinessErr(fmt.Errorf("gate %q does not hold on the output", s.Gate.Source()))
	}
	return nil
}
