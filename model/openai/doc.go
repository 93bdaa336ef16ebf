// Package openai is the model.Model adapter for the OpenAI Chat Completions
// API and every server that speaks it: OpenAI, DeepSeek
// (https://api.deepseek.com), vLLM, Ollama and LM Studio (their /v1
// endpoints). It is built on github.com/openai/openai-go/v3.
//
// Messages map one to one (system, user, assistant, tool). Native tool
// calling: Request.Tools go out as function tools (parameters: the
// argument schema as given, not strict), Request.ToolChoice as tool_choice
// ("auto", "none", "required" or a named function) and NoParallel as
// parallel_tool_calls: false; an assistant message's tool calls as its
// tool_calls, a tool result as a role "tool" message with its
// tool_call_id. A reply's tool_calls come back as Response.ToolCalls with
// their arguments' text as sent (an object some compatible servers send
// instead of a string is kept as its JSON); a call without an id gets
// "call_<index>", a reply with more than model.MaxToolCalls calls or two
// calls with one id is a format error.
//
// A request with a
// schema asks for structured output the way the server supports it
// (Config.Structured):
//
//   - json_schema (OpenAI's default): response_format json_schema with
//     strict: true. Strict mode wants every property required and
//     additionalProperties: false on every object, so the adapter rewrites
//     the schema (optional properties become nullable, oneOf becomes anyOf,
//     a non-object root is wrapped in {"value": …}) and maps the answer
//     back (nulls that stand for left-out optional properties are dropped,
//     the wrapper removed) before the engine validates it against the
//     schema as given. A schema strict mode cannot express (free-form maps,
//     allOf) is sent with strict: false.
//   - json_object (the default for other servers): JSON mode; the schema
//     travels in the prompt and the engine validates the answer.
//   - none: no response_format at all.
//
// Errors carry fault classes: 408, 429, 5xx, network errors and a passed
// deadline are transient (the server's Retry-After attached, see
// fault.RetryAfterOf), a reply cut off by the token limit is a format
// error, a refusal or content filter and other 4xx are business errors; a
// 401 names the environment variable the key came from. The SDK's own
// retries are off: the engine owns retries. The API key is never part of
// an error's text.
//
// The package passes the model/modeltest conformance suite.
package openai
