package flow

import (
	"github.com/reinhq/rein/tool"
)

// EffectDecl is what a declaration says a tool does to the world, in the
// same fields wherever a tool is declared: an exec tool of rein.yaml or a
// flow's tools: (ToolDecl), and a tool of a rein.yaml mcp: server
// (MCPToolDecl). See tool.Spec for what each field means.
type EffectDecl struct {
	Effect        tool.Effect
	Reversibility tool.Reversibility
	Idempotent    bool
	// Undo (reversible) and Compensate (compensatable) name the registered
	// tool that takes a call back, with args over the call ({args.…},
	// {output.…}); CheckEffects checks them once every tool is registered.
	Undo, Compensate *tool.Compensation
	Resources        []string
	Tags             []string
	// Verifies are the fields of the tool's output that are a source of
	// truth (tool.Spec.Verifies), as JSON pointers (a bare field name is
	// read as /name); CheckEffects checks them against the output schema.
	Verifies []string

	// where the undo: and compensate: fields and each verifies: entry
	// are, for CheckEffects.
	undoAt, compensateAt Pos
	verifiesAt           []Pos
}

// effectFields are the fields decodeEffect reads.
var effectFields = []string{"effect", "reversibility", "idempotent", "undo", "compensate", "resources", "tags", "verifies"}

// ApplyTo sets the effect fields of s to the declaration's.
func (e *EffectDecl) ApplyTo(s *tool.Spec) {
	s.Effect, s.Reversibility, s.Idempotent = e.Effect, e.Reversibility, e.Idempotent
	s.Undo, s.Compensate, s.Resources, s.Tags, s.Verifies = e.Undo, e.Compensate, e.Resources, e.Tags, e.Verifies
}

// decodeEffect reads f into e when f is one of effectFields and reports
// whether it was; where names the declaration in messages ("tool x").
func (d *decoder) decodeEffect(e *EffectDecl, f field, where string) bool {
	switch f.key {
	case "effect":
		if v, ok := d.str(f, ""); ok {
			if !tool.Effect(v).Valid() || v == "" {
				d.diags.add(posOf(f.value), "", "%s: effect must be none, read, write, external or destructive, not %q", where, v)
			}
			e.Effect = tool.Effect(v)
		}
	case "reversibility":
		if v, ok := d.str(f, ""); ok {
			if !tool.Reversibility(v).Valid() || v == "" {
				d.diags.add(posOf(f.value), "", "%s: reversibility must be reversible, compensatable or irreversible, not %q", where, v)
			}
			e.Reversibility = tool.Reversibility(v)
		}
	case "idempotent":
		e.Idempotent, _ = d.boolean(f, "")
	case "undo":
		e.Undo, e.undoAt = d.decodeCompensation(f, where), posOf(f.value)
	case "compensate":
		e.Compensate, e.compensateAt = d.decodeCompensation(f, where), posOf(f.value)
	case "resources":
		e.Resources = d.decodeResources(f, where)
	case "tags":
		e.Tags = d.decodeTags(f, where)
	case "verifies":
		e.Verifies, e.verifiesAt = d.decodeVerifies(f, where)
	default:
		return false
	}
	return true
}

// checkEffect checks what the fields of e say together: undo: belongs to
// a reversible tool, compensate: to a compensatable one. at locates the
// declaration.
func (d *decoder) checkEffect(e *EffectDecl, at Pos, where string) {
	if e.Undo != nil && e.Reversibility != tool.Reversible {
		d.diags.add(at, "", "%s: undo: belongs to a tool with reversibility: reversible", where)
	}
	if e.Compensate != nil && e.Reversibility != tool.Compensatable {
		d.diags.add(at, "", "%s: compensate: belongs to a tool with reversibility: compensatable", where)
	}
}
