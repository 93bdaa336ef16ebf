package safety

import (
	"slices"
	"strings"

	"github.com/reinhq/rein/tool"
)

// Origin says where a value handed to a tool came from.
type Origin string

// Origins. A tool's output is "tool:<name>" (ToolOrigin), or OriginDB when
// the tool's effect is a read of a store.
const (
	OriginUser     Origin = "user"     // a field of the run's input, or a person's decision
	OriginConstant Origin = "constant" // text of the flow itself
	OriginInferred Origin = "inferred" // written by a model
	OriginDB       Origin = "db"       // a read of a store (a tool with effect read)
	// OriginUserMentioned: written by a model, and found only inside the
	// user's free text (a task, a message, a longer text of the input),
	// never as a whole field of the input. "Never pay acct-9" mentions
	// acct-9 without asking for it, so the default rules treat it like
	// inferred.
	OriginUserMentioned Origin = "user-mentioned"
	// OriginInvalidated: the call touches a resource a remediation of an
	// earlier run marked invalid (the store's registry of invalidated
	// resources), or the value came from the output of a call that did.
	// It is added at the pointer "" (the whole args); the default rule
	// invalidated-resource asks a person before such a call has a side
	// effect.
	OriginInvalidated Origin = "invalidated"
)

// ToolOrigin is the origin of an output of the tool called name; a tool
// whose effect is read counts as OriginDB.
func ToolOrigin(spec *tool.Spec) Origin {
	if spec.Effect == tool.EffectRead {
		return OriginDB
	}
	return Origin("tool:" + spec.Name)
}

// IsTool reports whether o is a tool's output (tool:<name> or db).
func (o Origin) IsTool() bool { return o == OriginDB || strings.HasPrefix(string(o), "tool:") }

// Unsourced reports whether o is a value a model wrote that no structured
// input gave: inferred or user-mentioned. Only a tool's source-of-truth
// field (tool.Spec.Verifies, Evidence.Verify) confirms such a value.
func (o Origin) Unsourced() bool { return o == OriginInferred || o == OriginUserMentioned }

// Valid reports whether o is one of the origins.
func (o Origin) Valid() bool {
	switch o {
	case OriginUser, OriginConstant, OriginInferred, OriginDB, OriginUserMentioned, OriginInvalidated:
		return true
	}
	return strings.HasPrefix(string(o), "tool:") && len(o) > len("tool:")
}

// Provenance maps the JSON pointer of an argument (RFC 6901, "" for the
// whole args) to the origins of what it was made from: a rendered leaf's
// origins are the union of its placeholders'. A pointer names the leaf of
// the args template; the value there, and all below it, share its
// origins. Leaves it does not list are constants (text of the flow).
// Origins are sorted and unique. Provenance is shared, never modified.
type Provenance map[string][]Origin

// Add adds o to the origins of ptr, keeping them sorted and unique.
func (p Provenance) Add(ptr string, o Origin) {
	cur := p[ptr]
	i, found := slices.BinarySearch(cur, o)
	if found {
		return
	}
	p[ptr] = slices.Insert(cur, i, o)
}

// Pointers returns the pointers, sorted.
func (p Provenance) Pointers() []string {
	out := make([]string, 0, len(p))
	for k := range p {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Has returns the first pointer (in sorted order) with an origin for which
// match holds.
func (p Provenance) Has(match func(Origin) bool) (string, Origin, bool) {
	return p.Find(func(_ string, o Origin) bool { return match(o) })
}

// Find returns the first pointer (in sorted order) and origin for which
// match holds.
func (p Provenance) Find(match func(ptr string, o Origin) bool) (string, Origin, bool) {
	var best string
	var bestO Origin
	found := false
	for ptr, os := range p {
		for _, o := range os {
			if match(ptr, o) && (!found || ptr < best) {
				best, bestO, found = ptr, o, true
				break
			}
		}
	}
	return best, bestO, found
}
