// Package engine runs compiled flows (package flow). It owns the control
// flow: dependency order with parallel branches, when and skip propagation,
// per-attempt timeouts, retries by error class with backoff and jitter, the
// one corrective request for malformed model output (through model.Decide),
// on_error policies, budgets, for_each fan-out, repeat loops and output
// gates. The model fills in only what an llm step writes, which route a
// route step takes when no rule decides (package route), and what plan a
// plan step proposes; the plan is validated and executed by package plan,
// never by the model. Approval steps and approval: required tool steps wait
// for a person.
//
// Decisions are kept apart from effects: the scheduler's decisions (the
// ready queue, skip propagation and when, retries by error class with
// their backoff, on_error, budgets, what waits on a person, the run's
// outcome) are made by package sched's deterministic machine, which the
// live scheduler, a resume and a replay of a stored journal drive with the
// same transitions; this package carries its commands out (renders inputs,
// calls tools and models, waits, commits) and feeds the outcomes back.
// What differs by step type is one table (kinds.go). Replay tests fold the
// journals of earlier engines in testdata/replay.
//
// The engine depends on ports only — model.Model, tool.Tool, safety.Gate,
// store.Store, trace.Sink — never on their adapters. Every event goes to the
// trace sink as it is recorded, in order, outside the run's lock; the sink
// may keep it, and Run returns once the sink has had every event of the
// run (a slow sink belongs behind trace.NewAsync). With a durable
// Config.Store the run is
// journaled: the scheduler gathers its events and step rows into one
// store.Transition per barrier — before a step's work starts (so no effect
// precedes its record), before each retry, and before the scheduler waits
// for the next outcome — and commits it with the run's version, so a crash
// loses nothing that was acted on. Resume continues a run from its journal
// (idempotent steps found in flight run again with the same idempotency key;
// others are parked as unknown for a person), Enqueue records a pending run
// for a worker, Cancel settles one, and a lease with heartbeats keeps two
// processes from advancing the same run. Without a store (store.Ephemeral)
// runs live in memory only, and none of that is done: no transitions, no
// commits, no lease.
//
// Every call that reaches a tool with an effect is journaled as a
// call_effect record (effects.go): the run's effect graph. Remediation
// (remedy.go) takes effects back — undo, compensate, freeze — through the
// same invocation pipeline and gate, at the end of a failed run whose flow
// says on_failure: compensate, or on request (Remediate) once a premise
// failed; what it cannot do is escalated to a person.
package engine
