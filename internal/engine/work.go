package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/fanout"
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
	// lastErr is a failure that on_error absorbed (skip or fallback), or
	// the one it escalated.
	lastErr error
	// park, when set, parks the step for people instead of settling it.
	park      *parking
	origin    trace.Origin
	outputSHA string
	// outputSize is the length of output's canonical JSON (0: unknown).
	outputSize int64
	// outputJSON: the canonical JSON of output, for a durable run's journal.
	outputJSON []byte
	preview    string
}

// parking is why a step's outcome parks it: on_error escalate (escalated,
// with escArgs the canonical args of the failed tool call, for the
// approval), or an agent step's calls waiting for people (agentWait).
type parking struct {
	escalated bool
	// premise: the escalation is of a failed premise: the whole run
	// pauses (store.KindPremise, sched.Machine.Held).
	premise   bool
	escArgs   []byte
	agentWait *agentWait
	// held: a failed premise stopped the step before its remaining units
	// (errHeld); it stays running.
	held bool
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
	if fb := r.fallbackTaken(j.index); fb != nil && s.ForEach == nil && j.renderErr == nil {
		return r.fallBackAgain(j, fb, o)
	}
	if j.renderErr != nil {
		err, o.origin = j.renderErr, trace.OriginEngine
	} else {
		switch {
		case s.ForEach != nil:
			out, err = r.runItems(j, o)
			if err == nil && s.Gate != nil {
				ectx, cancel := r.evalCtx(s)
				err = r.checkGate(ectx, j, out)
				cancel()
				if err != nil {
					o.origin = trace.OriginEngine
				}
			}
			if err == nil && s.Premise != nil {
				ectx, cancel := r.evalCtx(s)
				err = r.checkPremise(ectx, j, out)
				cancel()
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
	if errors.Is(err, errHeld) {
		o.park = &parking{held: true}
		return o
	}
	if err == nil {
		o.status = trace.StepSucceeded
		if o.lastErr != nil {
			// for_each items that on_error absorbed, one by one.
			o.status = absorbedStatus(s.OnError)
		}
		if err = r.finishOutput(s, out, o); err == nil {
			return o
		}
		o.origin = r.b.kinds[j.index].outputOrigin
	}
	var w *agentWait
	if errors.As(err, &w) {
		o.park = &parking{agentWait: w}
		return o
	}
	r.applyOnError(j, err, o)
	return o
}

// fallBackAgain settles step j, resumed after its call had failed for good
// and its fallback had been made (fb, from its call records): with the
// fallback's output when it succeeded (or its check found it happened),
// or by making the fallback again, with the same key, when it did not
// happen and may be made again. The step's own call is not made again.
func (r *run) fallBackAgain(j *job, fb *fallbackState, o *outcome) *outcome {
	s := j.step
	why := fault.New(fault.Business, fmt.Errorf("its call failed before the process stopped; its fallback (idempotency key %s) was made", fb.call.Key))
	o.attempts = max(r.d.firstAttempt[j.index], 1)
	out := fb.out
	if !fb.done {
		v, err := r.runFallback(r.ctx, j, j.in, j.scope)
		if err != nil {
			o.err, o.origin = fallbackFailed(err, why, "step"), trace.OriginTool
			return o
		}
		out = v
	}
	o.lastErr, o.status = why, trace.StepFellBack
	if err := r.finishOutput(s, out, o); err != nil {
		o.err, o.origin = err, trace.OriginEngine
	}
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
	o.outputSize = int64(len(buf))
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
	if pe := r.premiseOf(j, err); pe != nil && r.ctx.Err() == nil {
		// the run stops first, whatever on_error says: the whole run pauses.
		r.hold()
		r.escalate(j, fault.BusinessErr(pe), o)
		if o.park != nil {
			o.park.premise = true
		}
		return
	}
	switch sched.RecoverStep(s, fault.ClassOf(err), r.ctx.Err() != nil) {
	case sched.StopWithRun:
		o.err = r.ctxCause(err)
		return
	case sched.EscalateStep:
		r.escalate(j, err, o)
		return
	case sched.DefaultStep:
		o.lastErr, o.status = err, trace.StepDefaulted
		if ferr := r.finishOutput(s, s.FallbackValue, o); ferr != nil {
			o.err = ferr
		}
		return
	case sched.FallBack:
		out, ferr := r.runFallback(r.ctx, j, j.in, j.scope)
		if ferr != nil {
			o.err = fallbackFailed(ferr, err, "step")
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

// escalate hands a step's final failure to a person (on_error: escalate):
// the scheduler parks the step (settle). Without a durable store nobody
// could answer, so the step fails, saying so.
func (r *run) escalate(j *job, err error, o *outcome) {
	if !r.d.on {
		o.err = fault.New(fault.ClassOf(err), fmt.Errorf("%w (on_error: escalate waits for a person, which needs a durable store: Config.Store)", err))
		return
	}
	o.lastErr, o.park = err, &parking{escalated: true}
	if r.b.kinds[j.index].takesArgs && j.step.ForEach == nil {
		o.park.escArgs, _ = value.AppendCanonical(nil, j.in.args)
	}
}

// absorbedStatus is the status of a step whose failure on_error absorbed.
func absorbedStatus(p flow.OnError) trace.StepStatus {
	if p == flow.Skip {
		return trace.StepDefaulted
	}
	return trace.StepFellBack
}

// fallbackFailed is the error of a fallback that failed after what (the
// step, or one of its items) failed with err.
func fallbackFailed(ferr, err error, what string) error {
	e := fmt.Errorf("%w (after the %s failed: %v)", ferr, what, err) //nolint:errorlint // the fallback's error decides the class; the first failure is text
	if c := fault.ClassOf(ferr); c != fault.Budget && c != fault.Cancelled {
		return fault.New(c, e)
	}
	return e
}

// runFallback runs the step's fallback for one execution (the step, or one
// for_each item): a tool, a model or a value, or the fallback_value. in is
// the failed execution's input: a fallback tool without args gets its args,
// a fallback model without a prompt its prompt. scope is what fallback.args
// and fallback.prompt_template render against.
func (r *run) runFallback(ctx context.Context, j *job, in unitInput, scope map[string]any) (any, error) {
	s := j.step
	fb := s.Fallback
	switch {
	case fb == nil:
		return s.FallbackValue, nil
	case fb.HasValue:
		return fb.Value, nil
	case fb.Tool != "":
		if fb.Args != nil {
			a, err := fb.Args.RenderBounded(scope, &template.Bounds{Ctx: r.ctx, MaxBytes: s.MaxInputBytes})
			if err != nil {
				return nil, renderFailure(r.ctx, s, "fallback.args", err)
			}
			in.args = a
		}
		in.round = 0
		out, _, err := r.callTool(ctx, j, r.b.fbTool[j.index], in, r.fallbackAttempt(j.index), true)
		return out, err
	case fb.Model != "":
		if fb.Prompt != nil {
			p, err := fb.Prompt.RenderStringBounded(scope, &template.Bounds{Ctx: r.ctx, MaxBytes: s.MaxInputBytes})
			if err != nil {
				return nil, renderFailure(r.ctx, s, "fallback.prompt_template", err)
			}
			in.prompt = p
		}
		out, err := r.callLLM(ctx, j, r.b.fbMdl[j.index], fb.Model, in, r.fallbackAttempt(j.index), true)
		if err != nil {
			return nil, fmt.Errorf("fallback model %s: %w", fb.Model, err)
		}
		return out, nil
	}
	return nil, errors.New("fallback: nothing to run")
}

// unitResult is what one execution (a for_each item, its fallback, a
// repeat round) came to.
type unitResult struct {
	v        any
	err      error
	origin   trace.Origin
	attempts int
}

// runItems carries out a for_each step's items as the machine decides
// (sched.Items: index order, at most for_each.concurrency at once, the
// step's on_error per item) and collects their outputs in order. With
// on_error skip or fallback, an item that fails for good gets
// fallback_value or its fallback's output in its slot (o.lastErr keeps the
// lowest such item's failure); otherwise, or when its fallback fails too,
// the first failure cancels the items in flight and the step fails.
func (r *run) runItems(j *job, o *outcome) (any, error) {
	items := j.items()
	out := make([]any, len(items))
	if len(items) == 0 {
		return out, nil
	}
	var m sched.Items
	m.Reset(j.step, len(items))
	if done := r.itemsDone(j.index); done != nil { // settled before a resume: not run again
		for k := range items {
			if v, ok := done[k]; ok {
				out[k] = v
				m.Skip(k)
			}
		}
	}
	var (
		failErr       error // the first failure, in settlement order
		failOrigin    trace.Origin
		itemErrs      []error // each failed item's error, for its fallback's
		itemOrigins   []trace.Origin
		firstAbsorbed = len(items)
	)
	absorb := func(k int, err error, origin trace.Origin) {
		if k < firstAbsorbed { // the lowest item's, whatever order they settled in
			o.lastErr, o.origin, firstAbsorbed = fmt.Errorf("item %d: %w", k, err), origin, k
		}
	}
	call := func(ctx context.Context, u fan.Unit) unitResult {
		k := u.Index
		if u.Op == fan.Recover {
			return r.itemFallback(ctx, j, k)
		}
		var res unitResult
		if j.each.errs != nil {
			res.err = j.each.errs[k]
		}
		if res.err == nil {
			var sub outcome
			res.v, res.err = r.runUnit(ctx, j, items[k], &sub)
			res.origin, res.attempts = sub.origin, sub.attempts
		}
		return res
	}
	settle := func(u fan.Unit, res unitResult) error {
		k := u.Index
		o.attempts = max(o.attempts, res.attempts)
		err := res.err
		if err != nil && u.Op == fan.Recover {
			err = fallbackFailed(err, itemErrs[k], "item")
		}
		verdict := m.Settle(u, res.err != nil, fault.ClassOf(res.err), r.ctx.Err() != nil)
		if res.err != nil && PremiseFailed(res.err) {
			verdict = sched.ItemFailed // a failed premise is never absorbed: the run pauses
		}
		switch verdict {
		case sched.ItemDone:
			out[k] = res.v
			if u.Op == fan.Recover {
				absorb(k, itemErrs[k], itemOrigins[k])
			}
		case sched.ItemDefaulted:
			out[k] = j.step.FallbackValue
			absorb(k, err, res.origin)
		case sched.ItemFallingBack:
			if itemErrs == nil {
				itemErrs, itemOrigins = make([]error, len(items)), make([]trace.Origin, len(items))
			}
			itemErrs[k], itemOrigins[k] = err, res.origin
		case sched.ItemFailed:
			if failErr == nil {
				failErr, failOrigin = fmt.Errorf("item %d: %w", k, err), res.origin
				return failErr // cancels the items in flight
			}
		}
		return nil
	}
	held := r.heldFlag(j.index)
	_ = fanout.Run(r.ctx, fanout.Held[fan.Unit]{Source: &m, Held: r.heldFunc(j.index)}, call, settle) // settle keeps its error in failErr
	if failErr != nil {
		o.origin = failOrigin
		return nil, failErr
	}
	if held != nil && held.Load() && !m.Done() {
		return nil, errHeld // a failed premise stopped the items left
	}
	if err := r.ctx.Err(); err != nil && !m.Done() {
		// the run stopped before every item ran
		o.origin = trace.OriginEngine
		return nil, r.ctxCause(err)
	}
	return out, nil
}

// itemFallback runs for_each item k's fallback (on_error: fallback), its
// scope the step's with the item's item and index.
func (r *run) itemFallback(ctx context.Context, j *job, k int) unitResult {
	var scope map[string]any
	if j.scope != nil {
		scope = maps.Clone(j.scope)
		scope["item"], scope["index"] = j.each.values[k], float64(k)
	}
	v, err := r.runFallback(ctx, j, j.each.inputs[k], scope)
	return unitResult{v: v, err: err}
}

// runRepeat carries out a repeat step's rounds as the machine decides
// (sched.Rounds: one at a time, until repeat.until holds or max rounds
// ran, a failed round fails the step); the output is the last round's.
func (r *run) runRepeat(j *job, o *outcome) (any, error) {
	s := j.step
	scope := j.scope
	var (
		m     sched.Rounds
		last  any
		over  bool // until held, or max rounds ran
		stop  error
		where trace.Origin
	)
	m.Reset(s)
	done := r.roundsDone(j.index) // settled before a resume: not made again
	call := func(ctx context.Context, u fan.Unit) unitResult {
		round := u.Index
		RoundScope(scope, round, last)
		if round < len(done) {
			return unitResult{v: done[round]}
		}
		in, err := renderInput(ctx, r.b.kinds[j.index], s, scope, -1, nil, s.MaxInputBytes)
		in.round = round + 1
		if err != nil {
			return unitResult{err: err, origin: trace.OriginEngine}
		}
		if r.b.kinds[j.index].takesArgs && s.Args == nil {
			in.args = map[string]any{"previous": last, "iteration": float64(round)}
		}
		var sub outcome
		v, err := r.runUnit(ctx, j, in, &sub)
		return unitResult{v: v, err: err, origin: sub.origin, attempts: sub.attempts}
	}
	settle := func(u fan.Unit, res unitResult) error {
		o.attempts = max(o.attempts, res.attempts)
		if res.err == nil {
			last = res.v
			SettleRound(scope, s, res.v)
		} else {
			stop, where = res.err, res.origin
		}
		ectx, cancel := r.evalCtx(s)
		defer cancel()
		done, err := m.Settle(ectx, u.Index, res.err != nil, scope)
		if err != nil {
			stop, where = UntilFailure(ectx, s, err), trace.OriginEngine
		}
		over = done
		return nil
	}
	held := r.heldFlag(j.index)
	_ = fanout.Run(r.ctx, fanout.Held[fan.Unit]{Source: &m, Held: r.heldFunc(j.index)}, call, settle) // settle never fails: stop says why the rounds ended
	if stop == nil && !over && r.ctx.Err() == nil && held != nil && held.Load() {
		return nil, errHeld // a failed premise stopped the rounds left
	}
	if stop == nil && !over && r.ctx.Err() != nil {
		stop, where = r.ctxCause(r.ctx.Err()), trace.OriginEngine // the run stopped between rounds
	}
	if stop != nil {
		o.origin = where
		return nil, stop
	}
	return last, nil
}

// roundInput renders the input of repeat step j's round (from 0) as
// runRepeat does, after the round whose output was last (settled: a round
// before it settled, so the scope holds its output as output and as the
// step's id).
func (r *run) roundInput(ctx context.Context, j *job, round int, last any, settled bool) (unitInput, error) {
	s := j.step
	scope := j.scope
	RoundScope(scope, round, last)
	if settled {
		SettleRound(scope, s, last)
	}
	in, err := renderInput(ctx, r.b.kinds[j.index], s, scope, -1, nil, s.MaxInputBytes)
	in.round = round + 1
	if err != nil {
		return in, err
	}
	if r.b.kinds[j.index].takesArgs && s.Args == nil {
		in.args = map[string]any{"previous": last, "iteration": float64(round)}
	}
	return in, nil
}

// RoundScope sets in scope (a repeat step's, Scope's) what round (from 0)
// reads: previous, the output of the round before it (nil for the first),
// and iteration, its number. The runner and a workflow driver both render
// a round's input and evaluate repeat.until on it.
func RoundScope(scope map[string]any, round int, previous any) {
	scope["previous"], scope["iteration"] = previous, float64(round)
}

// SettleRound sets in scope what repeat.until reads once a round of step s
// settled with out: output, and the step's id.
func SettleRound(scope map[string]any, s *flow.Step, out any) {
	scope["output"], scope[s.ID] = out, out
}

// UntilFailure is the step's failure when its repeat.until, evaluated
// under ctx, gave err (sched.Rounds.Settle's error).
func UntilFailure(ctx context.Context, s *flow.Step, err error) error {
	return renderFailure(ctx, s, fmt.Sprintf("repeat.until %q", s.Repeat.Until.Source()), err)
}

// checkGate evaluates the step's gate on an output, under ctx (the
// attempt's, or evalCtx's).
func (r *run) checkGate(ctx context.Context, j *job, out any) error {
	s := j.step
	scope := j.scope
	scope["output"], scope[s.ID] = out, out
	ok, err := s.Gate.EvalContext(ctx, scope)
	if err != nil {
		return renderFailure(ctx, s, fmt.Sprintf("gate %q could not be evaluated", s.Gate.Source()), err)
	}
	if !ok {
		return fault.BusinessErr(fmt.Errorf("gate %q does not hold on the output", s.Gate.Source()))
	}
	return nil
}
