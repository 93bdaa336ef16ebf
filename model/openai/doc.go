// Package openai is the model.Model adapter for the OpenAI Chat Completions
// API and every server that speaks it: OpenAI, DeepSeek
// (https://api.deepseek.com), vLLM, Ollama and LM Studio (their /v1
// endpoints). It is built on github.com/openai/openai-go/v3.
//
// Messages map one to one (system, user, assistant). A request with a
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
