// Package engine runs compiled flows (package flow). It owns the control
// flow: dependency order with parallel branches, when and skip propagation,
// per-attempt timeouts, retries by error class with backoff and jitter, the
// one corrective retry for malformed model output, on_error policies,
// budgets, for_each fan-out, repeat loops and output gates. The model only
// fills in what an llm step writes.
//
// The engine depends on ports only — model.Model, tool.Tool, safety.Gate,
// store.Store, trace.Sink — never on their adapters. Every event of a run
// passes through the trace sink and the store, in order, before the engine
// acts on the next one.
package engine
