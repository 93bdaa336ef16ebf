package project

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/provider"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/redact/seal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
)

// Files a flow folder may hold beside flow.yaml.
const (
	FlowFile   = "flow.yaml"
	InputFile  = "input.json"
	ScriptFile = "script.yaml"
	ConfigFile = "rein.yaml"
)

// LoadOptions say where Load finds what a flow needs. Every field may be
// left zero.
type LoadOptions struct {
	// Config is a rein.yaml to use. Defaults to rein.yaml beside the flow,
	// if there is one.
	Config string
	// Script is a scripted-model script answering every model name.
	// Defaults to script.yaml beside the flow, if there is one.
	Script string
	// NoDefaults turns off picking up rein.yaml and script.yaml beside the flow.
	NoDefaults bool
	// Tools are Go tools the program provides, in addition to the exec tools
	// of the flow and the config.
	Tools []tool.Tool
	// Models binds model names to Models; a scripted Script answers the rest.
	Models map[string]model.Model
	// Fallback, when set, answers every model name nothing else answers
	// (rein test's values generated from the steps' output schemas), so a
	// flow whose models are not configured loads. A script answers every
	// name, so with one Fallback answers none. The agents a flow calls
	// (agent: tools, handoffs) are loaded with it too.
	Fallback model.Model
	// Model, when set, answers every model name of the flow: a rein.yaml
	// models: name or provider/model (the CLI's --model).
	Model string
	// Record writes every model exchange to this cassette file (on Close);
	// Replay answers every model call from one, failing on a request it
	// does not hold.
	Record, Replay string
	// Getenv reads API keys; defaults to os.Getenv.
	Getenv func(string) string
	// TrustedToolsOnly refuses a flow that declares tools: of its own (exec
	// tools run commands, so such a flow is code): tools then come only
	// from the rein.yaml and Tools. A resumed run is refused too when its
	// pinned flow declares tools. See flow.Options.TrustedToolsOnly.
	TrustedToolsOnly bool
	// Workflow makes the workflow tool of the flow folder at path, for an
	// agent's tools: entry with workflow: (in agent.yaml, or an agent step
	// of the flow); package workflowtool makes them (workflowtool.New(path, …).Tool()),
	// and for a workflow whose own agents have workflow tools, its
	// LoadOptions need Workflow too. Nil refuses such entries, and LoadRun
	// a run that has them.
	Workflow func(path string) (tool.Tool, error)
	// Redactor hides secrets besides the project's own (the environment's
	// and its rein.yaml's): a process that serves several folders (rein
	// mcp) joins every folder's here, so a run of one folder hides the
	// secrets of the others too. Project.Redactor, the engine and the
	// Client's decisions on runs loaded with these options use it. Nil
	// adds none.
	Redactor *redact.Redactor
	// Cache keeps the flows parsed from runs' pinned text (LoadPinned,
	// LoadRun), shared by every load given it: a pinned flow parses once
	// per Cache. Nil parses every time. A rein.Client makes one unless its
	// Config.Load brings one.
	Cache *Cache

	// flowText, when set, is parsed instead of reading the flow file, and
	// flowFiles are read instead of the files on disk (a resumed run's
	// pinned flow).
	flowText  []byte
	flowFiles map[string][]byte
	// agent, with flowText, is the agent.yaml the flow was written from
	// (LoadAgent): its tools and model are checked, located, in it.
	agent *flow.AgentDef
	// agentChain are the agent folders (absolute) whose agents lead to
	// this load through agent: tools, the folder being loaded last when
	// it is one (subagents.go).
	agentChain []string
}

