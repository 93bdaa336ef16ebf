package mcp

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/tool"
)

// DefaultName is the name a Server gives clients when Options.Name is
// empty.
const DefaultName = "rein"

// Options configure a Server. A nil *Options serves no folder: only
// runs_list and runs_show, over a Client with a durable store.
type Options struct {
	// Dirs are the folders served: each a flow folder (it holds
	// flow.yaml) or a folder of flow folders (each subfolder that holds
	// one, in name order). Served: one workflow tool per flow,
	// <name>_workflow, its tasks runs of the Client's store; every tool
	// the flows can call (their rein.yaml's, their own tools: and the
	// tools of the MCP servers their rein.yaml names); and the workflow
	// tools their agents declare (workflow: FOLDER). A name two folders
	// give to different tools, or two flows give to their workflow tools,
	// is an error; a tool two folders share through one rein.yaml is
	// served once.
	Dirs []string
	// Tools are Go tools served besides the folders', decided by Gate
	// alone.
	Tools []tool.Tool
	// Load says how each flow is loaded (project.Load), the flows of the
	// served workflow tools too: the program's Go tools and models,
	// Config, Script, Model, Record/Replay, TrustedToolsOnly. Give what
	// the Client was opened with (rein.Config.Load). When its Workflow is
	// nil, the workflow tools agents declare are made over the Client's
	// store (workflowtool.AgentTools). Defaults to what each folder says.
	Load *project.LoadOptions
	// Loader loads one flow folder with o (Load, its Workflow set).
	// Defaults to project.Load; a program wraps it to check its own
	// settings first, or to report a folder's warnings. New returns its
	// error as it is.
	Loader func(path string, o *project.LoadOptions) (*project.Project, error)
	// Open opens the Client when New is given none. It is called at most
	// once, when the store is first needed: once every folder loaded, or
	// as the first workflow tool an agent declares is made. So a folder
	// that does not load opens no store. New returns its error as it is.
	// The Server does not close the Client: the caller does, once the
	// server is done or New failed.
	Open func(ctx context.Context) (*rein.Client, error)
	// Gate decides every served call before the policy rules of the
	// folders that offer the tool and safety.DefaultRules (safety.Join:
	// the most severe decision wins). Defaults to those rules alone.
	Gate safety.Gate
	// Redactor hides secrets in every answer, error and Log line, besides
	// what each folder's project hides (the environment's secrets and its
	// rein.yaml secrets:). Defaults to none beyond those; with no folder,
	// to the environment's (redact.Process()).
	Redactor *redact.Redactor
	// Name and Version describe the server to clients. Name defaults to
	// DefaultName.
	Name, Version string
	// Log receives one line per gate decision other than allow on a
	// served call (GateLog; the call's record, in the ledger run, holds it
	// too, and the client gets the refusal as the call's error), and one
	// per record the ledger could not commit. Defaults to none.
	Log io.Writer
	// LogPrefix starts each Log line. Defaults to Name.
	LogPrefix string
}

