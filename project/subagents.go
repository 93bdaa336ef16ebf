package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/tool"
)

// Agents as tools: an agent.yaml tools: entry, or an agent step's, with
// agent: FOLDER gives the agent the agent of that folder as a tool (a
// sub-agent). Load loads each folder (its agent.yaml with its own rein.yaml
// tools, models and script, as LoadAgent does) and registers a tool that
// is the agent (an agent.Definer), which the engine's agent loop runs as a
// sub-run of the call. The sub-agent's calls pass through the calling run's
// pipeline: its gate (joined with the folder's own rein.yaml policy:), keys
// and journal. A chain of agents that leads back
// to one on it, or nests deeper than agent.MaxAgentDepth, is refused at the
// entry that closes it before any is made. A resumed run loads the folders
// again from their paths (its flow text keeps them, absolute).

// agentEntries lists the agent: entries of f's agent steps, located in def
// (the agent.yaml f was written from) when it is set.
func agentEntries(f *flow.Flow, def *flow.AgentDef) []workflowEntry {
	return toolEntries(f, def, func(t *flow.AgentTool) bool { return t.Agent != "" })
}

// HandoffTool is the name of the tool a handoff to the agent of the folder
// named name is offered as.
func HandoffTool(name string) string { return "transfer_to_" + name }

// handoffEntries lists the handoffs: of f's agent steps (or of def) as
// entries of tools named HandoffTool(name), located where they are written.
func handoffEntries(f *flow.Flow, def *flow.AgentDef) []workflowEntry {
	var out []workflowEntry
	add := func(file, step string, hs []*flow.Handoff) {
		for _, h := range hs {
			out = append(out, workflowEntry{file: file, step: step, handoff: true, tool: &flow.AgentTool{Name: HandoffTool(h.Name), Agent: h.Agent, Pos: h.Pos}})
		}
	}
	if def != nil {
		add(def.File, "", def.Handoffs)
		return out
	}
	for _, s := range f.Steps {
		if s.Agent != nil {
			add(f.File, s.ID, s.Agent.Handoffs)
		}
	}
	return out
}

// bindAgents loads the agent folders of entries and registers each as the
// tool its entry names in p.Tools. Every problem is located at its entry
// (a cycle, too deep a chain, a folder that does not load, a name another
// tool has); the problems of a folder's own agent.yaml are located there.
func (p *Project) bindAgents(entries []workflowEntry, opts *LoadOptions) error {
	if len(entries) == 0 {
		return nil
	}
	var diags []flow.Diagnostic
	for _, e := range entries {
		t := e.tool
		dir := absPath(t.Agent)
		chain := append(slices.Clone(opts.agentChain), dir)
		if e.handoff && slices.Contains(opts.agentChain, dir) && dir != opts.agentChain[len(opts.agentChain)-1] {
			// a handoff to an agent on the chain hands the conversation
			// back to it (agent.Definition.Back), bounded by max_handoffs.
			if err := p.registerBack(e, dir); err != nil {
				diags = append(diags, e.diag("tool %s: agent %s does not load: %v", t.Name, t.Agent, err))
			}
			continue
		}
		if slices.Contains(opts.agentChain, dir) {
			diags = append(diags, e.diag("tool %s: agent %s calls itself (%s): an agent cannot call itself, directly or through others", t.Name, t.Agent, strings.Join(chain, " -> ")))
			continue
		}
		if len(chain) > agent.MaxAgentDepth {
			diags = append(diags, e.diag("tool %s: agents called as tools nest %d deep here (%s), more than %d", t.Name, len(chain), strings.Join(chain, " -> "), agent.MaxAgentDepth))
			continue
		}
		if prev, taken := p.Tools.Lookup(t.Name); taken {
			if at, ok := prev.(*subAgentTool); ok && at.def.Path == dir {
				continue // two agent steps of one flow name it
			}
			diags = append(diags, e.diag("tool %s: another tool (Go, exec, MCP or workflow) has this name: rename one of them", t.Name))
			continue
		}
		sub, err := p.loadSubAgent(dir, chain, opts)
		if err != nil {
			var fe *flow.Error
			if errors.As(err, &fe) {
				diags = append(diags, fe.Diagnostics...)
				diags = append(diags, e.diag("tool %s: agent %s does not load (its problems are listed above)", t.Name, t.Agent))
				continue
			}
			diags = append(diags, e.diag("tool %s: agent %s does not load: %v", t.Name, t.Agent, err))
			continue
		}
		if err := p.Tools.Register(&subAgentTool{name: t.Name, def: sub}); err != nil {
			return err
		}
	}
	if len(diags) > 0 {
		return &flow.Error{Diagnostics: diags}
	}
	return nil
}

