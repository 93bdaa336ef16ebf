// Package httperr classes the failures of a model provider's HTTP API into
// fault classes, for the adapters built on a provider's SDK (model/openai,
// model/anthropic).
//
// A failed call is transient when the server answered 408, 429 or 5xx (the
// wait it asked for in Retry-After or retry-after-ms attached, see
// fault.RetryAfterOf), when the connection failed or when the deadline
// passed; any other 4xx is a business error. The message names the
// provider, the model, the status and the server's own words, and says what
// to do for a refused key (401, 403) or an unknown model (404). The API key
// is never part of a message, and the SDK's error is not kept in the chain:
// it holds the request, and the request holds the key.
package httperr
