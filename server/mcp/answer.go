package mcp

import (
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/fault"
)

// ErrorJSON is the JSON object of a failed call whose error does not carry
// its own (a json.Marshaler in its chain): the fault class as error_type
// (unclassified counts as business), the message, and whether trying again
// may help.
type ErrorJSON struct {
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// answer is a successful result: out as structured content and as text,
// with secrets hidden.
func (s *Server) answer(out any) *sdk.CallToolResult {
	b, err := json.Marshal(out)
	if err != nil { // the pipeline normalised out: cannot happen
		return s.failure(fault.BusinessErr(err))
	}
	text := s.redacted(b)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}, StructuredContent: text}
}

// failure is err as an MCP tool error whose text and structured content
// are the same JSON object.
func (s *Server) failure(err error) *sdk.CallToolResult {
	var b []byte
	var m json.Marshaler
	if errors.As(err, &m) {
		if j, merr := m.MarshalJSON(); merr == nil && len(j) > 0 && j[0] == '{' {
			b = j
		}
	}
	if b == nil {
		class := fault.ClassOf(err)
		if class == fault.Unclassified {
			class = fault.Business
		}
		b, _ = json.Marshal(ErrorJSON{ErrorType: string(class), Message: err.Error(), Retryable: class == fault.Transient})
	}
	text := s.redacted(b)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}, StructuredContent: text}
}

// redacted returns the JSON b with every secret hidden; the mask holds no
// character JSON escapes, so the result is JSON still (checked: if it were
// not, the secret-free message says so instead).
func (s *Server) redacted(b []byte) json.RawMessage {
	out := []byte(s.redact(string(b)))
	if !json.Valid(out) {
		out, _ = json.Marshal(ErrorJSON{ErrorType: string(fault.Business), Message: "the answer held a secret and could not be shown with it hidden"})
	}
	return out
}