// New loads the folders of opts.Dirs and returns a Server of their tools
// and opts.Tools, with the read-only runs_list and runs_show over c's runs
// (c.Runs()). c keeps the tasks of the workflow tools; it may be nil when
// opts.Open opens it, or when no folder is served (then runs_list and
// runs_show are not either). Serving a folder needs a Client with a
// durable store.
//
// Every call goes through the invocation pipeline, decided by the gate of
// each folder that offers the tool (project.Project.CallGate: its
// rein.yaml policy: joined with the flow's policy:), after opts.Gate, and
// by safety.DefaultRules. An MCP client is a model's host, so every leaf of
// a call's arguments has provenance inferred (safety.Inferred), except a
// workflow tool's: its action drives its task, whose steps meet the gate
// with their own provenance, so rules naming the workflow tool decide the
// action itself; but a start's input, which the task would count as its
// user's, is inferred when the flow hands it to a side effect. A call held
// for a person is asked of the host's user (doc.go). With a Client of a
// durable store, every call is journaled in the Server's ledger run.
//
// Errors: opts.Loader's and opts.Open's as they are; otherwise an error
// saying which folder or tool is at fault and what to do (its text starts
// with "mcp: " where it names neither). On error, New closes the projects
// it loaded.
func New(ctx context.Context, c *rein.Client, opts *Options) (srv *Server, err error) {
	if opts == nil {
		opts = &Options{}
	}
	a := &assembly{ctx: ctx, client: c, open: opts.Open, inert: map[string]bool{}}
	defer func() {
		if err != nil {
			for _, p := range a.projects {
				p.Close()
			}
		}
	}()
	load := project.LoadOptions{}
	if opts.Load != nil {
		load = *opts.Load
	}
	if load.Workflow == nil {
		// The workflow tools an agent declares are made while its folder
		// loads: every folder's secrets are joined first, so their tasks
		// hide them all too.
		red := load.Redactor
		for _, d := range opts.Dirs {
			red = red.Join(project.FolderRedactor(d, &load))
		}
		trusted := load.TrustedToolsOnly
		load.Workflow = func(path string) (tool.Tool, error) {
			c, err := a.clientFor()
			if err != nil {
				return nil, err
			}
			return workflowtool.AgentToolsHiding(c.Store(), trusted, red)(path)
		}
	}
	loader := opts.Loader
	if loader == nil {
		loader = project.Load
	}
	tools, err := a.load(opts.Dirs, &load, loader)
	if err != nil {
		return nil, err
	}
	// every folder's secrets hide in the runs of every served workflow tool
	for _, p := range a.projects {
		load.Redactor = load.Redactor.Join(p.Redactor())
	}
	if len(a.projects) > 0 || a.client != nil {
		if tools, err = a.withRuns(tools, &load); err != nil {
			return nil, err
		}
	}
	tools = append(tools, opts.Tools...)

	hide := a.hider(opts.Redactor)
	name := opts.Name
	if name == "" {
		name = DefaultName
	}
	// the default rules hold for every served call, whatever the folders'
	// policy: says: a host's arguments are its model's. Among decisions of
	// equal weight the folders' rules are named.
	defaults := &safety.Policy{Rules: safety.DefaultRules()}
	cfg := config{name: name, version: opts.Version, redact: hide, prov: a.provenance, routes: a.routes(),
		pipeline: &invoke.Pipeline{Gate: safety.Join(opts.Gate, safety.ByTool(a.gates), defaults)}}
	if a.client != nil && a.client.Runs() != nil {
		red := load.Redactor
		if len(a.projects) == 0 {
			red = redact.Process()
		}
		in := ledgerInput{Server: name}
		for _, p := range a.paths {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			in.Folders = append(in.Folders, p)
		}
		cfg.ledger = newLedger(a.client.Store(), red.Join(opts.Redactor), in)
	}
	if opts.Log != nil {
		prefix := opts.LogPrefix
		if prefix == "" {
			prefix = name
		}
		cfg.recorder = &GateLog{W: opts.Log, Prefix: prefix, Hide: hide}
	}
	srv, err = newServer(tools, cfg)
	if err != nil {
		return nil, err
	}
	srv.projects = a.projects
	return srv, nil
}

// assembly is what New builds up: the projects, each tool's gate, the
// workflow tools, and the Client once it is opened.
type assembly struct {
	ctx context.Context
	// mu guards client: a served workflow tool's flow may load a pinned
	// flow whose agents declare workflow tools while other calls run.
	mu       sync.Mutex
	client   *rein.Client
	open     func(context.Context) (*rein.Client, error)
	projects []*project.Project
	paths    []string
	// gates decide each served tool's calls; workflow names the workflow
	// tools (served and declared by agents).
	gates    map[string]safety.Gate
	workflow map[string]bool
	// inert names the served workflow tools whose flows hand their input
	// to no side effect (inputDrivesEffect).
	inert map[string]bool
}

// errNoClient is New's error when a folder is served without a Client.
var errNoClient = errors.New("mcp: serving flow folders needs a Client with a durable store (New's c, or Options.Open): their workflow tools keep their tasks in it")

// clientFor returns the Client, opening it with open on first use.
func (a *assembly) clientFor() (*rein.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil {
		if a.open == nil {
			return nil, errNoClient
		}
		c, err := a.open(a.ctx)
		if err != nil {
			return nil, err
		}
		a.client, a.open = c, nil
	}
	return a.client, nil
}

