package engine

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/flow"
)

// GateAsk is what the policy gate decided about a tool step's calls before
// the step starts (AskGate).
type GateAsk struct {
	// Park: the step waits for a person's approval (store.KindApproval);
	// Message says why, naming the gate's rule and reason.
	Park    bool
	Message string
	// Args are the calls an approval covers, canonical JSON: the step's
	// args, or a for_each step's list of its items' args, in order. The
	// driver keeps them and hands them back when the person approved.
	Args []byte
	// Approved: the step runs with a person's approval, which the gate is
	// told (AttemptRequest.Approved).
	Approved bool
}

// AskGate makes the decision the runner makes before tool step req.Step of
// a durable run starts (gateDecide, which gatePark parks on): it renders
// the step's args (each item's, for a for_each step) against what s
// settled and asks the gate about each call, with its provenance. When
// req.Approved, a person approved the calls approvedArgs records (the
// Args of the GateAsk that parked the step; nil for an approval: required
// step): the step runs approved when its args are those, and is asked
// about again otherwise. Any other step, and a step the gate lets run,
// does not park. req.Attempt is the attempt the step starts at.
func (e *Engine) AskGate(ctx context.Context, f *flow.Flow, s *Settled, req AttemptRequest, approvedArgs []byte) (GateAsk, error) {
	if req.Step < 0 || req.Step >= len(f.Steps) {
		return GateAsk{}, fmt.Errorf("engine: flow %s has no step %d", f.Name, req.Step)
	}
	r, err := e.runAt(ctx, f, req.RunID, s)
	if err != nil {
		return GateAsk{}, err
	}
	defer r.end()
	defer r.reportTier(req.OnTier)
	r.steps[req.Step].attempts = max(req.Attempt, 1) - 1 // gateDecide asks about the next
	j := r.prepare(req.Step)
	r.assessStep(req.Step, j) // the runner asks the gate after it too
	g := r.gateDecide(req.Step, j, approvedArgs, req.Approved)
	return GateAsk{Park: g.park, Message: g.message, Args: g.args, Approved: j.approved}, nil
}

// Gates reports whether runs of f have a policy gate worth asking before
// a tool step starts (AskGate would ask it): the engine's gate, joined
// with the flow's policy; or, on an engine with a store, the registry of
// invalidated resources, when a tool step's tool declares resources (a
// call that touches one waits for a person).
func (e *Engine) Gates(f *flow.Flow) (bool, error) {
	b, err := e.bind(f)
	if err != nil {
		return false, err
	}
	if b.gated() {
		return true, nil
	}
	if e.durable {
		for i, s := range f.Steps {
			if s.Type == flow.Tool && len(b.specs[i].Resources) > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}
