// Package mcp serves rein tools over the Model Context Protocol
// (github.com/modelcontextprotocol/go-sdk): on stdio (`rein mcp DIR…`) and
// as a streamable-HTTP handler (mounted at /mcp by the HTTP server), so any
// MCP-capable agent host can call them. Package tool/mcp is the other
// direction: tools of external MCP servers named in rein.yaml mcp:.
//
// Every tool is served with its name, description and input schema. A call
// goes through the one invocation pipeline (package invoke: args schema,
// gate, idempotency key, call, output schema, call record); it is never a
// bare tool.Tool.Call. The client is a model's host, so every leaf of a
// call's arguments has provenance inferred (safety.Inferred): rules on
// provenance, like the default inferred-drives-effect, hold for them.
// The answer, a JSON value, is the MCP result's structured content and,
// encoded, its text. A failed call is an MCP tool
// error (IsError) whose structured content and text are the same JSON
// object: the error's own JSON when it implements json.Marshaler (the
// workflow tools' {error_type, message, pointer, retryable}), otherwise
// {error_type, message, retryable} built from its fault class. Requests
// that are not valid JSON-RPC get protocol errors from the SDK.
package mcp
