// Package flow defines rein's flow format (v1): a workflow written as data,
// loaded from YAML and validated completely before anything runs.
//
// Load and Parse return a compiled *Flow — steps in a dependency graph with
// their templates, expressions and schemas already compiled — or an *Error
// listing every problem at once as file:line:col: message. Expressions run
// in a sandbox with a short whitelist of deterministic functions, and
// templates only read values; but exec tools a flow declares in its own
// tools: run commands, so such a flow is code. Options.TrustedToolsOnly
// refuses them. Every file is bounded before it is parsed (see
// internal/yamlnode, MaxFileBytes, MaxSteps).
//
// LoadConfig and ParseConfig read a rein.yaml (exec tools and models:) the
// same way.
//
// The format is documented in docs/flow-format.md; schema/flow.v1.json and
// schema/rein.v1.json are its JSON Schemas for editors.
package flow
