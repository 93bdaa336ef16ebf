package project

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/tool"
)

// Workflow tools of agents: an agent.yaml tools: entry, or an agent step's,
// with workflow: FOLDER gives the agent the workflow tool of the flow in
// FOLDER, which LoadOptions.Workflow makes. Load makes and registers them
// after the flow parses; a durable run pins each one's folder and the
// sha256 of its flow.yaml (RunMeta.Workflows) and its flow text keeps the
// entries, so LoadRun makes them again. A chain of workflow tools that
// leads back to a flow on it is refused before any is made.

// PinnedWorkflow is a workflow tool a run's agents were given.
type PinnedWorkflow struct {
	// Tool is the tool's name, <flow name>_workflow.
	Tool string `json:"tool"`
	// Path is the flow folder, absolute.
	Path string `json:"path"`
	// SHA256 is the hex sha256 of the folder's flow.yaml when the run
	// started.
	SHA256 string `json:"sha256"`
}

// maxWorkflowChain bounds the flows the cycle check reads from one load.
const maxWorkflowChain = 64

// workflowEntry is a workflow: entry of an agent's tools, where it is
// written.
type workflowEntry struct {
	file string
	step string // the agent step's id; "" in agent.yaml
	tool *flow.AgentTool
	// handoff marks a handoffs: entry (its tool is transfer_to_<name>).
	handoff bool
}

func (e workflowEntry) diag(format string, args ...any) flow.Diagnostic {
	return flow.Diagnostic{File: e.file, Line: e.tool.Pos.Line, Col: e.tool.Pos.Col, Step: e.step, Message: fmt.Sprintf(format, args...)}
}

// workflowEntries lists the workflow: entries of f's agent steps, located
// in def (the agent.yaml f was written from) when it is set.
func workflowEntries(f *flow.Flow, def *flow.AgentDef) []workflowEntry {
	return toolEntries(f, def, func(t *flow.AgentTool) bool { return t.Workflow != "" })
}

// toolEntries lists the tool entries of f's agent steps that keep holds
// for, located in def (the agent.yaml f was written from) when it is set.
func toolEntries(f *flow.Flow, def *flow.AgentDef, keep func(*flow.AgentTool) bool) []workflowEntry {
	var out []workflowEntry
	if def != nil {
		for _, t := range def.Tools {
			if keep(t) {
				out = append(out, workflowEntry{file: def.File, tool: t})
			}
		}
		return out
	}
	for _, s := range f.Steps {
		if s.Agent == nil {
			continue
		}
		for _, t := range s.Agent.Tools {
			if keep(t) {
				out = append(out, workflowEntry{file: f.File, step: s.ID, tool: t})
			}
		}
	}
	return out
}

// bindWorkflows makes the workflow tools of entries through opts.Workflow
// and registers them in p.Tools; from is the file being loaded (a flow
// file or an agent.yaml). Every problem is located at its entry: a cycle
// of workflow tools, no LoadOptions.Workflow, a flow that does not load, a
// tool named otherwise than its entry, a name another tool has.
func (p *Project) bindWorkflows(from string, entries []workflowEntry, opts *LoadOptions) error {
	if len(entries) == 0 {
		return nil
	}
	var diags []flow.Diagnostic
	for _, e := range entries {
		if msg := workflowCycle(from, e); msg != "" {
			diags = append(diags, e.diag("tool %s: %s", e.tool.Name, msg))
		}
	}
	if len(diags) > 0 {
		return &flow.Error{Diagnostics: diags}
	}
	for _, e := range entries {
		t := e.tool
		if opts.Workflow == nil {
			diags = append(diags, e.diag("tool %s declares the workflow %s, but this program serves no workflow tools (rein agent, chat, run, runs, worker, mcp and tool do; in Go, set LoadOptions.Workflow)", t.Name, t.Workflow))
			continue
		}
		sum, err := flowDigest(t.Workflow)
		if err != nil {
			diags = append(diags, e.diag("tool %s: workflow %s: %v", t.Name, t.Workflow, err))
			continue
		}
		wt, err := opts.Workflow(t.Workflow)
		if err != nil {
			diags = append(diags, e.diag("tool %s: workflow %s does not load: %v", t.Name, t.Workflow, err))
			continue
		}
		name := wt.Spec().Name
		if name != t.Name {
			diags = append(diags, e.diag("tool %s: the workflow %s serves the tool %q: name the entry %s", t.Name, t.Workflow, name, name))
			continue
		}
		if _, taken := p.Tools.Lookup(name); taken {
			if p.hasWorkflow(name, t.Workflow) {
				continue // two agent steps of one flow name it
			}
			diags = append(diags, e.diag("tool %s: another tool (Go, exec, MCP or another workflow) has this name: rename one of them", name))
			continue
		}
		if err := p.Tools.Register(wt); err != nil {
			return err
		}
		p.workflows = append(p.workflows, PinnedWorkflow{Tool: name, Path: absPath(t.Workflow), SHA256: sum})
	}
	if len(diags) > 0 {
		return &flow.Error{Diagnostics: diags}
	}
	return nil
}

