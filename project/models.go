package project

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
	"github.com/reinhq/rein/model/provider"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// opener is a model that opens spec on its first call (lazyModel), so a
// flow whose rein.yaml configures a hosted model loads, validates and runs
// offline without its API key; the call that needs the key fails saying
// which variable to set.
func opener(spec provider.Spec, getenv func(string) string) model.Model {
	return &lazyModel{open: func() (model.Model, error) { return provider.Open(spec, getenv) }}
}

// getenv returns the function that reads API keys: Getenv, else os.Getenv.
func (o *LoadOptions) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}

// setupModels decides who answers each model name, in this order: the
// program's own Models; --replay (a cassette answers everything); --model
// (one provider model answers everything); an explicit --script (the
// scripted model answers everything); rein.yaml models: by name, a
// step's provider/model reference, and the script beside the flow for the
// rest. --record wraps whatever answers.
func (p *Project) setupModels(opts *LoadOptions, cfg *flow.Config, explicitScript bool) error {
	getenv := opts.getenv()
	switch {
	case opts.Replay != "":
		player, err := cassette.Replay(opts.Replay)
		if err != nil {
			return err
		}
		p.Models.SetFallback(player)
	case opts.Model != "":
		spec, err := p.modelRef(opts.Model, cfg)
		if err != nil {
			return fmt.Errorf("model %s, which is to answer every model name: %w", opts.Model, err)
		}
		p.Models.SetFallback(opener(spec, getenv))
	case explicitScript:
		// the script answers every name.
	default:
		presets, err := registerConfigModels(p.Models, cfg, getenv)
		if err != nil {
			return err
		}
		p.presets = presets
	}
	p.getenv, p.model = getenv, opts.Model
	p.refs = opts.Replay == "" && opts.Model == "" && !explicitScript
	return nil
}

// modelRef resolves --model: a rein.yaml models: name or provider/model.
func (p *Project) modelRef(ref string, cfg *flow.Config) (provider.Spec, error) {
	if cfg != nil {
		if d, ok := cfg.Models[ref]; ok {
			return modelSpec(d), nil
		}
	}
	return provider.ParseRef(ref)
}

// hasModel is the flow loader's view of which names resolve: registered
// ones, and provider/model references when those are allowed.
func (p *Project) hasModel(name string) bool {
	if p.Models.Has(name) {
		return true
	}
	if p.refs && strings.Contains(name, "/") {
		_, err := provider.ParseRef(name)
		return err == nil
	}
	return false
}

// bindRefs registers the provider/model references the flow's steps name.
func (p *Project) bindRefs() {
	if !p.refs {
		return
	}
	for _, s := range p.Flow.Steps {
		for _, name := range []string{s.Model, fallbackModel(s)} {
			if name == "" || !strings.Contains(name, "/") {
				continue
			}
			if slices.Contains(p.Models.Names(), name) {
				continue
			}
			if spec, err := provider.ParseRef(name); err == nil {
				p.Models.Register(name, opener(spec, p.getenv))
			}
		}
	}
}

func fallbackModel(s *flow.Step) string {
	if s.Fallback != nil {
		return s.Fallback.Model
	}
	return ""
}

// record wraps every model of the project in a cassette recorder.
func (p *Project) record(path string) error {
	rec, err := cassette.Record(dispatch{p.Models}, path)
	if err != nil {
		return err
	}
	rec.UseRedactor(p.Redactor())
	wrapped := &model.Registry{}
	for _, n := range p.Models.Names() {
		wrapped.Register(n, rec)
	}
	wrapped.SetFallback(rec)
	p.recorded, p.Models = p.Models, wrapped
	p.closers = append(p.closers, rec.Close)
	return nil
}

// unopened is a model a step may call that does not open (lazyModel):
// the step, the model name it gives, and open's error.
type unopened struct {
	step, name string
	err        error
}

// unopened opens, without calling them, the models the flow's steps may
// call that are opened on their first call (rein.yaml models:, --model,
// provider/model references), and returns those that do not open, in
// step order, each model once (with the first step naming it). A name
// that resolves to no model is left to the engine, which refuses it.
func (p *Project) unopened() []unopened {
	reg := p.Models
	if p.recorded != nil {
		reg = p.recorded
	}
	var out []unopened
	seen := map[*lazyModel]bool{}
	for _, s := range p.Flow.Steps {
		for _, name := range stepModels(s) {
			m, err := reg.Lookup(name)
			l, ok := m.(*lazyModel)
			if err != nil || !ok || seen[l] {
				continue
			}
			seen[l] = true
			if err := l.ready(); err != nil {
				out = append(out, unopened{step: s.ID, name: name, err: err})
			}
		}
	}
	return out
}

