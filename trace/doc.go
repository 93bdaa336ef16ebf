// Package trace defines the Sink port a run's events go to. Events are the
// run's record, owned by package journal (Event, the states and kinds are
// re-exported here as aliases): the durable store persists exactly these, and
// `rein trace` summarises them. Adapters live in subpackages (trace/jsonl,
// trace/slogsink); the engine depends only on this package.
//
// # Sinks
//
// A [Sink] gets every event of a run, in order, and may keep it: the engine
// allocates each event for its sinks and never touches it again, unless the
// sink is a [Borrower] (it keeps nothing once Emit returns), whose events'
// memory the engine reuses. Emit runs
// synchronously, outside the run's locks; before Engine.Run returns, every
// event of the run has been handed to the sink. A sink that can be slow
// (an exporter over the network, a stream to a browser) goes behind
// [NewAsync]: a bounded queue drained by a goroutine of its own, which
// drops events rather than stall a run when the queue is full (the policy
// OpenTelemetry's batch span processor has) and counts what it dropped.
package trace
