package engine

import (
	"bytes"
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// gated reports whether the flow's runs have a gate worth asking.
func (b *bound) gated() bool {
	return b.gate != nil && b.gate != safety.AllowAll
}

// bindGate sets the flow's gate — the engine's, joined with the flow's
// own policy: rules, inside the risk tiers' controls (bindRisk) — and
// works out where the args of every tool step (and fallback tool) come
// from (flow.ArgProvenance), once per flow: the gate sees it, and the
// effect graph records it.
func (e *Engine) bindGate(f *flow.Flow, b *bound, bb *binder) {
	b.gate = e.cfg.Gate
	if f.Policy != nil {
		b.gate = safety.Join(e.cfg.Gate, f.Policy.Policy())
	}
	b.gate, b.tiers = e.bindRisk(f, b.gate, bb)
	b.pipe = &e.pipe
	if b.gated() { // then b.gate wraps the engine's (safety.Controls)
		b.pipe = &invoke.Pipeline{Gate: b.gate, Now: e.cfg.Clock.Now}
	}
	spec := func(name string) (tool.Spec, bool) {
		if t, ok := e.cfg.Tools.Lookup(name); ok {
			return t.Spec(), true
		}
		return tool.Spec{}, false
	}
	b.prov, b.fbProv = make([]safety.Provenance, len(f.Steps)), make([]safety.Provenance, len(f.Steps))
	b.evRef = make([]string, len(f.Steps))
	for i, s := range f.Steps {
		b.evRef[i] = "step " + s.ID
		if s.Type == flow.Tool {
			b.prov[i] = flow.ArgProvenance(f, s, false, spec)
		}
		if s.Fallback != nil && s.Fallback.Tool != "" {
			b.fbProv[i] = flow.ArgProvenance(f, s, true, spec)
		}
	}
}

// provenance is what the gate is told about the args of step i's call.
func (b *bound) provenance(i int, fallback bool) safety.Provenance {
	if fallback {
		if b.fbProv != nil {
			return b.fbProv[i]
		}
		return nil
	}
	if b.prov != nil {
		return b.prov[i]
	}
	return nil
}

// gatePark asks the gate about tool step i's call before it starts, with
// the args just rendered (j), and parks the step for a person when the
// gate requires approval — as approval: required does, the message
// naming the rule and its reason. A step a person approved runs, and the
// gate is told so (job.approved), when its args are the ones the approval
// recorded; otherwise it is asked about again. Only a plain tool
// step of a durable run can wait like this; for_each items, repeat
// rounds, fallbacks and plan steps get the pipeline's policy error. It
// reports whether the step was parked.
func (r *run) gatePark(i int, j *job) bool {
	s := r.f.Steps[i]
	plain := s.Type == flow.Tool && s.ForEach == nil && s.Repeat == nil && j.renderErr == nil
	if args, ok := r.d.approved[i]; ok {
		delete(r.d.approved, i)
		// the approval is for the exact call it recorded: args rendered
		// differently now are asked about again.
		if !plain || len(args) == 0 || sameArgs(args, j.in.args) {
			j.approved = true
			return false
		}
		if s.ApprovalRequired {
			a := r.park(i, store.KindApproval, j)
			a.Message = fmt.Sprintf("step %s wants to call tool %s with other args than those approved; approve to make this call", s.ID, s.Tool)
			return true
		}
	}
	if !r.b.gated() || !plain {
		return false
	}
	attempt := r.steps[i].attempts + 1
	inv := safety.Invocation{RunID: r.id, StepID: s.ID, Attempt: attempt, Tool: r.b.specs[i], Args: j.in.args, Provenance: r.b.provenance(i, false)}
	if r.ev != nil {
		inv.Verified = r.ev.Verify(j.in.args, inv.Provenance)
	}
	d, err := r.b.gate.Check(r.ctx, &inv)
	if err != nil || d.Verdict != safety.RequireApproval {
		return false // the pipeline decides again and reports it
	}
	(*callRecorder)(r).GateDecided(invoke.Position{RunID: r.id, StepID: s.ID, Attempt: attempt}, &inv, d)
	a := r.park(i, store.KindApproval, j)
	a.Message = fmt.Sprintf("step %s wants to call tool %s, and the policy gate requires approval (rule %s: %s); approve to make this exact call, reject to fail the step",
		s.ID, s.Tool, d.Rule, d.Reason)
	return true
}

// sameArgs reports whether args encode canonically to recorded.
func sameArgs(recorded []byte, args any) bool {
	b, err := value.AppendCanonical(nil, args)
	return err == nil && bytes.Equal(b, recorded)
}
