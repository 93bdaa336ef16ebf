// Package jsonl is the JSON Lines adapter of the trace port: a [Sink] that
// writes one JSON object per event, and [Read]/[ReadFile] that decode such a
// file back into events (what `rein trace FILE` reads).
//
// # Format
//
// Each line is one [trace.Event] encoded with its json tags, fields in struct
// order, zero fields left out exactly as their omitempty tags say; seq, time,
// kind and run_id are always present. time is RFC 3339 with nanoseconds in
// UTC; duration_ms is a number of milliseconds with a fraction (0.137). For events whose Time is in UTC the output is byte for byte what
// encoding/json produces with SetEscapeHTML(false):
//
//   - '"', '\\' and control characters are escaped (\n, \r, \t, \b, \f, else \u00XX);
//   - each byte of invalid UTF-8 becomes \ufffd;
//   - U+2028 and U+2029 are escaped, as encoding/json always does;
//   - '<', '>' and '&' are written as they are: a trace is read by tools and
//     people, not embedded in HTML, and escaping them would make it harder to
//     grep.
//
// # Buffering
//
// The sink buffers its output. Callers must call [Sink.Close] (or
// [Sink.Flush]) when they are done, or the tail of the trace is lost; the
// sink also flushes after every run_settled event, so a finished run is on
// disk even if the process exits without closing the sink.
package jsonl
