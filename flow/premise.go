package flow

import (
	"github.com/reinhq/rein/flow/expression"
	"github.com/reinhq/rein/internal/yamlnode"
)

// premiseFields are the fields of a step's premise:.
var premiseFields = []string{"id", "claim", "check"}

// Premise is a step's premise: an assumption the rest of the run is built
// on, checked on the step's output. When Check does not hold, the run stops
// first: the step waits for a person (an escalation naming the premise)
// before anything that depends on it runs, and the remediation (rein runs
// impact / remediate --premise STEP) is offered, not applied.
type Premise struct {
	// ID names the premise in messages.
	ID string
	// Claim says in words what is assumed ("" when not given).
	Claim string
	// Check is an expression over the step's output (output, and the
	// names a gate sees) that holds when the premise does.
	Check *expression.Program
}

// decodePremise reads premise: {id, claim, check}.
func (d *decoder) decodePremise(fl field, label string) *Premise {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), label, "premise must be a mapping like {id: region-known, claim: \"the registry knows the region\", check: 'output.region != \"\"'}, not %s", yamlnode.Kind(fl.value))
		return nil
	}
	p := &Premise{}
	for _, f := range fields {
		switch f.key {
		case "id":
			if v, ok := d.str(f, label); ok {
				if !idPattern.MatchString(v) {
					d.diags.add(posOf(f.value), label, "premise id %q must start with a letter or _ and hold only letters, digits, _ and -", v)
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
			d.diags.add(fl.keyPos, label, "premise needs id: and check: (an expression over the step's output that holds when the premise does)")
		}
		return nil
	}
	return p
}
