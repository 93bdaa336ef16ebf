package flow

import (
	"context"

	"github.com/reinhq/rein/flow/expression"
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/tool"
)

// premiseFields are the fields of a step's premise:.
var premiseFields = []string{"id", "claim", "check"}

// Premise is a step's premise, or a tool declaration's: an assumption the
// rest of the run is built on, checked on the step's output (on every
// call's output, for a tool's). When Check does not hold, the run stops
// first: the step waits for a person (an approval of kind premise naming
// it) and the whole run pauses before any further effect — no step that
// has not started is dispatched until a person decides — and the
// remediation (rein runs impact / remediate --premise STEP) is offered,
// not applied.
type Premise struct {
	// ID names the premise in messages.
	ID string
	// Claim says in words what is assumed ("" when not given).
	Claim string
	// Check is an expression over the step's output (output, and the
	// names a gate sees) that holds when the premise does; a tool's sees
	// the call's output and args.
	Check *expression.Program
}

// decodePremise reads premise: {id, claim, check}: a step's (label is its
// id), or a tool's (label "", where "tool NAME: " prefixes the messages).
func (d *decoder) decodePremise(fl field, label, where string) *Premise {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), label, "%spremise must be a mapping like {id: region-known, claim: \"the registry knows the region\", check: 'output.region != \"\"'}, not %s", where, yamlnode.Kind(fl.value))
		return nil
	}
	p := &Premise{}
	for _, f := range fields {
		switch f.key {
		case "id":
			if v, ok := d.str(f, label); ok {
				if !idPattern.MatchString(v) {
					d.diags.add(posOf(f.value), label, "%spremise id %q must start with a letter or _ and hold only letters, digits, _ and -", where, v)
				}
				p.ID = v
			}
		case "claim":
			p.Claim, _ = d.str(f, label)
		case "check":
			p.Check = d.expr(f, label)
		default:
			d.unknownField(f, label, "premise", premiseFields)
		}
	}
	if p.ID == "" || p.Check == nil {
		if _, ok := fieldByKey(fields, "check"); !ok || p.ID == "" {
			d.diags.add(fl.keyPos, label, "%spremise needs id: and check: (an expression over the output that holds when the premise does)", where)
		}
		return nil
	}
	return p
}

// decodeToolPremise reads a tool declaration's premise: as a step's, its
// check reading only output and args (the call's).
func (d *decoder) decodeToolPremise(fl field, where string) *Premise {
	p := d.decodePremise(fl, "", where+": ")
	if p == nil {
		return nil
	}
	fields, _ := fieldsOf(fl.value)
	cf, _ := fieldByKey(fields, "check")
	for _, site := range p.Check.RefSites() {
		if root := site.Path[0].Key; root != "output" && root != "args" {
			d.diags.add(posAt(cf.value, site.Offset), "", "%s: premise check reads %s, but a tool's premise is checked on each call and sees only output and args (the call's)", where, site.Path)
			return nil
		}
	}
	return p
}

// ToolPremise is p as a tool's premise (tool.Spec.Premise): its check
// evaluated over the call's output and args. Nil for a nil p.
func (p *Premise) ToolPremise() *tool.Premise {
	if p == nil {
		return nil
	}
	check := p.Check
	return &tool.Premise{ID: p.ID, Claim: p.Claim, Check: check.Source(), Holds: func(ctx context.Context, output, args any) (bool, error) {
		return check.EvalContext(ctx, map[string]any{"output": output, "args": args})
	}}
}
