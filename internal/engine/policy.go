package engine

import (
	"bytes"
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
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
// gate requires approval (gateDecide), the approval naming the rule and
// its reason and, for a for_each step, holding every item's args. It
// reports whether the step was parked.
func (r *run) gatePark(i int, j *job) bool {
	args, ok := r.d.approved[i]
	delete(r.d.approved, i)
	g := r.gateDecide(i, j, args, ok)
	if !g.park {
		return false
	}
	a := r.park(i, store.KindApproval, j)
	a.Message = g.message
	if j.step.ForEach != nil {
		a.Args = g.args
	}
	return true
}

// gateDecision is what gateDecide decided about a tool step's calls.
type gateDecision struct {
	// park: the step waits for a person's approval, message says why.
	park    bool
	message string
	// args are the calls an approval covers (gatedCalls), canonical JSON.
	args []byte
}

// gateDecide asks the gate about tool step i's call before it starts, with
// the args just rendered (j), and says whether the step parks for a person
// because the gate requires approval — as approval: required does, the
// message naming the rule and its reason. A for_each step is asked about
// each item's call, and parks once for all of those that need approval.
// A step a person approved (approved, with the args the approval recorded)
// runs, and the gate is told so (j.approved), when its args are the ones
// the approval recorded (a for_each step's: every item's, in order);
// otherwise it is asked about again. Only a tool step, not in a repeat
// loop, can wait like this; repeat rounds, fallbacks and plan steps get
// the pipeline's policy error. The local runner (gatePark) and a workflow
// engine (Engine.AskGate) both decide here.
func (r *run) gateDecide(i int, j *job, args []byte, approved bool) gateDecision {
	s := r.f.Steps[i]
	if s.Type != flow.Tool || s.Repeat != nil || j.renderErr != nil {
		j.approved = j.approved || approved
		return gateDecision{}
	}
	calls, _ := value.AppendCanonical(nil, gatedCalls(j))
	if approved {
		// the approval is for the exact calls it recorded: args rendered
		// differently now are asked about again.
		if len(args) == 0 || string(args) == "null" || bytes.Equal(args, calls) {
			j.approved = true
			return gateDecision{}
		}
		if s.ApprovalRequired {
			return gateDecision{park: true, args: calls,
				message: fmt.Sprintf("step %s wants to call tool %s with other args than those approved; approve to make this call", s.ID, s.Tool)}
		}
	}
	if !r.b.gated() && r.inv == nil {
		return gateDecision{}
	}
	attempt := r.steps[i].attempts + 1
	var first safety.Decision
	asked := 0
	for k, in := range j.items() {
		if j.each.errs != nil && j.each.errs[k] != nil {
			continue
		}
		if d, ok := r.gateAsks(i, attempt, in); ok {
			if asked == 0 {
				first = d
			}
			asked++
		}
	}
	if s.ForEach == nil {
		if d, ok := r.gateAsks(i, attempt, j.in); ok {
			first, asked = d, 1
		}
	}
	if asked == 0 {
		return gateDecision{}
	}
	if s.ForEach == nil {
		return gateDecision{park: true, args: calls,
			message: fmt.Sprintf("step %s wants to call tool %s, and the policy gate requires approval (rule %s: %s); approve to make this exact call, reject to fail the step",
				s.ID, s.Tool, first.Rule, first.Reason)}
	}
	return gateDecision{park: true, args: calls,
		message: fmt.Sprintf("step %s wants to call tool %s for each of its %d items (the args, in order), and the policy gate requires approval of %d of them (rule %s: %s); approve to make these exact calls, reject to fail the step",
			s.ID, s.Tool, len(j.items()), asked, first.Rule, first.Reason)}
}

// gateAsks asks the gate about one call of tool step i (in: its args, and
// its item) and reports the decision when it is require_approval, which
// it journals as the call's record (waiting); any other decision the
// pipeline makes again and reports.
func (r *run) gateAsks(i, attempt int, in unitInput) (safety.Decision, bool) {
	s := r.f.Steps[i]
	inv := safety.Invocation{RunID: r.id, StepID: s.ID, Attempt: attempt, Tool: r.b.specs[i], Args: in.args, Provenance: r.b.provenance(i, false)}
	if r.ev != nil {
		inv.Verified = r.ev.Verify(in.args, inv.Provenance)
	}
	gate := r.b.gate
	// a resource a remediation invalidated: the rule invalidated-resource
	// parks the step as the gate's require_approval does (invoke.Invalid).
	c, err := r.inv.Check(r.ctx, &inv.Tool, in.args, inv.Provenance)
	if err != nil {
		return safety.Decision{}, false // the pipeline meets it again, and fails the call
	}
	if c.Flagged {
		inv.Provenance, gate = c.Provenance, safety.Join(invoke.InvalidGate(&c), gate)
	}
	if gate == nil || gate == safety.AllowAll {
		return safety.Decision{Verdict: safety.Allow}, false
	}
	d, err := gate.Check(r.ctx, &inv)
	if err != nil || d.Verdict != safety.RequireApproval {
		return d, false
	}
	rec := invoke.Record{At: invoke.Position{RunID: r.id, StepID: s.ID, ForEach: in.item >= 0, Item: in.item, Attempt: attempt},
		Tool: s.Tool, Args: in.args, Provenance: inv.Provenance, Outcome: invoke.AwaitingApproval, Gate: &invoke.Gated{Decision: d}}
	r.inv.Touched(&rec, &inv.Tool, c.Hits, false)
	if len(inv.Verified) > 0 {
		b := safety.BasisOf(&inv)
		rec.Gate.Basis = &b
	}
	rec.Key = rec.At.Key()
	r.recordCallEvent(r.callOf(&rec, store.CallWaiting, nil, false), false)
	return d, true
}

// gatedCalls is what an approval of tool step j covers: its args, or a
// for_each step's list of its items' args.
func gatedCalls(j *job) any {
	if j.step.ForEach == nil {
		return j.in.args
	}
	list := make([]any, len(j.items()))
	for k, in := range j.items() {
		list[k] = in.args
	}
	return list
}