// Project is a validated flow with its tools and models, ready to run.
type Project struct {
	Flow   *flow.Flow
	Tools  *tool.Registry
	Models *model.Registry
	// Script is the scripted model, when one was loaded.
	Script *scripted.Model
	// Gate is the policy gate of rein.yaml policy:, or nil when it has
	// none (every call is allowed). Engine uses it unless its Config
	// brings a gate of its own.
	Gate *safety.Policy
	// Risk and Review are rein.yaml risk: and review: (nil when it has
	// none), for flows without their own; Engine passes them on unless its
	// Config brings its own.
	Risk   *safety.RiskConfig
	Review *safety.ReviewConfig
	// Dir is the flow's folder; InputPath the input.json found there, or "".
	Dir       string
	InputPath string
	// ConfigPath and ScriptPath are the files that were used, or "".
	ConfigPath string
	ScriptPath string

	// execTools are the exec tool declarations the tools came from.
	execTools map[string]*flow.ToolDecl

	getenv   func(string) string
	redactor *redact.Redactor
	codec    *seal.Codec // rein.yaml encryption:, or nil
	config   *flow.Config
	atRest   []flow.Diagnostic
	goTools  []string // the Go tools (LoadOptions.Tools) the flow names, sorted
	// workflows are the workflow tools of the flow's agents (workflows.go).
	workflows []PinnedWorkflow
	// agents are the agent folders its agents call or hand over to
	// (agentpins.go).
	agents []PinnedAgent
	// subModels are the rein.yaml models: of those agent folders, for
	// pricing their calls (SpendModels).
	subModels map[string]*flow.ModelDecl
	model     string // LoadOptions.Model
	// presets are the provider presets of the rein.yaml models: entries
	// that answer their names (ModelProvider).
	presets map[string]provider.Preset
	// recorded holds the models a cassette recorder wraps (Record).
	recorded *model.Registry
	refs     bool // provider/model references resolve
	closers  []func() error
}

// Load reads the flow at path (a flow file, or a folder holding flow.yaml;
// an agent folder, holding agent.yaml and no flow.yaml, loads as LoadAgent
// does), its rein.yaml and script, and validates everything. A *flow.Error lists
// every problem in the flow; other errors name the file that failed.
func Load(path string, opts *LoadOptions) (*Project, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	if opts.flowText == nil && IsAgentDir(path) {
		return LoadAgent(path, opts) // an agent folder: its agent.yaml as a one-step flow
	}
	p := &Project{Tools: &tool.Registry{}, Models: &model.Registry{}}
	loaded := false
	defer func() {
		if !loaded {
			p.Close() // the MCP sessions and the cassette recorder opened so far
		}
	}()
	flowPath, isDir, err := path, false, error(nil)
	if opts.flowText == nil {
		if flowPath, isDir, err = resolveFlowPath(path); err != nil {
			return nil, err
		}
	}
	p.Dir = filepath.Dir(flowPath)
	if isDir && exists(filepath.Join(p.Dir, InputFile)) {
		p.InputPath = filepath.Join(p.Dir, InputFile)
	}
	p.ConfigPath = opts.Config
	if p.ConfigPath == "" && !opts.NoDefaults && exists(filepath.Join(p.Dir, ConfigFile)) {
		p.ConfigPath = filepath.Join(p.Dir, ConfigFile)
	}
	p.ScriptPath = opts.Script
	if p.ScriptPath == "" && !opts.NoDefaults && opts.Model == "" && opts.Replay == "" && exists(filepath.Join(p.Dir, ScriptFile)) {
		p.ScriptPath = filepath.Join(p.Dir, ScriptFile)
	}
	for name, m := range opts.Models {
		p.Models.Register(name, m)
	}
	if p.ScriptPath != "" {
		if p.Script, err = scripted.Load(p.ScriptPath); err != nil {
			return nil, err
		}
		p.Models.SetFallback(p.Script)
	}
	if opts.Fallback != nil && p.Script == nil {
		p.Models.SetFallback(opts.Fallback)
	}
	for _, t := range opts.Tools {
		if err := p.Tools.Register(t); err != nil {
			return nil, err
		}
	}
	var cfg *flow.Config
	if p.ConfigPath != "" {
		if cfg, err = opts.Cache.loadConfig(p.ConfigPath); err != nil {
			return nil, err
		}
	}
	if err := p.setupModels(opts, cfg, opts.Script != ""); err != nil {
		return nil, err
	}
	codec, keyText, err := loadCodec(cfg, p.getenv)
	if err != nil {
		return nil, err
	}
	p.codec, p.config = codec, cfg
	p.redactor = secrets(cfg, p.getenv).With(keyText...).Join(opts.Redactor)
	mcpTools, err := p.connectMCP(cfg)
	if err != nil {
		return nil, err
	}
	fopts := &flow.Options{
		Tools: func(name string) (tool.Spec, bool) {
			if t, ok := p.Tools.Lookup(name); ok {
				// only Go tools are registered while the flow parses.
				if i, found := slices.BinarySearch(p.goTools, name); !found {
					p.goTools = slices.Insert(p.goTools, i, name)
				}
				return t.Spec(), true
			}
			if cfg != nil {
				if d, ok := cfg.Tools[name]; ok {
					return d.Spec(), true
				}
			}
			if t, ok := mcpTools[name]; ok {
				return t.Spec(), true
			}
			return tool.Spec{}, false
		},
		Models:           p.hasModel,
		TrustedToolsOnly: opts.TrustedToolsOnly,
	}
	if cfg != nil {
		fopts.Defaults = cfg.Defaults
	}
	fromDisk := false
	if opts.flowFiles != nil {
		fopts.ReadFile = func(path string) ([]byte, error) {
			if b, ok := opts.flowFiles[path]; ok {
				return b, nil
			}
			fromDisk = true
			return yamlnode.ReadFile(path, flow.MaxFileBytes)
		}
	}
	if opts.agent != nil {
		if err := checkAgent(opts.agent, fopts); err != nil {
			return nil, err
		}
	}
	switch {
	case opts.flowText != nil && opts.flowFiles != nil && opts.agent == nil:
		// a resumed run's pinned flow: parsed once per process (pinned.go).
		p.Flow, err = opts.Cache.parsePinned(opts.flowText, flowPath, opts.flowFiles, fopts, func() bool { return fromDisk })
	case opts.flowText != nil:
		p.Flow, err = flow.Parse(opts.flowText, flowPath, fopts)
	default:
		p.Flow, err = flow.Load(flowPath, fopts)
	}
	if err != nil {
		return nil, err
	}
	p.bindRefs()
	// Exec tools: the flow's own declarations win over the config's.
	decls := map[string]*flow.ToolDecl{}
	if cfg != nil {
		maps.Copy(decls, cfg.Tools)
	}
	maps.Copy(decls, p.Flow.Tools)
	p.execTools = decls
	if err := registerExecTools(p.Tools, decls); err != nil {
		return nil, err
	}
	if err := registerMCPTools(p.Tools, mcpTools); err != nil {
		return nil, err
	}
	if err := p.bindWorkflows(flowPath, workflowEntries(p.Flow, opts.agent), opts); err != nil {
		return nil, err
	}
	if err := p.bindAgents(append(agentEntries(p.Flow, opts.agent), handoffEntries(p.Flow, opts.agent)...), opts); err != nil {
		return nil, err
	}
	if err := flow.CheckEffects(p.Tools, decls, cfgMCP(cfg)); err != nil {
		return nil, err
	}
	if cfg != nil && cfg.Policy != nil {
		p.Gate = cfg.Policy.Policy()
	}
	if cfg != nil && cfg.Risk != nil {
		p.Risk = &cfg.Risk.Risk
	} else if cfg != nil && cfg.Policy.WantsTiers() {
		p.Risk = &safety.RiskConfig{} // the default rules read the tier
	}
	if cfg != nil && cfg.Review != nil {
		p.Review = &cfg.Review.Review
	}
	if opts.Record != "" {
		if err := p.record(opts.Record); err != nil {
			return nil, err
		}
	}
	if p.codec == nil {
		p.atRest = atRestWarnings(p.Flow, decls, cfg)
	}
	loaded = true
	return p, nil
}

