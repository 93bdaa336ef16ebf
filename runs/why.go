package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// WhyView says where each argument of a tool step's call came from: the
// provenance the policy gate sees, worked out from the run's pinned flow.
type WhyView struct {
	RunID  string `json:"run_id"`
	StepID string `json:"step_id"`
	Tool   string `json:"tool"`
	// Args are the step's arguments that are not text of the flow, by
	// JSON pointer; every other leaf is constant.
	Args []ArgOrigin `json:"args"`
	// FallbackTool and Fallback are the same for the step's fallback tool.
	FallbackTool string      `json:"fallback_tool,omitempty"`
	Fallback     []ArgOrigin `json:"fallback,omitempty"`
	// Verified are the inferred arguments a read tool's result of the run
	// confirmed, as the gate last saw the step's call (gated runs only).
	Verified []safety.Verification `json:"verified,omitempty"`
	// Calls are, for an agent step, the calls its model chose, turn by
	// turn, and for a plan step (or an agent's execute_plan) each plan
	// step's call: where each argument came from as the runtime traced it,
	// what verified it, and the declaration with its checked facts.
	Calls []CallWhy `json:"calls,omitempty"`
	// Guardrail is, for an agent or llm step a guardrail stopped, the
	// error that says which guardrail tripped, on which side and why (its
	// journaled failure, class guardrail).
	Guardrail string `json:"guardrail,omitempty"`
	// Guardrails are the step's guardrail trips, each journaled (stopped
	// or asked a person).
	Guardrails []GuardrailWhy `json:"guardrails,omitempty"`
	// Failures are the step's failed attempts, each with its error's
	// cause chain.
	Failures []Failure `json:"failures,omitempty"`
	// Invalidated are the step's calls that touched a resource a
	// remediation marked invalid (flagged; origin invalidated).
	Invalidated []InvalidatedCall `json:"invalidated,omitempty"`
	// Premises are the failed premises that paused the run at the step
	// (its output's, or a tool call's), each with the message that names
	// it.
	Premises []PremiseFailure `json:"premises,omitempty"`
}

// InvalidatedCall is a call that touched invalidated resources.
type InvalidatedCall struct {
	Key  string `json:"key"`
	Tool string `json:"tool"`
	// Outcome is how the call ended (awaiting_approval: held for a
	// person).
	Outcome   string                   `json:"outcome,omitempty"`
	Resources []journal.InvalidatedUse `json:"resources"`
}

// InvalidatedCalls are the calls of calls that touched invalidated
// resources, in order.
func InvalidatedCalls(calls []*store.Call) []InvalidatedCall {
	var out []InvalidatedCall
	for _, c := range calls {
		if len(c.Invalidated) > 0 {
			out = append(out, InvalidatedCall{Key: c.Key, Tool: c.Name, Outcome: c.Outcome, Resources: c.Invalidated})
		}
	}
	return out
}

// invalidatedOf adds the step's flagged calls to v.
func (r *Reader) invalidatedOf(ctx context.Context, v *WhyView) error {
	calls, err := r.st.Calls(ctx, v.RunID, v.StepID)
	if err != nil {
		return fmt.Errorf("call records of run %s: %w", v.RunID, err)
	}
	v.Invalidated = InvalidatedCalls(calls)
	return nil
}

// CallWhy explains one call a model chose.
type CallWhy struct {
	// Ref names the call: "turn2/call1" (an agent call), "turn2/plan step
	// create" (a step of an agent's execute_plan), "plan 1 step create" (a
	// step of a plan step's plan number 1).
	Ref  string `json:"ref"`
	Tool string `json:"tool"`
	// Status is an agent call's status, a plan step's gate verdict.
	Status      string                `json:"status,omitempty"`
	Args        []ArgOrigin           `json:"args"`
	Verified    []safety.Verification `json:"verified,omitempty"`
	Declaration *safety.Declaration   `json:"declaration,omitempty"`
	Claims      []safety.ClaimVerdict `json:"claims,omitempty"`
}

