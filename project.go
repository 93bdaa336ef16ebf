package rein

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/engine"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
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
}

// Project is a validated flow with its tools and models, ready to run.
type Project struct {
	Flow   *flow.Flow
	Tools  *tool.Registry
	Models *model.Registry
	// Script is the scripted model, when one was loaded.
	Script *scripted.Model
	// Dir is the flow's folder; InputPath the input.json found there, or "".
	Dir       string
	InputPath string
	// ConfigPath and ScriptPath are the files that were used, or "".
	ConfigPath string
	ScriptPath string
}

// Load reads the flow at path (a flow file, or a folder holding flow.yaml),
// its rein.yaml and script, and validates everything. A *flow.Error lists
// every problem in the flow; other errors name the file that failed.
func Load(path string, opts *LoadOptions) (*Project, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	p := &Project{Tools: &tool.Registry{}, Models: &model.Registry{}}
	flowPath, isDir, err := resolveFlowPath(path)
	if err != nil {
		return nil, err
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
	if p.ScriptPath == "" && !opts.NoDefaults && exists(filepath.Join(p.Dir, ScriptFile)) {
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
	for _, t := range opts.Tools {
		if err := p.Tools.Register(t); err != nil {
			return nil, err
		}
	}
	var cfg *flow.Config
	if p.ConfigPath != "" {
		if cfg, err = flow.LoadConfig(p.ConfigPath); err != nil {
			return nil, err
		}
	}
	fopts := &flow.Options{
		Tools: func(name string) (tool.Spec, bool) {
			if t, ok := p.Tools.Lookup(name); ok {
				return t.Spec(), true
			}
			if cfg != nil {
				if d, ok := cfg.Tools[name]; ok {
					return d.Spec(), true
				}
			}
			return tool.Spec{}, false
		},
		Models: p.Models.Has,
	}
	if p.Flow, err = flow.Load(flowPath, fopts); err != nil {
		return nil, err
	}
	// Exec tools: the flow's own declarations win over the config's.
	decls := map[string]*flow.ToolDecl{}
	if cfg != nil {
		for n, d := range cfg.Tools {
			decls[n] = d
		}
	}
	for n, d := range p.Flow.Tools {
		decls[n] = d
	}
	for _, d := range decls {
		if _, taken := p.Tools.Lookup(d.Name); taken {
			return nil, fmt.Errorf("%s:%d:%d: tool %s is declared here and also registered as a Go tool by the program: rename one of them", d.File, d.Pos.Line, d.Pos.Col, d.Name)
		}
		t, err := ExecTool(d)
		if err != nil {
			return nil, err
		}
		if err := p.Tools.Register(t); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ExecTool builds the exec tool a declaration describes.
func ExecTool(d *flow.ToolDecl) (tool.Tool, error) {
	cfg := exec.Config{Name: d.Name, Description: d.Description, Command: d.Command, Dir: d.Dir, Env: d.Env,
		Timeout: d.Timeout, MaxOutputBytes: d.MaxOutput, Effect: d.Effect, Reversibility: d.Reversibility, Idempotent: d.Idempotent}
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
	return t, nil
}

// Engine returns an engine wired to the project's tools and models; cfg
// supplies the rest (sink, gate, store, clock) and may be zero.
func (p *Project) Engine(cfg engine.Config) *engine.Engine {
	cfg.Tools, cfg.Models = p.Tools, p.Models
	return engine.New(cfg)
}

// Run runs the project's flow once with input on an engine with cfg.
func (p *Project) Run(ctx context.Context, input any, cfg *engine.Config) (*engine.Result, error) {
	var c engine.Config
	if cfg != nil {
		c = *cfg
	}
	return p.Engine(c).Run(ctx, p.Flow, input, nil)
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