// registerBack registers the handoff of entry e to the agent folder dir,
// which is on the chain of agents that leads here, as a hand-back to it.
func (p *Project) registerBack(e workflowEntry, dir string) error {
	if prev, taken := p.Tools.Lookup(e.tool.Name); taken {
		if at, ok := prev.(*subAgentTool); ok && at.def.Path == dir {
			return nil
		}
		return fmt.Errorf("another tool (Go, exec, MCP or workflow) has the name %s: rename one of them", e.tool.Name)
	}
	def, err := flow.LoadAgent(filepath.Join(dir, flow.AgentFile))
	if err != nil {
		return err
	}
	name := def.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	return p.Tools.Register(&subAgentTool{name: e.tool.Name, def: &agent.Definition{Name: name, Path: dir, Description: def.Description, Back: true}})
}

// loadSubAgent loads the agent folder dir (chain: the agent folders that
// lead to it, dir last) as a Definition: its model, instructions, tools,
// output schema and budgets, from its own folder's rein.yaml and script.
func (p *Project) loadSubAgent(dir string, chain []string, opts *LoadOptions) (*agent.Definition, error) {
	def, err := flow.LoadAgent(filepath.Join(dir, flow.AgentFile))
	if err != nil {
		return nil, err
	}
	o := *opts
	// its own folder's rein.yaml and script.yaml, also for a resumed run
	o.Config, o.Script, o.NoDefaults, o.flowText, o.flowFiles, o.agent = "", "", false, nil, nil, nil
	o.agentChain = chain
	sp, err := LoadAgent(dir, &o)
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, sp.Close)
	if err := p.pinAgent(dir, sp); err != nil {
		return nil, err
	}
	p.addSubModels(sp)
	// its rein.yaml's secrets are hidden in this project's runs too: its
	// calls are journaled there.
	p.redactor = p.Redactor().Join(sp.Redactor())
	s := sp.Flow.StepByID(AgentStep)
	m, err := sp.Models.Lookup(s.Model)
	if err != nil {
		return nil, err
	}
	a := s.Agent
	tools := make([]agent.Tool, 0, len(a.Tools))
	for _, t := range a.Tools {
		tl, ok := sp.Tools.Lookup(t.Name)
		if !ok {
			return nil, fmt.Errorf("tool %s of agent %s is not registered", t.Name, dir)
		}
		tools = append(tools, agent.AsTool(tl, t.Approval))
	}
	for _, h := range a.Handoffs {
		tl, ok := sp.Tools.Lookup(HandoffTool(h.Name))
		if !ok {
			return nil, fmt.Errorf("handoff %s of agent %s is not registered", h.Name, dir)
		}
		t := agent.AsTool(tl, false)
		t.Handoff = h.History
		tools = append(tools, t)
	}
	var ep *agent.PlanOptions
	if !a.ExecutePlan.Disabled {
		ep = &agent.PlanOptions{MaxSteps: a.ExecutePlan.MaxSteps, AllowExternal: a.ExecutePlan.AllowExternal}
	}
	name := def.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	return &agent.Definition{Name: name, Path: dir, Description: def.Description, Gate: sp.CallGate(nil), Config: agent.Config{
		Model: m, ModelName: s.Model, Instructions: a.Instructions, Tools: tools, Output: s.OutputSchema, ExecutePlan: ep,
		ObservationLimit: a.MaxObservationBytes, MaxArgsBytes: a.MaxArgsBytes, Concurrency: a.Concurrency,
		Budgets: agent.Budgets{MaxTurns: a.Budgets.MaxTurns, MaxToolCalls: a.Budgets.MaxToolCalls, MaxTokens: a.Budgets.MaxTokens, MaxHandoffs: a.Budgets.MaxHandoffs, Timeout: a.Budgets.Timeout},
	}}, nil
}

// subAgentInput is the input schema of an agent called as a tool.
const subAgentInput = `{"type":"object","required":["task"],"additionalProperties":false,"properties":{"task":{"type":"string","minLength":1}}}`

// subAgentTool is an agent folder registered as a tool: an agent.Definer,
// which an agent loop runs as a sub-run. Called on its own (outside an
// agent loop: a flow's tool step, a plan) it refuses.
type subAgentTool struct {
	name string
	def  *agent.Definition
}

var _ agent.Definer = (*subAgentTool)(nil)

func (t *subAgentTool) Spec() tool.Spec {
	desc := t.def.Description
	if desc == "" {
		desc = "Ask the agent " + t.def.Name + " to do a task; it answers with its result."
	}
	return tool.Spec{Name: t.name, Description: desc, InputSchema: json.RawMessage(subAgentInput), Effect: tool.EffectNone, Idempotent: true}
}

func (t *subAgentTool) Call(context.Context, any) (any, error) {
	return nil, fault.Errorf(fault.Business, "tool %s is the agent %s: only an agent (agent.yaml tools:, or a type: agent step's) can call it", t.name, t.def.Path)
}

func (t *subAgentTool) AgentDefinition() *agent.Definition { return t.def }

// IsAgentTool reports whether t is an agent registered as a tool (an
// agent: entry): only an agent loop can call it, so a surface that serves
// a project's tools one by one (rein mcp) leaves it out.
func IsAgentTool(t tool.Tool) bool {
	_, ok := t.(agent.Definer)
	return ok
}
