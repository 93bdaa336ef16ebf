package jsonl

import "github.com/reinhq/rein/trace"

// appendEvent appends e as one JSON object followed by '\n'. It does not
// allocate when dst has room.
func appendEvent(dst []byte, e *trace.Event) []byte {
	return append(trace.AppendJSON(dst, e), '\n')
}
