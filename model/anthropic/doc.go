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
// Native tool calling: Request.Tools go out as tools (input_schema: the
// argument schema), Request.ToolChoice as tool_choice (auto, none, any for
// required, tool for a named one; NoParallel as
// disable_parallel_tool_use). An assistant message's tool calls become
// tool_use blocks after its text (their arguments must be a JSON object);
// consecutive tool results become tool_result blocks (is_error kept) of
// one user turn, which a user message right after them joins. A reply's
// tool_use blocks come back as Response.ToolCalls, input as the raw JSON
// the server sent; more than model.MaxToolCalls calls, or two with one id,
// is a format error. A request with tools of its own sends its schema in
// the prompt only: a forced answer tool would keep the model from calling
// them.
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
