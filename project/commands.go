package project

import (
	"maps"
	"slices"

	"github.com/reinhq/rein/flow"
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
	var out []flow.Diagnostic
	for _, name := range slices.Sorted(maps.Keys(p.execTools)) {
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
