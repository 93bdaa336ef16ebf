package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
)

// ImpactView is what a failed premise touched in a run, and what
// remediation would do about each executed call: undo (reversible),
// compensate (compensatable), freeze (irreversible: mark invalid,
// escalate where users, money or compliance are touched) or keep
// (unaffected, or a read).
type ImpactView struct {
	RunID   string `json:"run_id"`
	Premise string `json:"premise"`
	// Source says what the premise named: "assumption" (a declared
	// assumption: its Affects) or "step" (a step whose output is false).
	Source string `json:"source"`
	// Claims are the claims of the assumption the premise names, and
	// DeclaredBy the keys of the calls whose declarations made it (none
	// for an assumption a library caller passed).
	Claims     []string `json:"claims,omitempty"`
	DeclaredBy []string `json:"declared_by,omitempty"`
	// Steps are the affected steps, in flow order: the premise's and every
	// step that depends on them through data (reads, explicit requires)
	// or through the resources their calls wrote.
	Steps []string `json:"steps"`
	// Calls are the run's executed calls with an effect, in the order they
	// returned, each classified.
	Calls []ImpactCall `json:"calls"`
}

// ImpactCall is one executed call and what remediation does about it.
type ImpactCall struct {
	Key    string `json:"key"`
	StepID string `json:"step_id"`
	Tool   string `json:"tool"`
	Effect string `json:"effect"`
	// Action is undo, compensate, freeze or keep.
	Action engine.Action `json:"action"`
	// Why says what ties the call to the premise, or why it is kept.
	Why string `json:"why"`
	// Compensation is the call an undo or compensate makes; Invalid what a
	// freeze marks invalid; Escalates whether a freeze asks a person.
	Compensation *journal.Compensation `json:"compensation,omitempty"`
	Invalid      []string              `json:"invalid,omitempty"`
	Escalates    bool                  `json:"escalates,omitempty"`
	// State is what an earlier remediation made of it, if any (as
	// EffectCall.State: done, frozen, failed, escalated, unknown,
	// resolved, or dispatched while its undo or compensation is in doubt).
	State string `json:"state,omitempty"`
	// Tier, Control and ControlWhy say how remediate would let an undo or
	// compensation through if it ran now (engine.CheckRemedies): the
	// call's risk tier, who lets it through — automatic (through the
	// gate), reviewer (a person if the reviewer does not find it
	// supported) or person — and why. A freeze that escalates has
	// Control person; a keep has none of them.
	Tier       int    `json:"tier,omitempty"`
	Control    string `json:"control,omitempty"`
	ControlWhy string `json:"control_why,omitempty"`

	effect journal.Effect
}

// ImpactOptions are per-call settings of Impact and Remediate. A nil
// *ImpactOptions uses the defaults.
type ImpactOptions struct {
	// Assumptions are assumptions the premise may name (by ID) besides
	// those the run's models declared with their calls (which Impact reads
	// from the journal): its Affects lists step ids, call keys, resources
	// or argument pointers of the run ("/to": the calls whose argument /to
	// it fed). A premise no assumption names must be a step id of the
	// run's flow: that step's output is the false premise.
	Assumptions []safety.Assumption
}

// Impact computes what premise touched in the run ref names (rein runs
// impact): the affected steps from the flow's data dependencies, the
// declared assumptions and the effect graph, and per executed call with an
// effect its action. premise is the id of an assumption a model declared
// with a call it chose (an agent call, a plan step: read from the
// journal; the declaring call, and what its affects name — argument
// pointers of that call, step ids, call keys, resources — are affected,
// and what depends on them), of one in opts, or a step id, or the id of
// a step's premise: (that step's output is false). A premise that names none of these is a not_found *Error
// listing the run's premise ids and steps. Errors as Effects otherwise.
func (r *Reader) Impact(ctx context.Context, ref, premise string, opts *ImpactOptions) (*ImpactView, error) {
	run, p, err := r.Load(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	events, err := r.st.Events(ctx, run.ID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("journal of run %s: %w", run.ID, err)
	}
	v, err := effectsView(run, p.Flow, events)
	if err != nil {
		return nil, err
	}
	assumptions := journaledAssumptions(events)
	if opts != nil {
		for _, a := range opts.Assumptions {
			assumptions = append(assumptions, declaredAssumption{Assumption: a})
		}
	}
	im, err := impact(p.Flow, v, premise, assumptions)
	if err != nil {
		return nil, err
	}
	// how remediate would let each undo or compensation through
	var remedies []engine.Remedy
	var at []int
	for i, c := range im.Calls {
		if c.Action != engine.ActKeep {
			remedies = append(remedies, engine.Remedy{Effect: c.effect, Action: c.Action})
			at = append(at, i)
		}
	}
	if len(remedies) > 0 {
		checks, err := wire.Engine(p, engine.Config{Store: r.st, Gate: r.gate}).CheckRemedies(ctx, p.Flow, run.ID, remedies)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", run.ID, err)
		}
		for k, i := range at {
			c := &im.Calls[i]
			c.Tier, c.Control, c.ControlWhy = checks[k].Tier, checks[k].Control, checks[k].Why
		}
	}
	return im, nil
}

