package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Sealed is the record of a sealed event: the payloads of one transition
// that held a secret, each encrypted (package redact/seal) and bound to
// where it belongs and to the redacted form its record keeps.
type Sealed struct {
	Payloads []SealedPayload `json:"payloads"`
}

// SealedPayload is one payload sealed at rest. At names its place:
//
//	input                          the run's input
//	step/<step>/output, …/input    a step's row
//	approval/<id>/args, …/output   an approval
//	call/<key>/output              a call record's output
//	call/<key>/compensation.args   its compensation's args
//	call/<key>/agent.args, …/agent.observation   an agent call's
//	event/<seq>/data               an event's Data (an agent's turn)
//
// Redacted is the sha256 (hex) of the redacted payload the record keeps:
// a resume puts the opened payload in place of exactly that one, so a
// record written again later (without a secret) is not replaced. Sealed
// is the payload as redact/seal wrote it, opened with AAD(run, At,
// Redacted).
type SealedPayload struct {
	At       string `json:"at"`
	Redacted string `json:"redacted_sha256"`
	Sealed   string `json:"sealed"`
}

// AAD is what a sealed payload of run at place at, whose redacted form has
// the digest redacted, is bound to: it opens nowhere else.
func AAD(run, at, redacted string) []byte {
	return []byte(run + "\x00" + at + "\x00" + redacted)
}

// Digest is the hex sha256 of b, as SealedPayload.Redacted holds it.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// EncodeSealed is the JSON text of a sealed event's Data.
func EncodeSealed(s *Sealed) string {
	b, _ := json.Marshal(s) // strings only: cannot fail
	return string(b)
}

// DecodeSealed reads a sealed event's Data.
func DecodeSealed(data string) (*Sealed, error) {
	var s Sealed
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return nil, fmt.Errorf("sealed record: %w", err)
	}
	return &s, nil
}