// Workflows lists the workflow tools the project's agents were given
// (workflow: entries), in the order they were declared.
func (p *Project) Workflows() []PinnedWorkflow { return slices.Clone(p.workflows) }

func (p *Project) hasWorkflow(name, path string) bool {
	for _, w := range p.workflows {
		if w.Tool == name && w.Path == absPath(path) {
			return true
		}
	}
	return false
}

// flowDigest is the hex sha256 of the flow.yaml in dir.
func flowDigest(dir string) (string, error) {
	data, err := yamlnode.ReadFile(filepath.Join(dir, FlowFile), flow.MaxFileBytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// workflowCycle follows e's workflow, and the workflow tools of that
// flow's agent steps, and so on, and describes the first chain that comes
// back to a flow on it (or to from): "" when none does. A flow that does
// not parse ends its chain (loading it reports why).
func workflowCycle(from string, e workflowEntry) string {
	type link struct {
		dir  string
		via  string // how the chain got here: "file:line:col tool <name>" of the entry
		step string
	}
	start := absPath(filepath.Dir(from))
	read := map[string][]workflowEntry{}
	var found []link
	var walk func(chain []link) bool
	walk = func(chain []link) bool {
		last := chain[len(chain)-1]
		for _, l := range chain[:len(chain)-1] {
			if l.dir == last.dir {
				found = chain
				return true
			}
		}
		refs, ok := read[last.dir]
		if !ok {
			if len(read) >= maxWorkflowChain {
				return false
			}
			refs = flowWorkflows(last.dir)
			read[last.dir] = refs
		}
		for _, r := range refs {
			next := append(chain[:len(chain):len(chain)], link{dir: absPath(r.tool.Workflow), step: r.step,
				via: fmt.Sprintf("%s:%d:%d tool %s", r.file, r.tool.Pos.Line, r.tool.Pos.Col, r.tool.Name)})
			if walk(next) {
				return true
			}
		}
		return false
	}
	first := link{dir: absPath(e.tool.Workflow), step: e.step, via: fmt.Sprintf("tool %s", e.tool.Name)}
	if !walk([]link{{dir: start}, first}) {
		return ""
	}
	var b strings.Builder
	b.WriteString("a cycle of workflow tools: ")
	b.WriteString(from)
	for _, l := range found[1:] {
		fmt.Fprintf(&b, " → (%s) %s", l.via, filepath.Join(l.dir, FlowFile))
	}
	b.WriteString(": a flow cannot reach itself through its agents' workflow tools; remove one of these entries")
	return b.String()
}

// absPath is path made absolute and clean.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return filepath.Clean(path)
}

// flowWorkflows reads the flow in dir, tools and models taken as given,
// and lists its agent steps' workflow: entries; none when it does not
// parse.
func flowWorkflows(dir string) []workflowEntry {
	f, err := flow.Load(filepath.Join(dir, FlowFile), &flow.Options{
		Tools:  func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true },
		Models: func(string) bool { return true },
	})
	if err != nil {
		return nil
	}
	return workflowEntries(f, nil)
}

// samePinnedWorkflows checks that a resumed run's workflow tools (now)
// serve the flows it started with (pinned).
func samePinnedWorkflows(pinned, now []PinnedWorkflow) error {
	for _, w := range pinned {
		i := slices.IndexFunc(now, func(n PinnedWorkflow) bool { return n.Tool == w.Tool })
		switch {
		case i < 0:
			return fmt.Errorf("its agents had the workflow tool %s (of %s), which its flow no longer gives them", w.Tool, w.Path)
		case now[i].SHA256 != w.SHA256:
			return fmt.Errorf("the workflow tool %s serves %s, whose flow.yaml changed since the run started (sha256 %s, now %s): put the flow back as it was to resume the run, or cancel it (rein runs cancel)",
				w.Tool, filepath.Join(w.Path, FlowFile), shortSum(w.SHA256), shortSum(now[i].SHA256))
		}
	}
	return nil
}