// withRuns adds to tools (the folders') the workflow tool of each folder,
// first, and runs_list and runs_show, last, over the Client, which it
// opens.
func (a *assembly) withRuns(tools []tool.Tool, load *project.LoadOptions) ([]tool.Tool, error) {
	c, err := a.clientFor()
	if err != nil {
		return nil, err
	}
	reader := c.Runs()
	if reader == nil && len(a.projects) > 0 {
		return nil, errNoClient
	}
	if reader == nil { // a Client of runs in memory: nothing to list
		return tools, nil
	}
	if len(a.projects) > 0 {
		wf, err := workflowTools(a.paths, c.Store(), load)
		if err != nil {
			return nil, err
		}
		for k, w := range wf { // a workflow tool is decided by its flow's gate too
			name := w.Spec().Name
			a.gates[name] = safety.Join(a.gates[name], a.projects[k].CallGate(nil))
			a.workflow[name] = true
			a.inert[name] = !inputDrivesEffect(a.projects[k])
		}
		if tools, err = withoutServedWorkflows(tools, wf, a.projects, a.paths); err != nil {
			return nil, err
		}
		tools = append(wf, tools...)
	}
	return append(tools, runsTools(reader)...), nil
}

// provenance is where a served call's arguments came from: inferred,
// every leaf, except for a workflow tool's (New), whose action drives its
// task: there only a start's input is the host's model's, inferred — the
// task would count it as its user's — unless the flow is known to drive
// no side effect with its input (inert).
func (a *assembly) provenance(spec *tool.Spec, args any) safety.Provenance {
	if !a.workflow[spec.Name] {
		if empty(args) {
			return nil // the model wrote nothing
		}
		return safety.Inferred(args)
	}
	m, _ := args.(map[string]any)
	if in := m["input"]; !empty(in) && m["action"] == "start" && !a.inert[spec.Name] {
		return safety.Provenance{"/input": {safety.OriginInferred}}
	}
	return nil
}

// empty reports whether v holds no value a model could have written: null,
// {} or [].
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// ledgerInput is the input of a Server's ledger run: who served what
// (the folders by absolute path).
type ledgerInput struct {
	Server  string   `json:"server"`
	Folders []string `json:"folders,omitempty"`
}

// routes says, for each tool of a served folder, the folder a person may
// run instead of the call (its first).
func (a *assembly) routes() map[string]string {
	out := map[string]string{}
	for k, p := range a.projects {
		names := p.Tools.Names()
		if p.Flow != nil {
			names = append(names, workflowtool.ToolName(p.Flow))
		}
		for _, n := range names {
			if _, ok := out[n]; !ok {
				out[n] = a.paths[k]
			}
		}
	}
	return out
}

// inputDrivesEffect reports whether p's flow hands its input to a tool
// with a side effect (write, external, destructive): a tool step's or a
// fallback tool's args made from it (flow.ArgProvenance: user).
func inputDrivesEffect(p *project.Project) bool {
	f := p.Flow
	spec := func(name string) (tool.Spec, bool) {
		if t, ok := p.Tools.Lookup(name); ok {
			return t.Spec(), true
		}
		return tool.Spec{}, false
	}
	side := func(name string) bool {
		sp, ok := spec(name)
		return !ok || sp.Effect == tool.EffectWrite || sp.Effect == tool.EffectExternal || sp.Effect == tool.EffectDestructive
	}
	fromUser := func(prov safety.Provenance) bool {
		_, _, ok := prov.Has(func(o safety.Origin) bool { return o == safety.OriginUser })
		return ok
	}
	for _, s := range f.Steps {
		if s.Type == flow.Tool && side(s.Tool) && fromUser(flow.ArgProvenance(f, s, false, spec)) {
			return true
		}
		if fb := s.Fallback; fb != nil && fb.Tool != "" && side(fb.Tool) && fromUser(flow.ArgProvenance(f, s, true, spec)) {
			return true
		}
	}
	return false
}

// hider hides what every project's redactor knows (the environment's
// secrets and its own rein.yaml secrets:) and what extra does; with
// neither, the environment's secrets.
func (a *assembly) hider(extra *redact.Redactor) func(string) string {
	if len(a.projects) == 0 && extra == nil {
		return redact.Process().String
	}
	projects := a.projects
	return func(text string) string {
		for _, p := range projects {
			text = p.Redactor().String(text)
		}
		if extra != nil {
			text = extra.String(text)
		}
		return text
	}
}
