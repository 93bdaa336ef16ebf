package engine

import (
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// The effect graph: every call that reached a tool with an effect (read,
// write, external, destructive) — a tool step, a for_each item, a repeat
// round, a fallback, a plan step, an agent call, a compensation — has a
// call record (callrec.go) whose Effect says what it read, wrote or sent
// (the tool's resources rendered over the call) and the compensation that
// would take it back, beside where it was made, its key and where its args
// came from (journal.Call.EffectRecord is the graph's view of it). Calls
// of tools without an effect cost nothing.

// callSpec is the spec the call rec was made with: a tool step's bound
// spec (its tools: may declare it) or its fallback tool's, else the
// registered tool's; false when the tool is unknown.
func (r *run) callSpec(rec *invoke.Record) (tool.Spec, bool) {
	at := &rec.At
	if at.PlanStep == "" && at.Turn == 0 && at.Remedy == "" {
		if s := r.f.StepByID(at.StepID); s != nil && s.Type == flow.Tool {
			if !at.Fallback && r.b.tools[s.Index] != nil {
				return r.b.specs[s.Index], true
			}
			if t := r.b.fbTool[s.Index]; at.Fallback && t != nil {
				return t.Spec(), true
			}
		}
	}
	if at.Parent != "" && at.Turn > 0 && at.PlanStep == "" {
		// a call of a sub-agent's sub-run: its tools are the sub-agent's.
		if s := r.f.StepByID(at.StepID); s != nil && s.Type == flow.Agent && r.b.agents[s.Index] != nil {
			if sp, ok := r.b.agents[s.Index].SubSpec(rec.Tool); ok {
				return sp, true
			}
		}
	}
	t, ok := r.e.cfg.Tools.Lookup(rec.Tool)
	if !ok {
		return tool.Spec{}, false
	}
	return t.Spec(), true
}

// reachedTool reports whether the call of rec was handed to its tool, so
// its effect may have happened.
func reachedTool(rec *invoke.Record) bool {
	switch rec.Outcome {
	case invoke.OK, invoke.PremiseFailed, invoke.Failed, invoke.Panicked, invoke.InvalidOutput, invoke.TimedOut:
		return true
	case invoke.Cancelled:
		return rec.Abandoned
	}
	return false
}

// effectOf is the effect record of rec, a call of spec.
func effectOf(rec *invoke.Record, spec *tool.Spec) *journal.Effect {
	at := &rec.At
	e := &journal.Effect{StepID: at.StepID, Key: rec.Key, Round: at.Round, Fallback: at.Fallback, Attempt: at.Attempt,
		Plan: at.Plan, PlanStep: at.PlanStep, Turn: at.Turn, Call: at.Call, Remedy: at.Remedy, Tool: rec.Tool,
		Effect: string(spec.Effect), Reversibility: string(spec.Reversibility), Idempotent: spec.Idempotent, Tags: spec.Tags,
		Outcome: string(rec.Outcome), ArgsSHA: rec.ArgsDigest(), Provenance: safety.ProvenanceRecord(rec.Provenance)}
	if at.ForEach {
		item := at.Item
		e.Item = &item
	}
	if e.Provenance == nil && at.Turn > 0 {
		// an agent's call: the model wrote every argument.
		e.Provenance = []journal.ArgProvenance{{Pointer: "", Origins: []string{string(safety.OriginInferred)}}}
	}
	var out any
	if rec.Outcome.Returned() {
		out = rec.Output
		e.Compensation = safety.Compensation(spec, rec.Args, out)
	}
	safety.Touches(e, spec, rec.Args, out)
	return e
}
