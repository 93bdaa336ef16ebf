package flow

import (
	"time"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/tool"
)

// Built-in defaults of the steps that call something, so that nothing hangs
// forever and a blip does not fail a run. rein.yaml defaults: replaces
// them; a step's own retries: and timeout: replace both.
const (
	// DefaultRetries is how often a step retries a transient error (a
	// timeout, 429, 5xx, a lost connection, exec exit 75), with backoff.
	// Other classes are never retried unless on_error is retry. A tool
	// step whose tool has side effects (write, external, destructive) and
	// is not idempotent gets no default retries: a timeout does not say
	// whether the effect happened.
	DefaultRetries = 2
	// DefaultModelTimeout bounds one attempt of an llm or route step.
	DefaultModelTimeout = 120 * time.Second
	// DefaultToolTimeout bounds one call of an exec tool (tools: in a flow
	// or rein.yaml) that sets no timeout. Tool and plan steps have no
	// built-in step timeout: their exec tools and model calls are bounded
	// each (a model by its own timeout:), and a Go tool is the program's
	// code, bounded by the program (or a step's timeout:, or defaults:),
	// which keeps a timer off the path of every in-process step.
	DefaultToolTimeout = 5 * time.Minute
)

// Defaults are what rein.yaml defaults: sets for every step that leaves a
// field out (Options.Defaults).
type Defaults struct {
	// Retries replaces DefaultRetries when set; 0 turns retries off. Like
	// DefaultRetries, it skips tool steps with unrepeatable side effects.
	Retries *int
	// Timeout, when positive, bounds one attempt of each llm, route, tool
	// and plan step and one call of an exec tool, in place of the built-in
	// DefaultModelTimeout and DefaultToolTimeout.
	Timeout time.Duration
}

var defaultsFields = []string{"retries", "timeout"}

// decodeDefaults reads rein.yaml defaults:.
func (d *decoder) decodeDefaults(fl field) *Defaults {
	out := &Defaults{}
	fields, ok := fieldsOf(fl.value)
	if !ok {
		if !isNull(fl.value) {
			d.diags.add(posOf(fl.value), "", "defaults must be a mapping like {retries: 2, timeout: 2m}, not %s", yamlnode.Kind(fl.value))
		}
		return out
	}
	for _, f := range fields {
		switch f.key {
		case "retries":
			if n, ok := d.integer(f, ""); ok {
				if n < 0 || n > MaxRetries {
					d.diags.add(posOf(f.value), "", "defaults: retries must be between 0 and %d, not %d", MaxRetries, n)
				} else {
					out.Retries = &n
				}
			}
		case "timeout":
			if t, ok := d.duration(f, ""); ok {
				if t <= 0 {
					d.diags.add(posOf(f.value), "", "defaults: timeout must be positive")
				} else {
					out.Timeout = t
				}
			}
		default:
			d.unknownField(f, "", "defaults", defaultsFields)
		}
	}
	return out
}

// applyDefaults gives every step that calls something (llm, route, tool,
// plan) and leaves retries: or timeout: out the default, an agent step
// without retries: the default retries (of its model calls), and every
// exec tool of the flow without a timeout its own.
func (d *decoder) applyDefaults() {
	def := d.opts.Defaults
	if def == nil {
		def = &Defaults{}
	}
	retries := DefaultRetries
	if def.Retries != nil {
		retries = *def.Retries
	}
	for _, src := range d.srcs {
		s := src.step
		if s.Type == Agent {
			// an agent's retries are its turns' model calls' (package
			// agent); it has no step timeout of its own (budgets: timeout).
			if _, set := src.fields["retries"]; !set {
				s.Retries = retries
			}
			continue
		}
		if !calls(s.Type) {
			continue // an approval waits for a person: nothing to retry or bound
		}
		if _, set := src.fields["retries"]; !set && d.repeatable(s) {
			s.Retries = retries
		}
		if _, set := src.fields["timeout"]; !set {
			s.Timeout = defaultTimeout(s.Type, def)
		}
	}
	for _, t := range d.flow.Tools {
		t.applyDefaults(def)
	}
}

// repeatable reports whether a retry of s cannot repeat a side effect: it
// is not a tool step, or its tool only reads or is idempotent.
func (d *decoder) repeatable(s *Step) bool {
	if s.Type != Tool {
		return true
	}
	spec, ok := d.toolSpec(s.Tool)
	if !ok {
		return false // reported as an unknown tool
	}
	switch spec.Effect {
	case "", tool.EffectNone, tool.EffectRead:
		return true
	}
	return spec.Idempotent
}

// calls reports whether steps of type t call a tool or a model.
func calls(t Type) bool {
	switch t {
	case LLM, Route, Tool, Plan:
		return true
	}
	return false
}

// defaultTimeout is the timeout of a step of type t (one that calls
// something) that sets none.
func defaultTimeout(t Type, def *Defaults) time.Duration {
	switch {
	case def.Timeout > 0:
		return def.Timeout
	case t == LLM || t == Route:
		return DefaultModelTimeout
	}
	return 0 // no built-in bound of its own: see DefaultToolTimeout
}

// applyDefaults gives an exec tool without a timeout the default one.
func (t *ToolDecl) applyDefaults(def *Defaults) {
	if t.Timeout > 0 || len(t.Command) == 0 {
		return
	}
	t.Timeout = DefaultToolTimeout
	if def != nil && def.Timeout > 0 {
		t.Timeout = def.Timeout
	}
}