// ArgOrigin is where one argument came from.
type ArgOrigin struct {
	// Pointer is the argument's JSON pointer in the args ("" the whole).
	Pointer string          `json:"pointer"`
	Origins []safety.Origin `json:"origins"`
	// From are the placeholders of the args template that make it, or
	// what the engine passes when the step has no args:.
	From []string `json:"from"`
}

// Why explains where each argument of tool step step of run ref came from
// (rein runs why). The flow is the one the run pinned; a step that is not
// a tool step is a business error naming the tool steps.
func (r *Reader) Why(ctx context.Context, ref, step string) (*WhyView, error) {
	run, p, err := r.Load(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	f := p.Flow
	s := f.StepByID(step)
	if s == nil || !explained(s) {
		var tools []string
		for _, t := range f.Steps {
			if explained(t) {
				tools = append(tools, t.ID)
			}
		}
		what := fmt.Sprintf("run %s has no step %q", run.ID, step)
		if s != nil {
			what = fmt.Sprintf("step %s of run %s is of type %s, and only tool, plan and agent steps call tools (an llm step with guardrails is explained for them)", step, run.ID, s.Type)
		}
		return nil, fault.Hinted(fault.Business, fault.Hint{RunID: run.ID}, errors.New(what+"; its steps that call tools: "+strings.Join(tools, ", ")))
	}
	events, err := r.st.Events(ctx, run.ID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("journal of run %s: %w", run.ID, err)
	}
	if s.Type != flow.Tool {
		v, err := modelCallsWhy(run.ID, s, events)
		if v != nil {
			v.Failures, v.Premises = failures(events, s.ID), premiseFailures(events, s.ID)
			v.Guardrails = guardrailTrips(events, s.ID)
			if err == nil {
				err = r.invalidatedOf(ctx, v)
			}
		}
		return v, err
	}
	spec := func(name string) (tool.Spec, bool) {
		if t, ok := p.Tools.Lookup(name); ok {
			return t.Spec(), true
		}
		return tool.Spec{}, false
	}
	v := &WhyView{RunID: run.ID, StepID: s.ID, Tool: s.Tool, Args: argOrigins(s, s.Args, flow.ArgProvenance(f, s, false, spec)),
		Failures: failures(events, s.ID), Premises: premiseFailures(events, s.ID)}
	if fb := s.Fallback; fb != nil && fb.Tool != "" {
		v.FallbackTool, v.Fallback = fb.Tool, argOrigins(s, fb.Args, flow.ArgProvenance(f, s, true, spec))
	}
	for _, g := range journal.GateDecisions(events) {
		if g.StepID == s.ID && g.PlanStep == "" && g.Turn == 0 && g.Tool == s.Tool {
			var b safety.Basis
			if json.Unmarshal(g.Decision.Basis, &b) == nil {
				v.Verified = b.Verified
			}
		}
	}
	if err := r.invalidatedOf(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

// argOrigins lists prov by pointer with the placeholders behind each.
func argOrigins(s *flow.Step, args *template.Value, prov safety.Provenance) []ArgOrigin {
	from := map[string][]string{}
	if args != nil {
		for _, r := range args.Refs() {
			from[r.Pointer] = append(from[r.Pointer], "{"+r.Path.String()+"}")
		}
	} else {
		for ptr := range prov {
			from[ptr] = []string{"the output of step " + strings.TrimPrefix(ptr, "/")}
		}
		if _, ok := prov["/input"]; ok && len(s.RequireIdx) == 0 {
			from["/input"] = []string{"the run's input"}
		}
	}
	out := make([]ArgOrigin, 0, len(prov))
	for _, ptr := range prov.Pointers() {
		out = append(out, ArgOrigin{Pointer: ptr, Origins: prov[ptr], From: from[ptr]})
	}
	return out
}
