package project

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/provider"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/tool"
)

// Toolbox is what a rein.yaml provides on its own, without a flow: its exec
// tools and its models, for programs and commands that call tools or models
// directly (rein plan, rein route). It is not safe for concurrent mutation;
// its registries are filled by LoadConfig.
type Toolbox struct {
	// Tools holds the exec tools of the rein.yaml and the Go tools of
	// LoadOptions.Tools.
	Tools *tool.Registry
	// Models resolves model names as Model does, except that a
	// provider/model reference only resolves through Model. A configured
	// model is opened on its first call; an error opening it (a missing
	// API key) is that call's business error.
	Models *model.Registry
	// Script is the scripted model, when one was loaded.
	Script *scripted.Model
	// Config is the parsed rein.yaml; nil when there was none.
	Config *flow.Config
	// ConfigPath and ScriptPath are the files that were used, or "".
	ConfigPath string
	ScriptPath string

	bound  map[string]model.Model // LoadOptions.Models
	getenv func(string) string
}

// LoadConfig reads the rein.yaml at path (when path is "", opts.Config;
// when both are empty, there is none) and the script opts.Script names,
// and returns their tools and models. opts.Tools are registered beside the
// exec tools of the rein.yaml (a name in both is an error located in the
// file); opts.Models bind names first. A script answers every other model
// name, including those rein.yaml configures, so a scripted run never
// calls a provider; without one, the models of rein.yaml models: answer
// their names, each opened on its first call. API keys are read with
// opts.Getenv (default os.Getenv). Nothing is looked for beside a flow
// (opts.NoDefaults is implied), and opts.Model, Record and Replay are not
// used. A *flow.Error lists every problem in the rein.yaml; a
// *scripted.ParseError every problem in the script; other errors name the
// file that failed. Nil opts means defaults.
func LoadConfig(path string, opts *LoadOptions) (*Toolbox, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	if path == "" {
		path = opts.Config
	}
	tb := &Toolbox{Tools: &tool.Registry{}, Models: &model.Registry{}, ConfigPath: path, ScriptPath: opts.Script,
		bound: map[string]model.Model{}, getenv: opts.getenv()}
	if path != "" {
		cfg, err := flow.LoadConfig(path)
		if err != nil {
			return nil, err
		}
		tb.Config = cfg
	}
	for _, t := range opts.Tools {
		if err := tb.Tools.Register(t); err != nil {
			return nil, err
		}
	}
	if tb.Config != nil {
		if err := registerExecTools(tb.Tools, tb.Config.Tools); err != nil {
			return nil, err
		}
		if err := flow.CheckEffects(tb.Tools, tb.Config.Tools, nil); err != nil {
			return nil, err
		}
	}
	for name, m := range opts.Models {
		tb.bound[name] = m
		tb.Models.Register(name, m)
	}
	if tb.ScriptPath != "" {
		s, err := scripted.Load(tb.ScriptPath)
		if err != nil {
			return nil, err
		}
		tb.Script = s
		tb.Models.SetFallback(s)
		return tb, nil
	}
	if _, err := registerConfigModels(tb.Models, tb.Config, tb.getenv); err != nil {
		return nil, err
	}
	return tb, nil
}

// Model returns the model for name, resolved in this order: a model of
// LoadOptions.Models; the script, which answers every name; a model of
// rein.yaml models:, opened now; a provider/model reference
// (openai/gpt-4o-mini), opened now with the provider's defaults. API keys
// are read from the environment only (LoadOptions.Getenv). The error says what to set or
// configure: a missing key variable, an unknown provider, or a name that is
// none of these.
func (tb *Toolbox) Model(name string) (model.Model, error) {
	if m, ok := tb.bound[name]; ok {
		return m, nil
	}
	if tb.Script != nil {
		return tb.Script, nil
	}
	if tb.Config != nil {
		if d, ok := tb.Config.Models[name]; ok {
			return openConfigModel(name, d, tb.getenv)
		}
	}
	if strings.Contains(name, "/") {
		spec, err := provider.ParseRef(name)
		if err != nil {
			return nil, err
		}
		return provider.Open(spec, tb.getenv)
	}
	var configured []string
	if tb.Config != nil {
		configured = slices.Sorted(maps.Keys(tb.Config.Models))
	}
	where := "no rein.yaml models: are configured"
	if len(configured) > 0 {
		where = "rein.yaml models: configures " + strings.Join(configured, ", ")
	}
	return nil, fmt.Errorf("model %q %w (%s): name a configured model, give provider/model (e.g. openai/gpt-4o-mini), or answer it offline with a scripted model", name, model.ErrNotConfigured, where)
}

