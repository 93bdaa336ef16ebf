package workflowtool

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// AgentTools returns a project.LoadOptions.Workflow that makes the
// workflow tool of each folder an agent declares (a tools: entry with
// workflow: FOLDER), its tasks kept in st: New(path, …).Tool(). Each such
// flow is loaded with TrustedToolsOnly as trusted says and otherwise what
// sits beside it, and the workflow tools its own agents declare are made
// the same way. Its error names the folder: "workflow tool of PATH: …".
func AgentTools(st store.Store, trusted bool) func(path string) (tool.Tool, error) {
	return AgentToolsHiding(st, trusted, nil)
}

// AgentToolsHiding is AgentTools whose flows are loaded with red as their
// LoadOptions.Redactor: red's secrets (a server's other folders') hide in
// their tasks too, besides each flow's own.
func AgentToolsHiding(st store.Store, trusted bool, red *redact.Redactor) func(path string) (tool.Tool, error) {
	load := &project.LoadOptions{TrustedToolsOnly: trusted, Redactor: red}
	load.Workflow = func(path string) (tool.Tool, error) {
		w, err := New(path, &Options{Store: st, Load: load})
		if err != nil {
			return nil, fmt.Errorf("workflow tool of %s: %w", path, err)
		}
		return w.Tool(), nil
	}
	return load.Workflow
}

// Declared returns a project.LoadOptions.Workflow for a program that
// loads a flow to start its runs elsewhere and calls no tool itself (rein
// run --temporal: the workers call the tools): each workflow tool an
// agent declares is made from its folder with the spec a served one has
// (New(path, …).Tool().Spec()), and its call fails with a business error.
// The folders are loaded as trusted says, the workflow tools their own
// agents declare made the same way.
func Declared(trusted bool) func(path string) (tool.Tool, error) {
	load := &project.LoadOptions{TrustedToolsOnly: trusted}
	load.Workflow = func(path string) (tool.Tool, error) {
		p, err := project.Load(path, load)
		if err != nil {
			return nil, fmt.Errorf("workflow tool of %s: %w", path, err)
		}
		defer p.Close()
		sp := spec(p.Flow)
		return tool.Func(sp, func(context.Context, any) (any, error) {
			return nil, fault.Errorf(fault.Business, "workflow tool %s: this program only declares it; a worker that serves the flow calls it", sp.Name)
		}), nil
	}
	return load.Workflow
}

// actions are a workflow tool's actions, in the order its schema and its
// errors list them.
var actions = []string{"start", "submit", "submit_from_source", "prepare_delivery", "status", "cancel"}

// Actions returns the actions a workflow tool performs (Request.Action),
// in the order its input schema lists them; the slice is the caller's.
func Actions() []string { return append([]string(nil), actions...) }
