package journal

import "encoding/json"

// GuardrailTrip is the Data of a guardrail event: which guardrail of the
// step tripped, its kind (regex, deny, schema, check or judge), its side
// (input or output) and why, in the guardrail's words (a regex's pattern
// and offset, a denied phrase, a schema's error, a judge's reason): never
// the text it tripped on. Bounded (MaxGuardrailReason) and redacted as
// the event is.
type GuardrailTrip struct {
	Name   string `json:"name"`
	Kind   string `json:"kind,omitempty"`
	Side   string `json:"side"`
	Reason string `json:"reason"`
}

// MaxGuardrailReason bounds GuardrailTrip.Reason, in bytes.
const MaxGuardrailReason = 512

// The decisions of a guardrail event: what the tripped guardrail did.
const (
	GuardrailStopped = "stop" // the turn and the step stopped with a guardrail error
	GuardrailAsked   = "ask"  // the step waits for a person's decision (on_trip: ask)
)

// DecodeGuardrailTrip reads a guardrail event's Data.
func DecodeGuardrailTrip(data string) (*GuardrailTrip, error) {
	g := new(GuardrailTrip)
	return g, json.Unmarshal([]byte(data), g)
}
