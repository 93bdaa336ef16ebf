package trace

import "github.com/reinhq/rein/journal"

// AppendJSON appends e as one JSON object: journal.AppendEvent, byte for
// byte what encoding/json writes for it with SetEscapeHTML(false), its time
// in UTC. It does not allocate when dst has room.
func AppendJSON(dst []byte, e *Event) []byte { return journal.AppendEvent(dst, e) }
