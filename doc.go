// Package rein is a Go runtime that keeps LLM agents on a deterministic
// rein: the model decides only what needs language understanding (what an
// llm step writes), while ordinary, tested code owns the control flow —
// step order, retries, timeouts, budgets and error policies.
//
// This root package is the small facade most programs need:
//
//	p, err := rein.Load("examples/resume-screen", &rein.LoadOptions{Script: "script.yaml"})
//	res, err := p.Run(ctx, input, nil)
//
// Load reads a flow (a file, or a folder holding flow.yaml) together with
// what it needs to run: the exec tools of the flow and of a rein.yaml beside
// it, Go tools the program registers, and models. The pieces live in their
// own packages — flow (the format), engine (execution), model and tool (the
// ports), trace (events), fault (the error vocabulary) — and can be used
// directly.
package rein
