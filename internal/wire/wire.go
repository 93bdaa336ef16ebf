// Package wire is the one place a loaded project meets the engine: it
// builds an engine from a project's tools, models, gate, risk, review and
// redactor, with the rest of the configuration from the caller. The root
// package's Client and package runs (the impact preview) use it, so the two
// cannot wire a project differently.
package wire

import (
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
)

// Engine returns an engine wired to p's tools and models; cfg supplies the
// rest (sink, gate, store, clock) and may be zero. Unless cfg has a gate,
// risk or review of its own, p's are used (rein.yaml policy:, risk:,
// review:); the redactor is p's (the project's secrets) joined with cfg's;
// the payload codec is cfg's, else p's (rein.yaml encryption:).
func Engine(p *project.Project, cfg engine.Config) *engine.Engine {
	cfg.Tools, cfg.Models = p.Tools, p.Models
	if cfg.Gate == nil && p.Gate != nil {
		cfg.Gate = p.Gate
	}
	if cfg.Risk == nil {
		cfg.Risk = p.Risk
	}
	if cfg.Review == nil {
		cfg.Review = p.Review
	}
	// the project's secrets are always hidden, the Config's besides
	cfg.Redactor = p.Redactor().Join(cfg.Redactor)
	if cfg.Codec == nil {
		cfg.Codec = p.Codec()
	}
	// the tenants' budgets and the models' prices: rein.yaml budgets: and
	// models: price: (its sub-agents' folders' for the models they name).
	if c := p.Config(); cfg.Spend == nil && c != nil && c.Budgets != nil {
		cfg.Spend = &engine.Spend{Models: p.SpendModels(), Budgets: c.Budgets}
	}
	return engine.New(cfg)
}