// ExecTool builds the exec tool a declaration describes. A declaration
// without a timeout gets flow.DefaultToolTimeout.
func ExecTool(d *flow.ToolDecl) (tool.Tool, error) {
	cfg := exec.Config{Name: d.Name, Description: d.Description, Command: d.Command, Dir: d.Dir, Env: d.Env, PassEnv: d.PassEnv,
		Timeout: cmp.Or(d.Timeout, flow.DefaultToolTimeout), MaxOutputBytes: d.MaxOutput, Effect: d.Effect, Reversibility: d.Reversibility, Idempotent: d.Idempotent,
		Undo: d.Undo, Compensate: d.Compensate, Resources: d.Resources, Tags: d.Tags, Verifies: d.Verifies, Check: d.Check,
		Premise: d.Premise.ToolPremise()}
	if d.InputSchema != nil {
		cfg.InputSchema = d.InputSchema.JSON()
	}
	if d.OutputSchema != nil {
		cfg.OutputSchema = d.OutputSchema.JSON()
	}
	t, err := exec.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s:%d:%d: tool %s: %w", d.File, d.Pos.Line, d.Pos.Col, d.Name, err)
	}
	return t.Checker(), nil
}

// registerExecTools registers the exec tool of each declaration in reg, in
// name order. A declaration whose name a Go tool already holds is an error
// located at the declaration.
func registerExecTools(reg *tool.Registry, decls map[string]*flow.ToolDecl) error {
	for _, name := range slices.Sorted(maps.Keys(decls)) {
		d := decls[name]
		if _, taken := reg.Lookup(d.Name); taken {
			return fmt.Errorf("%s:%d:%d: tool %s is declared here and also registered as a Go tool by the program: rename one of them", d.File, d.Pos.Line, d.Pos.Col, d.Name)
		}
		t, err := ExecTool(d)
		if err != nil {
			return err
		}
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	return nil
}

// CallGate is the gate that decides a call of one of the project's tools
// made outside its flow's engine — a workflow's source adapter
// (package bridge), a tool rein mcp serves: base (nil: the rein.yaml
// policy:, Gate) joined with the flow's own policy: rules, as the engine
// joins them for the flow's steps (safety.Join, the most severe decision
// wins). It is safety.AllowAll when there are no rules at all.
func (p *Project) CallGate(base safety.Gate) safety.Gate {
	if base == nil && p.Gate != nil {
		base = p.Gate
	}
	if p.Flow != nil && p.Flow.Policy != nil {
		return safety.Join(base, p.Flow.Policy.Policy())
	}
	return safety.Join(base)
}

// Redactor hides the project's secrets: the values of the environment
// variables whose names say they are secrets, of every variable a model
// provider reads its key from (presets and rein.yaml api_key_env), and of
// the variables rein.yaml secrets: names.
func (p *Project) Redactor() *redact.Redactor {
	if p.redactor == nil {
		return redact.Process()
	}
	return p.redactor
}

// Codec is the payload codec of rein.yaml encryption: (its key and old
// keys), which seals at rest the payloads of a run that hold a secret;
// nil when rein.yaml has no encryption: (they are stored redacted).
func (p *Project) Codec() *seal.Codec { return p.codec }

// Config is the project's parsed rein.yaml; nil when it has none.
func (p *Project) Config() *flow.Config { return p.config }

// secrets builds the project's Redactor from the environment, cfg (which
// may be nil) and getenv (LoadOptions.Getenv, which may hold keys the
// process's environment does not).
func secrets(cfg *flow.Config, getenv func(string) string) *redact.Redactor {
	var names []string
	for _, p := range provider.Presets() {
		if p.KeyEnv != "" {
			names = append(names, p.KeyEnv)
		}
	}
	if cfg != nil {
		for _, m := range cfg.Models {
			if m.APIKeyEnv != "" {
				names = append(names, m.APIKeyEnv)
			}
		}
		names = append(names, cfg.Secrets...)
		if e := cfg.Encryption; e != nil {
			for _, k := range append([]flow.KeySource{e.KeySource}, e.OldKeys...) {
				if k.KeyEnv != "" {
					names = append(names, k.KeyEnv)
				}
			}
		}
	}
	vals := make([]string, 0, len(names))
	if getenv != nil {
		for _, n := range names {
			vals = append(vals, getenv(n))
		}
	}
	return redact.Process(names...).With(vals...)
}

// RunMeta is what a durable run records about its project.
type RunMeta struct {
	Config string `json:"config,omitempty"`
	Script string `json:"script,omitempty"`
	// Model is the --model the run was started with.
	Model string `json:"model,omitempty"`
	// GoTools are the Go tools (LoadOptions.Tools) the flow names: a
	// resume needs them again.
	GoTools []string `json:"go_tools,omitempty"`
	// Files are the schema and routes files the flow was loaded with, by
	// absolute path: a resume reads these, not the files on disk.
	Files map[string][]byte `json:"files,omitempty"`
	// Workflows are the workflow tools of the flow's agents: a resume
	// makes them again (LoadOptions.Workflow) from folders whose flow.yaml
	// has not changed.
	Workflows []PinnedWorkflow `json:"workflows,omitempty"`
	// Agents are the agent folders the flow's agents call as tools or
	// hand the conversation to: a resume loads them again from folders
	// whose definitions have not changed.
	Agents []PinnedAgent `json:"agents,omitempty"`
}

// Meta is the RunMeta a durable run of the project records (the run's
// store.Run.Meta), so that LoadPinned can rebuild the same tools and
// models to resume it.
func (p *Project) Meta() json.RawMessage {
	abs := func(s string) string {
		if s == "" {
			return ""
		}
		if a, err := filepath.Abs(s); err == nil {
			return a
		}
		return s
	}
	b, _ := json.Marshal(RunMeta{Config: abs(p.ConfigPath), Script: abs(p.ScriptPath), Model: p.model, GoTools: p.goTools, Files: p.Flow.Files, Workflows: p.workflows, Agents: p.agents})
	return b
}

// LoadRun rebuilds the project of a durable run from st: the flow text the
// run pinned (never the file on disk, which may have changed), parsed as if
// it were at its original path so its schema files resolve, with the
// rein.yaml and script the run recorded. A run started with Go tools needs
// them again: pass the same ones in opts.Tools (without them, the error is
// a *fault.Error with HintNeedsTools naming those it lacks). opts may add
// models too: Config, Script, Model and Replay override the recorded ones
// (Replay answers every call, whatever the run recorded), and Record writes
// the resumed run's model exchanges to a cassette.
//
// With opts.Cache the pinned flow is parsed once per Cache (a pinned flow
// is immutable): Projects rebuilt for the same run, or for runs of the same
// pinned flow, share one *flow.Flow, which must not be modified.
func LoadRun(ctx context.Context, st store.Store, runID string, opts *LoadOptions) (*Project, error) {
	run, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	return LoadPinned(run, opts)
}

// LoadPinned is LoadRun for a run whose row the caller has read already.
func LoadPinned(run *store.Run, opts *LoadOptions) (*Project, error) {
	runID := run.ID
	o := LoadOptions{}
	if opts != nil {
		o = *opts
	}
	if len(run.FlowText) == 0 && run.FlowHash == "" {
		// a run of records only (rein mcp's ledger of the calls it served)
		return nil, fault.Errorf(fault.Business, "run %s (flow %s) pinned no flow: it holds the records of calls made outside a flow (rein mcp's ledger), so there is nothing to resume or to load; rein runs show %s lists them", runID, run.Flow, runID)
	}
	m, err := MetaOf(run)
	if err != nil {
		return nil, err
	}
	if o.Config == "" {
		o.Config = m.Config
	}
	if o.Script == "" && o.Model == "" && o.Replay == "" {
		o.Script = m.Script
	}
	if o.Model == "" && o.Script == "" && o.Replay == "" {
		o.Model = m.Model
	}
	if missing := missingTools(m.GoTools, o.Tools); len(missing) > 0 {
		return nil, fault.Hinted(fault.Business, fault.Hint{Code: fault.HintNeedsTools, RunID: runID, Tools: missing},
			fmt.Errorf("run %s was started with the Go tools %s, which were not given: only a program that registers them can resume it (project.LoadOptions{Tools: …}, as rein.Config.Load)",
				runID, strings.Join(missing, ", ")))
	}
	if len(m.Workflows) > 0 && o.Workflow == nil {
		names := make([]string, len(m.Workflows))
		for i, w := range m.Workflows {
			names[i] = w.Tool
		}
		return nil, fault.Hinted(fault.Business, fault.Hint{Code: fault.HintNeedsTools, RunID: runID, Tools: names},
			fmt.Errorf("run %s has agents with the workflow tools %s: only a program that serves workflow tools can resume it (rein runs; in Go, project.LoadOptions.Workflow, as rein.Config.Load)",
				runID, strings.Join(names, ", ")))
	}
	o.NoDefaults = true
	o.flowText, o.flowFiles = run.FlowText, m.Files
	if o.flowFiles == nil {
		o.flowFiles = map[string][]byte{} // a flow that pinned no files reads none
	}
	path := run.FlowPath
	if path == "" {
		path = run.Flow + ".yaml"
	}
	p, err := Load(path, &o)
	if err != nil {
		return nil, fault.Hinted(fault.Format, fault.Hint{Code: fault.HintFlowDoesNotLoad, RunID: runID},
			fmt.Errorf("run %s: its pinned flow does not load any more (a schema file or tool it needs changed?): %w", runID, err))
	}
	if err := samePinnedWorkflows(m.Workflows, p.workflows); err != nil {
		p.Close()
		return nil, fault.Hinted(fault.Format, fault.Hint{Code: fault.HintFlowDoesNotLoad, RunID: runID}, fmt.Errorf("run %s: %w", runID, err))
	}
	if err := samePinnedAgents(m.Agents, p.agents); err != nil {
		p.Close()
		return nil, fault.Hinted(fault.Format, fault.Hint{Code: fault.HintFlowDoesNotLoad, RunID: runID}, fmt.Errorf("run %s: %w", runID, err))
	}
	return p, nil
}

// MetaOf decodes what a run recorded about its project (Meta).
func MetaOf(run *store.Run) (RunMeta, error) {
	var m RunMeta
	if len(run.Meta) > 0 {
		if err := json.Unmarshal(run.Meta, &m); err != nil {
			return m, fmt.Errorf("run %s: its metadata does not decode: %w", run.ID, err)
		}
	}
	return m, nil
}

// MissingTools returns the Go tools the run was started with (GoTools)
// that no tool in have carries.
func (m RunMeta) MissingTools(have []tool.Tool) []string { return missingTools(m.GoTools, have) }

// missingTools returns the names in want that no tool in have carries.
func missingTools(want []string, have []tool.Tool) []string {
	var missing []string
	for _, name := range want {
		if !slices.ContainsFunc(have, func(t tool.Tool) bool { return t.Spec().Name == name }) {
			missing = append(missing, name)
		}
	}
	return missing
}

func resolveFlowPath(path string) (string, bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", false, fmt.Errorf("load flow: %w", err)
	}
	if !st.IsDir() {
		return path, false, nil
	}
	fp := filepath.Join(path, FlowFile)
	if !exists(fp) {
		return "", false, fmt.Errorf("load flow: folder %s holds no %s", path, FlowFile)
	}
	return fp, true, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, os.ErrNotExist)
}

