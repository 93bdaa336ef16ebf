// Package summary condenses a run's trace events into what `rein trace FILE`
// prints: per run its status, duration and token use, and per step its
// status, attempts, retries, corrective requests, duration, tokens and
// failures, so a reader can answer which step was slowest, which spent the
// most tokens, which retried (or had a model reply corrected), and whether
// each failure came from the model, the tool or the engine.
//
// Summarize works on events in the order they were emitted, as
// jsonl.ReadFile returns them; it does not sort them.
package summary
