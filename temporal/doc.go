// Package temporal runs rein flows and agents on Temporal: each run is one
// workflow, driven by the same scheduler as a local run (engine/sched), and
// each attempt of a step (a tool call, a model call, an agent's turn and
// each of its calls) is an activity whose id is rein's idempotency key.
// People and programs talk to a run through updates with validators
// (approve, reject, settle, submit, retry) and queries (status, pending,
// next_actions); the workflow id is the run id.
//
// A worker holds the flows it can run (Flows, loaded from flow and agent
// folders) and registers the workflow and the activities on a Temporal
// worker:
//
//	flows := temporal.NewFlows()
//	flows.Store = st // a run store: tenants' daily spend, invalidated resources
//	if err := flows.Load([]string{"flows/refund"}, nil); err != nil { … }
//	w := worker.New(c, "rein", temporal.WorkerOptions(worker.Options{}, 0))
//	temporal.Register(w, &temporal.Workflow{Flows: flows}, &temporal.Activities{Flows: flows, Client: c})
//	err := w.Run(worker.InterruptCh())
//
// and a client starts runs of a loaded project and follows them
// (StartRun, Follow, Decide, Query, RetryRun). A program links the model
// adapters and store drivers its flows use by importing them, as rein and
// rein-temporal do (model/openai, model/anthropic, store/sqlite,
// store/postgres). The rein-temporal program (cmd/rein-temporal) is what
// `rein … --temporal HOSTPORT` runs; docs/temporal.md describes both.
package temporal
