// Package anthropic is the model.Model adapter for the Anthropic Messages
// API, built on github.com/anthropics/anthropic-sdk-go/v2.
//
// System messages go in the request's system field, user and assistant
// messages in messages, in order. max_tokens is required by the API:
// Config.MaxTokens, DefaultMaxTokens when unset.
//
// A request with a schema asks for structured output through tool use: one
// tool whose input_schema is the schema (a schema whose root is not an
// object is wrapped in {"value": …}, since input_schema must be an
// object), with tool_choice forcing the model to call it. The tool_use
// block's input is the answer, returned as the Response text for the
// engine to validate against the schema as given.
//
// Errors carry fault classes: 408, 429, 5xx (529 overloaded included),
// network errors and a passed deadline are transient (the server's
// Retry-After attached, see fault.RetryAfterOf); a reply cut off at
// max_tokens or at the context window is a format error; a refusal
// (stop_reason: refusal) and other 4xx are business errors; a 401 names
// the environment variable the key came from. The SDK's own retries are
// off: the engine owns retries. The API key is never part of an error's
// text.
//
// The package passes the model/modeltest conformance suite.
package anthropic
