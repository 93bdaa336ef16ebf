package summary

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/reinhq/rein/trace"
)

// WriteJSON writes s as one indented JSON document (for `--output json`).
// Durations are milliseconds under duration_ms, with a fractional part
// below the millisecond. It returns the first
// write error.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write trace summary: %w", err)
	}
	return nil
}

// MarshalJSON encodes r with its Duration as duration_ms.
func (r Run) MarshalJSON() ([]byte, error) {
	type plain Run
	return json.Marshal(struct {
		plain
		DurationMS float64 `json:"duration_ms"`
	}{plain(r), trace.Millis(r.Duration)})
}

// MarshalJSON encodes s with its Duration as duration_ms.
func (s Step) MarshalJSON() ([]byte, error) {
	type plain Step
	return json.Marshal(struct {
		plain
		DurationMS float64 `json:"duration_ms"`
	}{plain(s), trace.Millis(s.Duration)})
}
