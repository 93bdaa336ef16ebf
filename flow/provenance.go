package flow

import (
	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// ArgProvenance says where each argument of tool step s comes from
// (safety.Provenance), worked out from the flow alone: which placeholders
// feed which leaf of its args template, and what kind of step produced
// each. The run's input is user; a tool step's output tool:<name> (db for
// a tool whose effect is read); an llm, route or plan step's output
// inferred (a model wrote it); an approval's output user; the for_each
// item the origins of the items expression; a leaf without placeholders
// constant (and not listed). With fallback, the args are those of the
// step's fallback tool. spec looks up a tool's declaration (nil: every
// tool counts as tool:<name>).
func ArgProvenance(f *Flow, s *Step, fallback bool, spec func(name string) (tool.Spec, bool)) safety.Provenance {
	p := provenancer{f: f, spec: spec}
	args := s.Args
	if fallback && s.Fallback != nil {
		args = s.Fallback.Args
	}
	out := safety.Provenance{}
	if args == nil {
		// the outputs of the direct requires, by id; input for a root step.
		if len(s.RequireIdx) == 0 {
			out.Add("/input", safety.OriginUser)
		}
		for _, j := range s.RequireIdx {
			id := f.Steps[j].ID
			for _, o := range p.stepOrigins(f.Steps[j], 0) {
				out.Add("/"+id, o) // ids need no escaping
			}
		}
		return out
	}
	for _, r := range args.Refs() {
		for _, o := range p.pathOrigins(s, r.Path, 0) {
			out.Add(r.Pointer, o)
		}
	}
	return out
}

type provenancer struct {
	f    *Flow
	spec func(string) (tool.Spec, bool)
}

// maxDepth bounds the walk through for_each items and fallbacks.
const maxDepth = 8

// pathOrigins is the origins of a reference made in step s.
func (p *provenancer) pathOrigins(s *Step, path ref.Path, depth int) []safety.Origin {
	if len(path) == 0 || depth > maxDepth {
		return []safety.Origin{safety.OriginInferred}
	}
	switch root := path[0].Key; root {
	case "input":
		return []safety.Origin{safety.OriginUser}
	case "index", "iteration":
		return []safety.Origin{safety.OriginConstant}
	case "item":
		if s.ForEach == nil {
			return []safety.Origin{safety.OriginInferred}
		}
		var out []safety.Origin
		for _, r := range s.ForEach.Items.Refs() {
			out = append(out, p.pathOrigins(s, r, depth+1)...)
		}
		if len(out) == 0 {
			return []safety.Origin{safety.OriginConstant}
		}
		return out
	case "previous":
		return p.stepOrigins(s, depth+1)
	case "steps":
		if len(path) >= 3 && path[2].Key == "status" {
			return []safety.Origin{safety.OriginConstant}
		}
		if len(path) >= 2 {
			if up := p.f.StepByID(path[1].Key); up != nil {
				return p.stepOrigins(up, depth+1)
			}
		}
		return []safety.Origin{safety.OriginInferred}
	default:
		if up := p.f.StepByID(root); up != nil {
			return p.stepOrigins(up, depth+1)
		}
		// an input field named without input.
		return []safety.Origin{safety.OriginUser}
	}
}

// stepOrigins is the origins of step s's output, its fallbacks included.
func (p *provenancer) stepOrigins(s *Step, depth int) []safety.Origin {
	var out []safety.Origin
	switch s.Type {
	case Tool:
		out = append(out, p.toolOrigin(s.Tool))
	case Approval:
		out = append(out, safety.OriginUser)
	default: // llm, route, plan: a model wrote it
		out = append(out, safety.OriginInferred)
	}
	if fb := s.Fallback; fb != nil {
		switch {
		case fb.Tool != "":
			out = append(out, p.toolOrigin(fb.Tool))
		case fb.Model != "":
			out = append(out, safety.OriginInferred)
		case fb.HasValue:
			out = append(out, safety.OriginConstant)
		}
	}
	if s.HasFallbackValue {
		out = append(out, safety.OriginConstant)
	}
	return out
}

func (p *provenancer) toolOrigin(name string) safety.Origin {
	sp := tool.Spec{Name: name}
	if p.spec != nil {
		if got, ok := p.spec(name); ok {
			sp = got
		}
	}
	return safety.ToolOrigin(&sp)
}