// RunRedactor hides the secrets of run's project in what is recorded about
// it from outside its engine (a person's decision): the environment's, and
// those of the rein.yaml the run was started with (opts.Config instead,
// when set), and opts.Redactor's, as the run's own engine hid them.
func RunRedactor(run *store.Run, opts *LoadOptions) *redact.Redactor {
	o, path := runConfig(run, opts)
	var cfg *flow.Config
	if path != "" {
		cfg, _ = flow.LoadConfig(path) // unreadable: the environment's secrets still go
	}
	return secrets(cfg, o.getenv()).Join(o.Redactor)
}

// runConfig is opts (zero when nil) and the path of the rein.yaml run was
// started with: opts.Config when set, else the one its meta names.
func runConfig(run *store.Run, opts *LoadOptions) (LoadOptions, string) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	path := o.Config
	if path == "" {
		if m, err := MetaOf(run); err == nil {
			path = m.Config
		}
	}
	return o, path
}

// RunCodec is the payload codec of the rein.yaml run was started with
// (opts.Config instead, when set), which its engine seals with: nil when
// that rein.yaml has no encryption: or cannot be read (its secrets are
// then stored redacted only). An error says which key could not be read
// and where; it holds no key material.
func RunCodec(run *store.Run, opts *LoadOptions) (*seal.Codec, error) {
	o, path := runConfig(run, opts)
	if path == "" {
		return nil, nil
	}
	cfg, err := flow.LoadConfig(path)
	if err != nil {
		return nil, nil //nolint:nilerr // unreadable: RunRedactor hides its secrets from the environment alone, as here
	}
	codec, _, err := loadCodec(cfg, o.getenv())
	return codec, err
}

// FolderRedactor is the Redactor Load(path, opts) would give its project,
// read without loading the flow: the environment's secrets, those of the
// rein.yaml beside the flow (opts.Config instead, when set: its secrets:,
// its models' key variables, its encryption keys) and opts.Redactor's.
// A server of several folders joins them before it loads any, so what a
// folder's flow makes while it loads (an agent's workflow tool) hides
// every folder's secrets. A path or rein.yaml that cannot be read adds
// only the environment's secrets (Load reports the problem).
func FolderRedactor(path string, opts *LoadOptions) *redact.Redactor {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	cfgPath := o.Config
	if cfgPath == "" && !o.NoDefaults {
		if fp, _, err := resolveFlowPath(path); err == nil && exists(filepath.Join(filepath.Dir(fp), ConfigFile)) {
			cfgPath = filepath.Join(filepath.Dir(fp), ConfigFile)
		}
	}
	var cfg *flow.Config
	if cfgPath != "" {
		cfg, _ = flow.LoadConfig(cfgPath)
	}
	_, keyText, _ := loadCodec(cfg, o.getenv())
	return secrets(cfg, o.getenv()).With(keyText...).Join(o.Redactor)
}
