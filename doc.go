// Package rein is a Go runtime that keeps LLM agents on a deterministic
// rein: the model decides only what needs language understanding (what an
// llm step writes, which route a request takes when no rule decides, what
// plan to propose), while ordinary, tested code owns the control flow —
// step order, retries, timeouts, budgets, error policies, plan validation
// and execution, and persistence.
//
// This root package is the small facade most programs need:
//
//	p, err := rein.Load("examples/resume-screen", &rein.LoadOptions{Script: "script.yaml"})
//	res, err := p.Run(ctx, input, nil)
//	if res.Status == rein.StatusSucceeded { ... }
//
// The types of a run (RunConfig, RunOptions, Result, the run and step
// statuses, approvals) are aliased here, so a program needs only this
// package, and package tool for its Go tools (tool.Typed derives their
// schemas from Go types).
//
// Load reads a flow (a file, or a folder holding flow.yaml) together with
// what it needs to run: the exec tools of the flow and of a rein.yaml beside
// it, Go tools the program registers, and models (rein.yaml models:,
// provider/model references, a script, or a cassette to replay). LoadConfig
// reads a rein.yaml on its own, for programs that call tools or models
// without a flow.
//
// Durable runs: OpenStore opens the store a DSN names (a SQLite file,
// ":memory:", or postgres://…); Project.Start with engine.Config.Store
// journals a run, Project.Enqueue records one for a worker, LoadRun rebuilds
// a stored run's project from the flow it pinned so Project.Resume can
// continue it, and Work advances the ready runs of a store, as `rein worker`
// does.
//
// The pieces live in their own packages — flow (the format), engine
// (execution), route and plan (decisions), model, tool and store (the
// ports) with their adapters in subpackages, trace (events), fault (the
// error vocabulary) — and can be used directly.
package rein