// impact classifies the calls of v for premise.
func impact(f *flow.Flow, v *EffectsView, premise string, assumptions []declaredAssumption) (*ImpactView, error) {
	out := &ImpactView{RunID: v.RunID, Premise: premise, Steps: []string{}, Calls: []ImpactCall{}}
	affected := make([]bool, len(f.Steps))
	why := map[int]string{}
	callWhy := map[string]string{} // calls tied to the premise directly
	var named []declaredAssumption
	for _, a := range assumptions {
		if a.ID == premise {
			named = append(named, a)
		}
	}
	switch {
	case len(named) > 0:
		out.Source = "assumption"
		for i := range named {
			out.Claims = appendNew(out.Claims, named[i].Claim)
			assumptionCalls(f, v, premise, &named[i], affected, why, callWhy)
		}
		for _, c := range v.Calls {
			for i := range named {
				if c.Remedy == "" && named[i].declares(&c) {
					out.DeclaredBy = appendNew(out.DeclaredBy, c.Key)
				}
			}
		}
	case premiseStep(f, premise) != nil:
		out.Source = "step"
		s := premiseStep(f, premise)
		affected[s.Index], why[s.Index] = true, "its output is the premise"
	default:
		return nil, unknownPremise(f, v.RunID, premise, assumptions)
	}
	// a step the premise reaches through one of its calls is affected from
	// that call on: its earlier calls (an agent's, a plan's) are not.
	from := map[string]int64{}
	for _, c := range v.Calls {
		if callWhy[c.Key] == "" {
			continue
		}
		if s := f.StepByID(c.StepID); s != nil && !affected[s.Index] {
			if seq, ok := from[c.StepID]; !ok || c.Seq < seq {
				from[c.StepID] = c.Seq
			}
		}
	}
	for id, seq := range from {
		s := f.StepByID(id)
		affected[s.Index] = true
		for _, c := range v.Calls {
			if c.StepID == id && c.Seq == seq && callWhy[c.Key] != "" {
				why[s.Index] = callWhy[c.Key]
				break
			}
		}
	}
	spread(f, v, affected, why)
	for i, s := range f.Steps {
		if affected[i] {
			out.Steps = append(out.Steps, s.ID)
		}
	}
	for _, c := range v.Calls {
		if c.Remedy != "" {
			continue
		}
		ic := ImpactCall{Key: c.Key, StepID: c.StepID, Tool: c.Tool, Effect: c.Effect.Effect, Action: engine.ActKeep, State: c.State, effect: c.Effect}
		s := f.StepByID(c.StepID)
		hit := callWhy[c.Key]
		if seq, partly := from[c.StepID]; hit == "" && s != nil && affected[s.Index] && (!partly || c.Seq >= seq) {
			hit = "step " + c.StepID + ": " + why[s.Index]
		}
		switch hit {
		case "":
			ic.Why = "no data, assumption or resource ties it to the premise"
		default:
			ic.Action, ic.Why = engine.Classify(&c.Effect), hit
			switch ic.Action {
			case engine.ActUndo, engine.ActCompensate:
				ic.Compensation = c.Compensation
			case engine.ActFreeze:
				ic.Invalid = append(append([]string{}, c.Writes...), c.Sends...)
				ic.Escalates = safety.Escalates(c.Tags)
			case engine.ActKeep:
				ic.Why += "; a read changes nothing"
			}
		}
		out.Calls = append(out.Calls, ic)
	}
	return out, nil
}

