// Package modeltest is the conformance suite every model provider adapter
// passes. Run(t, p) starts an httptest server per scenario that speaks the
// provider's real wire format, points the adapter at it, and checks what
// the model.Model port promises the engine:
//
//   - the request carries the model, the messages (system messages where
//     the provider wants them), the API key and, when the request has a
//     schema, the schema the provider's way;
//   - the reply text, structured answer, usage tokens and model name are
//     mapped back;
//   - a reply cut off by the token limit is a fault.Format error, a refusal
//     a fault.Business error;
//   - 429 (with Retry-After, see fault.RetryAfterOf), 5xx, network errors
//     and a server that hangs past the ctx deadline are fault.Transient,
//     and are not retried by the adapter (the engine owns retries);
//   - 400 is fault.Business with the provider's message, 401 names the
//     environment variable that holds the key;
//   - the API key never appears in any error text, even when the server
//     echoes it back;
//   - native tool calling: tools, tool_choice, assistant tool calls and
//     tool results go out the provider's way; one call, parallel calls
//     (in order, with the text beside them), arguments that are not JSON
//     and calls to tools the request did not offer come back as the
//     model sent them; a final answer follows tool results; each turn
//     reports its own usage; a reply with more than model.MaxToolCalls
//     calls is fault.Format; a request model.CheckRequest rejects is
//     fault.Business and never sent.
//
// Wire formats differ, so the Provider value brings a Wire: functions that
// write the provider's response for each scenario and one that checks the
// request the adapter sent. Fixtures belong with the adapter (see the
// tests of model/openai and model/anthropic).
package modeltest
