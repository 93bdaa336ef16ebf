package safety

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/tool"
)

// HasEffect reports whether a call of spec touches the world (effect read,
// write, external or destructive) and so belongs in the effect graph.
func HasEffect(spec *tool.Spec) bool {
	switch spec.Effect {
	case tool.EffectRead, tool.EffectWrite, tool.EffectExternal, tool.EffectDestructive:
		return true
	}
	return false
}

// MaxRenderedBytes bounds what a tool's resource or compensation template
// renders (as a step's max_input_bytes does by default), counted before
// the bytes are made: past it the resource is left unrendered and the
// compensation says why.
const MaxRenderedBytes = 1 << 20

// callScope is what the templates of a tool's resources and compensations
// read: the call's args and output.
func callScope(args, output any) map[string]any {
	return map[string]any{"args": args, "output": output}
}

// Touches fills e's Reads, Writes or Sends (by the effect of spec) with
// spec's resources rendered over the call's args and output; a resource
// that does not render (the output lacks a field, or the call did not
// return one) goes to Unrendered as written.
func Touches(e *journal.Effect, spec *tool.Spec, args, output any) {
	if len(spec.Resources) == 0 {
		return
	}
	scope := callScope(args, output)
	for _, src := range spec.Resources {
		t, err := template.Parse(src)
		if err != nil {
			e.Unrendered = append(e.Unrendered, src)
			continue
		}
		s, err := t.RenderStringBounded(scope, &template.Bounds{MaxBytes: MaxRenderedBytes})
		if err != nil {
			e.Unrendered = append(e.Unrendered, src)
			continue
		}
		switch spec.Effect {
		case tool.EffectRead:
			e.Reads = append(e.Reads, s)
		case tool.EffectExternal:
			e.Sends = append(e.Sends, s)
		default:
			e.Writes = append(e.Writes, s)
		}
	}
}

// Compensation renders the call that takes back a call of spec with args
// and output: its undo when the tool is reversible, its compensate when it
// is compensatable; nil when it declares neither. A template that does not
// render leaves Args empty and says why in Error.
func Compensation(spec *tool.Spec, args, output any) *journal.Compensation {
	c, kind := spec.Undo, "undo"
	if c == nil || spec.Reversibility == tool.Compensatable {
		c, kind = spec.Compensate, "compensate"
	}
	if c == nil {
		return nil
	}
	out := &journal.Compensation{Kind: kind, Tool: c.Tool}
	v, errs := template.ParseValue(c.Args)
	if len(errs) > 0 {
		out.Error = fmt.Sprintf("%s args of tool %s: %v", kind, spec.Name, errs[0])
		return out
	}
	rendered, err := v.RenderBounded(callScope(args, output), &template.Bounds{MaxBytes: MaxRenderedBytes})
	if err != nil {
		out.Error = fmt.Sprintf("%s args of tool %s: %v", kind, spec.Name, err)
		return out
	}
	b, err := json.Marshal(rendered)
	if err != nil {
		out.Error = fmt.Sprintf("%s args of tool %s: %v", kind, spec.Name, err)
		return out
	}
	out.Args = b
	return out
}

// ProvenanceRecord lists p by pointer, sorted, as an effect record keeps
// it.
func ProvenanceRecord(p Provenance) []journal.ArgProvenance {
	if len(p) == 0 {
		return nil
	}
	out := make([]journal.ArgProvenance, 0, len(p))
	for _, ptr := range p.Pointers() {
		os := make([]string, len(p[ptr]))
		for i, o := range p[ptr] {
			os[i] = string(o)
		}
		out = append(out, journal.ArgProvenance{Pointer: ptr, Origins: os})
	}
	return out
}

// Escalates reports whether a frozen call of spec must go to a person:
// its tool touches users, money or compliance (tags user-facing, money,
// compliance).
func Escalates(tags []string) bool {
	return slices.ContainsFunc(tags, func(t string) bool { return t == "money" || t == "compliance" || t == "user-facing" })
}

// CompensationProvenance is where the args of the compensation of a call
// of spec come from, leaf by leaf of its template: a placeholder over the
// call's args has the origins the call's args had there (orig), one over
// its output the tool's origin; other leaves are constants. So the gate
// judges a compensation by what its values really are.
func CompensationProvenance(spec *tool.Spec, kind string, orig Provenance) Provenance {
	c := spec.Compensate
	if kind == "undo" {
		c = spec.Undo
	}
	if c == nil {
		return nil
	}
	v, errs := template.ParseValue(c.Args)
	if len(errs) > 0 {
		return nil
	}
	out := Provenance{}
	for _, r := range v.Refs() {
		if r.Path[0].Key == "output" {
			out.Add(r.Pointer, ToolOrigin(spec))
			continue
		}
		var b strings.Builder
		for _, seg := range r.Path[1:] {
			b.WriteByte('/')
			if seg.IsIndex {
				b.WriteString(strconv.Itoa(seg.Index))
			} else {
				b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(seg.Key))
			}
		}
		at := b.String()
		for ptr, os := range orig {
			// the origins of a value hold below its pointer; a value made of
			// several leaves has all of theirs.
			if ptr == at || strings.HasPrefix(at, ptr+"/") || ptr == "" || strings.HasPrefix(ptr, at+"/") || at == "" {
				for _, o := range os {
					out.Add(r.Pointer, o)
				}
			}
		}
	}
	return out
}

// FromRecord is the Provenance of an effect record's list.
func FromRecord(rec []journal.ArgProvenance) Provenance {
	out := Provenance{}
	for _, p := range rec {
		for _, o := range p.Origins {
			out.Add(p.Pointer, Origin(o))
		}
	}
	return out
}
