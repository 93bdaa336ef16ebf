package engine

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// callRecorder is a run seen as the invocation pipeline's Recorder: every
// gate decision is journaled, every call record goes to Config.OnCall, and
// a result discarded after a timeout is journaled too.
type callRecorder run

var _ invoke.Recorder = (*callRecorder)(nil)

// recorder is the Recorder of a call of a flow step (spec is its tool's;
// nil for a fallback's): the run, or nil when the run would do nothing
// with what the pipeline tells it — then the call is neither recorded nor
// timed. Each condition is one thing the methods below do; a new one
// belongs here too.
func (r *run) recorder(ctx context.Context, spec *tool.Spec) invoke.Recorder {
	if spec == nil ||
		r.d.on || // Starting, recordCall: call records of a durable run
		r.b.gated() || r.e.pipe.Gate != nil && r.e.pipe.Gate != safety.AllowAll || // GateDecided
		r.risk != nil || r.ev != nil || // the risk tier's and the gate's evidence
		safety.HasEffect(spec) || // recordEffect
		r.e.cfg.OnCall != nil {
		return (*callRecorder)(r)
	}
	if _, ok := ctx.Deadline(); ok {
		return (*callRecorder)(r) // a call given up at its deadline: Abandoned, Late
	}
	return nil
}

// GateDecided does nothing: the pipeline hands the decision to Called
// with the call's record (invoke.Record.Gate), which journals it there.
func (c *callRecorder) GateDecided(invoke.Position, *safety.Invocation, safety.Decision) {}

// Called hands rec to Config.OnCall. A call abandoned at its deadline keeps
// the run out of the engine's pool, since its tool may still report (Late);
// a Late record is journaled as long as the run has not settled.
func (c *callRecorder) Called(rec invoke.Record) {
	r := (*run)(c)
	if rec.Abandoned {
		r.abandoned.Store(true)
	}
	if rec.Outcome == invoke.Late {
		msg := fmt.Sprintf("tool %s returned %s after the call was given up at its deadline; the result was discarded", rec.Tool, rec.Duration.Round(1e6))
		if rec.Err != nil {
			msg = fmt.Sprintf("tool %s failed %s after the call was given up at its deadline; the failure was discarded: %v", rec.Tool, rec.Duration.Round(1e6), rec.Err)
		}
		if rec.At.ForEach {
			msg = fmt.Sprintf("item %d: %s", rec.At.Item, msg)
		}
		ev := trace.Event{Kind: trace.CallDiscarded, StepID: rec.At.StepID, PlanStep: rec.At.PlanStep, Tool: rec.Tool,
			Attempt: traceAttempt(&rec.At), Status: string(invoke.Late), DurationMS: trace.Millis(rec.Duration), Origin: trace.OriginTool, Error: msg}
		if rec.Err != nil {
			ev.ErrorClass = string(fault.ClassOf(rec.Err))
		}
		r.recordUnlessSettled(ev)
	}
	r.recordCall(&rec)
	r.noteOutput(&rec)
	if on := r.e.cfg.OnCall; on != nil {
		on(rec)
	}
}

// traceAttempt is the attempt events show for a call: the step's, or for a
// plan step the plan's number, as the executor's own events do.
func traceAttempt(at *invoke.Position) int {
	if at.PlanStep != "" {
		return at.Plan
	}
	return at.Attempt
}
