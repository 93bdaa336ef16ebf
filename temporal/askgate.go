package temporal

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/store"
)

// The policy gate before a tool step (engine.AskGate): as a local durable
// run does (the runner's gatePark), a run asks the gate about a tool
// step's call (a for_each step's items' calls) before the step starts, in
// an activity of its own ("ask:STEP"), and parks the step for a person
// when the gate requires approval. Approved, the step runs the calls the
// approval recorded, approved (asked again if its args are others);
// rejected, it fails.

// opAsk asks the policy gate about a tool step's calls before it starts.
const opAsk = "ask"

// changeGatePark: a tool step asks the gate before it starts and parks
// for approval (before, the gate's require_approval failed the attempt as
// blocked by policy).
const changeGatePark = "rein-gate-park"

// gateAsked is an opAsk's answer (engine.GateAsk).
type gateAsked struct {
	Park     bool            `json:"park,omitempty"`
	Message  string          `json:"message,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	Approved bool            `json:"approved,omitempty"`
}

// asksGate reports whether step i asks the gate before it starts: a tool
// step not in a repeat loop, of a run that took changeGatePark, whose flow
// has a gate worth asking (decided once per run, and recorded, so that a
// replay takes the same way whatever the worker's configuration).
func (r *wrun) asksGate(ctx workflow.Context, i int) bool {
	s := r.f.Steps[i]
	if s.Type != flow.Tool || s.Repeat != nil || version(ctx, changeGatePark) == workflow.DefaultVersion {
		return false
	}
	if r.gated == nil {
		var gated bool
		err := workflow.SideEffect(ctx, func(workflow.Context) any {
			ok, err := r.e.e.Gates(r.f)
			return err == nil && ok
		}).Get(&gated)
		if err != nil {
			gated = true // the activity asks, and says
		}
		r.gated = &gated
	}
	return *r.gated
}

// gatePark asks the gate about step i's calls before its attempt first
// starts (asksGate), approved saying a person approved them: the outcome
// that parks the step for approval (or fails it, when the gate could not
// be asked), or nil when the step runs — approved, when the person's
// approval covers its calls.
func (r *wrun) gatePark(ctx workflow.Context, i, first int, approved *bool, v view) *outcome {
	args := r.gateArgs[i] // the calls a person approved, recorded when it parked
	delete(r.gateArgs, i)
	if args != nil {
		delete(r.errs, r.f.Steps[i].ID) // the gate's message, answered
	}
	if !r.asksGate(ctx, i) {
		return nil
	}
	c := call{i: i, op: opAsk, item: -1, attempt: first, approved: *approved, output: args}
	res, f := r.exec(ctx, c, v)
	for ; f != nil && (f.lost || f.notRun) && c.rerun < lostReruns; res, f = r.exec(ctx, c, v) {
		c.rerun++ // asking the gate has no effect: ask again
	}
	switch {
	case f != nil:
		o := r.recover(ctx, i, first, &f.failure, v)
		return &o
	case res.Gate == nil:
		return nil
	case res.Gate.Park:
		return &outcome{i: i, attempts: first - 1, park: store.KindApproval, err: &failure{Message: res.Gate.Message}, gateArgs: res.Gate.Args}
	}
	*approved = res.Gate.Approved
	return nil
}