// assumptionCalls follows assumption a (the premise): the call that
// declared it, and what its Affects name — a step id (that step), a call
// key, a resource a call read, wrote or sent, or an argument pointer (of
// the declaring call, which is affected already; of a library caller's
// assumption, every call whose args have it).
func assumptionCalls(f *flow.Flow, v *EffectsView, premise string, a *declaredAssumption, affected []bool, why map[int]string, callWhy map[string]string) {
	for _, c := range v.Calls {
		if c.Remedy == "" && a.declares(&c) {
			callWhy[c.Key] = "it declared assumption " + premise + " (" + a.Claim + ")"
		}
	}
	for _, target := range a.Affects {
		if s := f.StepByID(target); s != nil {
			affected[s.Index], why[s.Index] = true, "assumption "+premise+" affects step "+s.ID
			continue
		}
		pointer := strings.HasPrefix(target, "/")
		for _, c := range v.Calls {
			if c.Remedy != "" || callWhy[c.Key] != "" {
				continue
			}
			hit := c.Key == target || slices.Contains(c.Writes, target) || slices.Contains(c.Sends, target) || slices.Contains(c.Reads, target)
			if pointer && !a.byCall() {
				hit = hit || slices.ContainsFunc(c.Provenance, func(p journal.ArgProvenance) bool { return p.Pointer == target })
			}
			if hit {
				callWhy[c.Key] = "assumption " + premise + " affects " + target
			}
		}
	}
}

// unknownPremise is the not_found error of a premise that names neither
// an assumption nor a step: it lists both.
func unknownPremise(f *flow.Flow, runID, premise string, assumptions []declaredAssumption) error {
	ids := make([]string, len(f.Steps))
	for i, s := range f.Steps {
		ids[i] = s.ID
	}
	var known []string
	for _, a := range assumptions {
		known = appendNew(known, a.ID)
	}
	slices.Sort(known)
	declared := "none declared"
	if len(known) > 0 {
		declared = strings.Join(known, ", ")
	}
	return fault.Hinted(fault.NotFound, fault.Hint{RunID: runID}, fmt.Errorf("premise %q names no assumption and no step of run %s (its assumptions: %s; its steps: %s): name one of them",
		premise, runID, declared, strings.Join(ids, ", ")))
}

// appendNew appends s to list unless it is there.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// spread marks, until nothing changes, the steps downstream (by data) of
// an affected step and the steps whose calls used a resource an affected
// step's calls wrote or sent.
func spread(f *flow.Flow, v *EffectsView, affected []bool, why map[int]string) {
	deps := dataDeps(f)
	for changed := true; changed; {
		changed = false
		for i := range f.Steps {
			if affected[i] {
				continue
			}
			for _, j := range deps[i] {
				if affected[j] {
					affected[i], why[i], changed = true, "it depends on step "+f.Steps[j].ID, true
					break
				}
			}
		}
		touched := map[string]string{}
		for _, c := range v.Calls {
			if s := f.StepByID(c.StepID); s != nil && affected[s.Index] && c.Remedy == "" {
				for _, res := range slices.Concat(c.Writes, c.Sends) {
					touched[res] = c.StepID
				}
			}
		}
		for _, c := range v.Calls {
			s := f.StepByID(c.StepID)
			if s == nil || affected[s.Index] || c.Remedy != "" {
				continue
			}
			for _, res := range slices.Concat(c.Reads, c.Writes) {
				if from, ok := touched[res]; ok {
					affected[s.Index], why[s.Index], changed = true, "it used "+res+", which step "+from+" wrote", true
					break
				}
			}
		}
	}
}

// Plan is the remediation the impact calls for, in the order it is carried
// out: latest completed first, as a saga, so that what depends on a call is
// taken back before it; calls kept as they are are left out.
func (v *ImpactView) Plan() []engine.Remedy {
	var remedies []engine.Remedy
	for i := len(v.Calls) - 1; i >= 0; i-- {
		if c := v.Calls[i]; c.Action != engine.ActKeep {
			remedies = append(remedies, engine.Remedy{Effect: c.effect, Action: c.Action})
		}
	}
	return remedies
}

// premiseStep is the step premise names: a step of f by id, or the one
// step whose own premise: has that id (a premise two steps declare is
// named by step id); nil when none.
func premiseStep(f *flow.Flow, premise string) *flow.Step {
	if s := f.StepByID(premise); s != nil {
		return s
	}
	var found *flow.Step
	for _, s := range f.Steps {
		if s.Premise != nil && s.Premise.ID == premise {
			if found != nil {
				return nil
			}
			found = s
		}
	}
	return found
}
