// Package rein is a Go runtime that keeps LLM agents on a deterministic
// rein: the model decides only what needs language understanding (what an
// llm step writes, which route a request takes when no rule decides, what
// plan to propose, which tool an agent calls next), while ordinary, tested
// code owns the control flow — step order, retries, timeouts, budgets,
// error policies, plan validation and execution, approvals, persistence,
// and side effects with their undoing.
//
// This root package is the small facade a program needs: a Client, opened
// from a Config, that loads flow and agent folders and runs them, and
// operates on durable runs.
//
//	c, err := rein.Open(ctx, rein.Config{DB: "runs.db"}) // import _ ".../store/sqlite"
//	p, err := c.Load("examples/resume-screen")            // a *project.Project
//	res, err := c.Run(ctx, p, input)
//	if res.Status == trace.RunWaiting { /* a person decides: c.Decide */ }
//
// Client.Run, Start and Enqueue start runs; Resume, Decide, Cancel,
// Remediate and Prune operate on the durable runs of its store (a run is
// named by its ID, a unique prefix of one, or "last"); Work advances the
// ready runs of the store as a worker, as `rein worker` does. Every error
// of these operations is an *Error (package fault's): a class, a Hint a
// program can switch on, and Retryable.
//
// The pieces a program composes live in their own packages: project (a
// folder → a loaded, validated Project: flow, rein.yaml, agent.yaml,
// tools, models), runs (read views of a run: show, list, why, effects,
// impact), flow (the format), model, tool and store (the ports) with their
// adapters in subpackages, trace (events), safety (the gate, provenance,
// risk tiers), fault (the error vocabulary). Drivers and provider SDKs are
// imported by the program that uses them, not by this package. The engine
// and the decision runtimes are implementation (internal/); the types of a
// run's result are named here (Result, StepResult, Usage, RunError).
package rein
