package mcp

import (
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/fault"
)

// ErrorJSON is the JSON object of a failed call whose error does not carry
// its own (a json.Marshaler in its chain): the one error envelope,
// {class, error_type, message, hint?, retryable, pointer?}
// (fault.EnvelopeOf).
type ErrorJSON = fault.Envelope

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

// failure is err as an MCP tool error: one text content holding the JSON
// object, and no structured content. A client validates structured content
// against the tool's output schema even when isError is set (the official
// TypeScript SDK v1 then throws -32602 and its host never sees the error),
// and an error object never fits an answer's schema.
func (s *Server) failure(err error) *sdk.CallToolResult {
	var b []byte
	var m json.Marshaler
	if errors.As(err, &m) {
		if j, merr := m.MarshalJSON(); merr == nil && len(j) > 0 && j[0] == '{' {
			b = j
		}
	}
	if b == nil {
		b, _ = json.Marshal(fault.EnvelopeOf(err))
	}
	text := s.redacted(b)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}}
}

// redacted returns the JSON b with every secret hidden; the mask holds no
// character JSON escapes, so the result is JSON still (checked: if it were
// not, the secret-free message says so instead).
func (s *Server) redacted(b []byte) json.RawMessage {
	out := []byte(s.redact(string(b)))
	if !json.Valid(out) {
		out, _ = json.Marshal(fault.EnvelopeOf(fault.BusinessErr(errors.New("the answer held a secret and could not be shown with it hidden"))))
	}
	return out
}
