// Package slogsink is the log/slog adapter of the trace port: a [Sink] that
// logs one record per event, so a run's events land in whatever logging an
// application already has.
//
// A record's message is the event kind, its time is the event time, and its
// attributes are the event's non-zero fields under the names of their JSON
// tags (run_id, step_id, attempt, tokens_in, …; seq and run_id always).
// Levels: Warn for attempt_failed, Error for a step_settled or run_settled
// whose status is failed (or compensation_failed), Info for everything else.
package slogsink
