package flow

import (
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/safety"
)

// RiskDecl is rein.yaml / flow risk:, what the risk tier of a run is
// assessed with (safety.Assess) besides its tools and input:
//
//	risk:
//	  min_tier: 2                       # the floor, 1–4
//	  costs:                            # cost of error: the tier a call puts the run at, at least
//	    tools: {refund: 4}
//	    tags: {money: 3}
//	  max_fan_out: 10                   # a side-effect step fanning out further is tier 3
//	  max_resources: 10                 # side-effect calls naming more resources are tier 3
//	  post_check: verify_effect         # a tool run after every side effect at tier 4
//
// A flow's risk: replaces rein.yaml's.
type RiskDecl struct {
	Risk safety.RiskConfig
	Pos  Pos
	// postCheckPos locates post_check, for the unknown-tool message.
	postCheckPos Pos
}

// ReviewDecl is rein.yaml / flow review:, the reviewer (safety.Controls):
//
//	review:
//	  model: reviewer          # a model of rein.yaml models:
//	  tools: [create_customer] # which calls (empty: every side-effect call)
//	  steps: [onboard]
//	  min_tier: 3              # from which tier side-effect calls are reviewed
//
// A flow's review: replaces rein.yaml's.
type ReviewDecl struct {
	Review safety.ReviewConfig
	Pos    Pos
	// ModelPos is where review: model is written.
	ModelPos Pos
	toolPos  []Pos
	stepPos  []Pos
}

var (
	riskFields   = []string{"min_tier", "costs", "max_fan_out", "max_resources", "post_check"}
	costFields   = []string{"tools", "tags"}
	reviewFields = []string{"model", "tools", "steps", "min_tier"}
)

// tierField reads a field that holds a risk tier, 1 to 4.
func (d *decoder) tierField(f field, where string) int {
	t, ok := d.integer(f, "")
	if !ok {
		return 0
	}
	if t < 1 || t > 4 {
		d.diags.add(posOf(f.value), "", "%s: %s must be a risk tier from 1 to 4, not %d", where, f.key, t)
		return 0
	}
	return t
}

// decodeRisk reads risk:.
func (d *decoder) decodeRisk(fl field) *RiskDecl {
	r := &RiskDecl{Pos: fl.keyPos}
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), "", "risk must be a mapping like {min_tier: 2, costs: {tags: {money: 4}}}, not %s", yamlnode.Kind(fl.value))
		return nil
	}
	for _, f := range fields {
		switch f.key {
		case "min_tier":
			r.Risk.MinTier = d.tierField(f, "risk")
		case "max_fan_out", "max_resources":
			n, ok := d.integer(f, "")
			if ok && n < 1 {
				d.diags.add(posOf(f.value), "", "risk: %s must be at least 1, not %d", f.key, n)
				continue
			}
			if f.key == "max_fan_out" {
				r.Risk.MaxFanOut = n
			} else {
				r.Risk.MaxResources = n
			}
		case "post_check":
			r.Risk.PostCheck, _ = d.str(f, "")
			r.postCheckPos = posOf(f.value)
		case "costs":
			d.decodeCosts(f, &r.Risk)
		default:
			d.unknownField(f, "", "risk", riskFields)
		}
	}
	return r
}

func (d *decoder) decodeCosts(fl field, r *safety.RiskConfig) {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), "", "risk costs must be a mapping like {tools: {refund: 4}, tags: {money: 3}}, not %s", yamlnode.Kind(fl.value))
		return
	}
	for _, f := range fields {
		if f.key != "tools" && f.key != "tags" {
			d.unknownField(f, "", "risk costs", costFields)
			continue
		}
		entries, ok := fieldsOf(f.value)
		if !ok {
			d.diags.add(posOf(f.value), "", "risk costs %s must map names to tiers 1–4, like {refund: 4}, not %s", f.key, yamlnode.Kind(f.value))
			continue
		}
		m := make(map[string]int, len(entries))
		for _, e := range entries {
			if t := d.tierField(e, "risk costs "+f.key); t > 0 {
				m[e.key] = t
			}
		}
		if f.key == "tools" {
			r.ToolCost = m
		} else {
			r.TagCost = m
		}
	}
}

// decodeReview reads review:.
func (d *decoder) decodeReview(fl field) *ReviewDecl {
	r := &ReviewDecl{Pos: fl.keyPos}
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), "", "review must be a mapping like {model: reviewer, min_tier: 3}, not %s", yamlnode.Kind(fl.value))
		return nil
	}
	for _, f := range fields {
		switch f.key {
		case "model":
			r.Review.Model, _ = d.str(f, "")
			r.ModelPos = posOf(f.value)
		case "tools":
			r.Review.Tools, r.toolPos, _ = d.strList(f, "")
		case "steps":
			r.Review.Steps, r.stepPos, _ = d.strList(f, "")
		case "min_tier":
			r.Review.MinTier = d.tierField(f, "review")
		default:
			d.unknownField(f, "", "review", reviewFields)
		}
	}
	if r.Review.Model == "" {
		d.diags.add(fl.keyPos, "", "review needs a model: (the model that checks the claims behind a call, e.g. model: reviewer)")
	}
	return r
}

// checkSafety checks the tools and models a flow's risk: and review: name,
// and that review: steps are steps of the flow.
func (d *decoder) checkSafety() {
	f := d.flow
	if r := f.Risk; r != nil && r.Risk.PostCheck != "" {
		d.checkToolAt(r.Risk.PostCheck, r.postCheckPos, "")
	}
	if r := f.Review; r != nil {
		if r.Review.Model != "" {
			d.checkModelAt(r.Review.Model, r.ModelPos, "")
		}
		for i, t := range r.Review.Tools {
			d.checkToolAt(t, r.toolPos[i], "")
		}
		for i, s := range r.Review.Steps {
			if f.StepByID(s) == nil {
				d.diags.add(r.stepPos[i], "", "review: steps names %q, which is not a step of the flow", s)
			}
		}
	}
}
