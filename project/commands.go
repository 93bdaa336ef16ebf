package project

import (
	"maps"
	"slices"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
)

// CheckCommands checks that the program of every exec tool the project
// declares (the flow's tools: and its rein.yaml's) is there to run, as a
// call would resolve it: a relative path against the declaring file's
// folder, a bare name in PATH. Each tool whose program is missing, a
// directory or not executable gives one diagnostic located at its command;
// the result is empty when every program is in place. Load does not run
// this check, so that a flow loads (and a run resumes) on a host where a
// tool it will not call is missing; `rein validate` does.
func (p *Project) CheckCommands() []flow.Diagnostic {
	return p.checkCommands(func(string) bool { return true })
}

// CheckStart checks, before a run of p starts, what would otherwise fail
// only once the run is journaled: the program of every exec tool its steps
// may call (a tool step's, a fallback's, a plan's or an agent's tools, and
// the undo and compensate tools of those), as CheckCommands does, and that
// every model its steps may call opens (CheckModelsOpen: an API key that
// is not set). Exec tools the flow never calls (a shared rein.yaml's
// others) are not checked. The result is empty when the run can start;
// it makes no network call and changes nothing.
func (p *Project) CheckStart() []flow.Diagnostic {
	called := p.calledTools()
	return append(p.checkCommands(func(name string) bool { return called[name] }), p.CheckModelsOpen()...)
}

// calledTools are the names of the tools p's steps may call, with the
// undo and compensate tools of each.
func (p *Project) calledTools() map[string]bool {
	called := map[string]bool{}
	var add func(name string)
	add = func(name string) {
		if name == "" || called[name] {
			return
		}
		called[name] = true
		if t, ok := p.Tools.Lookup(name); ok {
			spec := t.Spec()
			for _, c := range []*tool.Compensation{spec.Undo, spec.Compensate} {
				if c != nil {
					add(c.Tool)
				}
			}
		}
	}
	for _, s := range p.Flow.Steps {
		add(s.Tool)
		if s.Fallback != nil {
			add(s.Fallback.Tool)
		}
		if s.PlanSpec != nil {
			for _, t := range s.PlanSpec.Tools {
				add(t)
			}
		}
		if s.Agent != nil {
			for _, t := range s.Agent.Tools {
				add(t.Name)
			}
		}
	}
	return called
}

// checkCommands is CheckCommands over the exec tools whose names want
// accepts.
func (p *Project) checkCommands(want func(name string) bool) []flow.Diagnostic {
	var out []flow.Diagnostic
	for _, name := range slices.Sorted(maps.Keys(p.execTools)) {
		if !want(name) {
			continue
		}
		d := p.execTools[name]
		t, ok := p.Tools.Lookup(name)
		if !ok {
			continue
		}
		c, ok := t.(interface{ Check() error })
		if !ok {
			continue
		}
		if err := c.Check(); err != nil {
			pos := d.CommandPos
			if pos.Line == 0 {
				pos = d.Pos
			}
			out = append(out, flow.Diagnostic{File: d.File, Line: pos.Line, Col: pos.Col, Message: err.Error()})
		}
	}
	return out
}