// stepModels are the model names step s may call: an llm, plan or agent
// step's model ("" is the default model), a route step's model when it
// names one, and its fallback model.
func stepModels(s *flow.Step) []string {
	var names []string
	switch s.Type {
	case flow.LLM, flow.Plan, flow.Agent:
		names = append(names, s.Model)
	case flow.Route:
		if s.Model != "" {
			names = append(names, s.Model)
		}
	}
	if fb := fallbackModel(s); fb != "" {
		names = append(names, fb)
	}
	return names
}

// dispatch answers a request with the registry's model for req.Model.
type dispatch struct{ reg *model.Registry }

func (d dispatch) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m, err := d.reg.Lookup(req.Model)
	if err != nil {
		return nil, fault.BusinessErr(err)
	}
	return m.Generate(ctx, req)
}

// Close releases what the project holds open: it writes the cassette of a
// project loaded with Record. Call it after the last run.
func (p *Project) Close() error {
	var errs []error
	for _, c := range p.closers {
		errs = append(errs, c())
	}
	p.closers = nil
	return errors.Join(errs...)
}

// CheckModels checks, before the run runID resumes with p, that every model
// its unfinished steps may still call opens: their API keys are set (the
// models open lazily, so a run that cannot call its model would otherwise
// fail at its first model call, after what ran before it). steps are the
// run's step rows, or nil to read them from st (only when a model does not
// open). A missing key is a business error with fault.HintNeedsAPIKey
// naming the variables; any other model that does not open (a rein.yaml
// entry that is wrong) is a format error with fault.HintFlowDoesNotLoad.
// Nothing of the run is changed either way.
func (p *Project) CheckModels(ctx context.Context, st store.Store, runID string, steps []*store.Step) error {
	id := runID
	failed := p.unopened()
	if len(failed) == 0 {
		return nil
	}
	if steps == nil {
		var err error
		if steps, err = st.Steps(ctx, id); err != nil {
			return fmt.Errorf("steps of run %s: %w", id, err)
		}
	}
	done := map[string]bool{}
	for _, s := range steps {
		switch s.Status {
		case trace.StepSucceeded, trace.StepDefaulted, trace.StepFellBack, trace.StepSkipped:
			done[s.StepID] = true
		}
	}
	var problems, env []string
	keysOnly := true
	for _, u := range failed {
		if done[u.step] {
			continue
		}
		name := u.name
		if name == "" {
			name = DefaultModel
		}
		problems = append(problems, fmt.Sprintf("step %s (model %s): %v", u.step, name, u.err))
		var ke *provider.KeyError
		if errors.As(u.err, &ke) {
			if !slices.Contains(env, ke.Env) {
				env = append(env, ke.Env)
			}
		} else {
			keysOnly = false
		}
	}
	if len(problems) == 0 {
		return nil
	}
	err := fmt.Errorf("run %s cannot resume, nothing ran: a model it may still call does not open: %s", id, strings.Join(problems, "; "))
	if !keysOnly {
		return fault.Hinted(fault.Format, fault.Hint{Code: fault.HintFlowDoesNotLoad, RunID: id}, err)
	}
	slices.Sort(env)
	return fault.Hinted(fault.Business, fault.Hint{Code: fault.HintNeedsAPIKey, RunID: id, Env: env}, err)
}

// CheckModelsOpen checks, before a run of p starts, that every model its
// steps may call opens: its API key is set and its rein.yaml entry is
// right (the models open lazily, so a run that cannot call one would
// otherwise fail at that call, after what ran before it). Each model that
// does not open gives one diagnostic, located at the first step that may
// call it, saying what to set; the result is empty when every model
// opens. It makes no network call and changes nothing.
func (p *Project) CheckModelsOpen() []flow.Diagnostic {
	var out []flow.Diagnostic
	for _, u := range p.unopened() {
		name := u.name
		if name == "" {
			name = DefaultModel
		}
		d := flow.Diagnostic{File: p.Flow.File, Step: u.step, Message: fmt.Sprintf("model %s: %v", name, u.err)}
		if s := p.Flow.StepByID(u.step); s != nil {
			d.Line, d.Col = s.Pos.Line, s.Pos.Col
		}
		out = append(out, d)
	}
	return out
}

// ModelProvider returns the provider preset (model/provider: its name,
// such as openai, anthropic or ollama, and the API it speaks) of the
// rein.yaml models: entry that answers the model name, or whose model:
// (the provider's name of the model, which model call events carry) it
// is — an entry's name first, then the first entry by name — and false for a
// name no entry answers (a provider/model reference, a program's own
// model, or any name when --model, --script or --replay answers them all).
func (p *Project) ModelProvider(name string) (provider.Preset, bool) {
	pre, ok := p.presets[name]
	return pre, ok
}