// DefaultModel is the rein.yaml models: name that also answers steps
// which name no model.
const DefaultModel = "default"

// registerConfigModels registers in reg a model for each rein.yaml models:
// entry of cfg (which may be nil) whose name reg does not hold yet (the
// program's models win), each opened on its first call. The entry named
// default also answers steps without model:. An unknown provider is an
// error located at its entry, found now rather than at the first call.
// It returns the provider preset of each name it registered and of each
// registered entry's model: (Project.ModelProvider).
func registerConfigModels(reg *model.Registry, cfg *flow.Config, getenv func(string) string) (map[string]provider.Preset, error) {
	if cfg == nil {
		return nil, nil
	}
	own := reg.Names()
	presets := map[string]provider.Preset{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Models)) {
		d := cfg.Models[name]
		pre, ok := provider.Lookup(d.Provider)
		if !ok {
			return nil, fmt.Errorf("%s:%d:%d: model %s: unknown provider %q (known: %s)", d.File, d.Pos.Line, d.Pos.Col, name, d.Provider, providerNames())
		}
		if slices.Contains(own, name) {
			continue
		}
		m := &lazyModel{open: func() (model.Model, error) { return openConfigModel(name, d, getenv) }}
		reg.Register(name, m)
		presets[name] = pre
		if name == DefaultModel && !slices.Contains(own, "") {
			reg.Register("", m)
			presets[""] = pre
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Models)) {
		// the provider's own name of the model, which its calls' events
		// carry; an entry's name wins, then the first entry by name.
		if d := cfg.Models[name]; d.Model != "" && !slices.Contains(own, name) {
			if _, taken := presets[d.Model]; !taken {
				presets[d.Model] = presets[name]
			}
		}
	}
	return presets, nil
}

func providerNames() string {
	var names []string
	for _, p := range provider.Presets() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// openConfigModel opens the rein.yaml models: entry d named name; its
// error is located at the entry.
func openConfigModel(name string, d *flow.ModelDecl, getenv func(string) string) (model.Model, error) {
	m, err := provider.Open(modelSpec(d), getenv)
	if err != nil {
		return nil, fmt.Errorf("%s:%d:%d: model %s: %w", d.File, d.Pos.Line, d.Pos.Col, name, err)
	}
	return m, nil
}

// modelSpec turns a rein.yaml models: entry into a provider.Spec.
func modelSpec(d *flow.ModelDecl) provider.Spec {
	return provider.Spec{Provider: d.Provider, Model: d.Model, BaseURL: d.BaseURL, APIKeyEnv: d.APIKeyEnv,
		MaxTokens: d.MaxTokens, Timeout: provider.Duration(d.Timeout), Structured: d.Structured}
}

// lazyModel opens a model on its first call, so that a rein.yaml naming a
// provider whose key is not set only fails the calls that use it: open's
// error is each call's business error.
type lazyModel struct {
	open func() (model.Model, error)
	once sync.Once
	m    model.Model
	err  error
}

func (l *lazyModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := l.ready(); err != nil {
		return nil, fault.BusinessErr(err)
	}
	return l.m.Generate(ctx, req)
}

// ready opens the model unless it was opened already, and returns open's
// error (a *provider.KeyError for a missing key). Opening makes no network
// call.
func (l *lazyModel) ready() error {
	l.once.Do(func() { l.m, l.err = l.open() })
	return l.err
}
