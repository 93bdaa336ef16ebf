// Package cassette records the model exchanges of a run and replays them,
// so a run against a real provider becomes a deterministic, offline test.
//
// Record wraps a model.Model: every call is forwarded and its exchange (the
// request, and the response or the error) is kept; Recorder.Close writes
// them all to a cassette file. Replay reads a cassette and answers each
// request with the recorded exchange whose key matches; a request the
// cassette does not hold fails with a business error that names the step
// and the prompt, so a changed prompt is noticed rather than papered over.
//
// The key is the sha256 of the canonical JSON of the request's model name,
// decision, messages and schema, and, when the request offers tools, its
// tools and tool choice; the messages' tool calls (ids, names, arguments)
// and tool results (call id, content, error flag) are part of the
// messages. So each turn of an agent conversation replays the exchange
// recorded for it, and a turn whose tool results differ misses. A request
// without tools has the key it had before tool calling, so older
// cassettes still replay. Run id, step id, attempt and the corrective flag
// are not part of it, so a replay in a new run matches, and renaming a step
// does not invalidate a cassette. Identical requests
// recorded several times (a retry after a transient error, the same
// prompt in two steps) are answered in the order they were recorded.
//
// A cassette is indented, versioned JSON:
//
//	{
//	  "version": 1,
//	  "exchanges": [
//	    {
//	      "key": "3f1c…",
//	      "request": {
//	        "model": "gpt-4o-mini",
//	        "decision": "route",
//	        "step": "triage",
//	        "messages": [{"role": "user", "content": "I was charged twice"}],
//	        "schema": {"type": "object"}
//	      },
//	      "response": {"text": "{\"route\":\"account\"}", "usage": {"in": 12, "out": 5}, "model": "gpt-4o-mini-2024-07-18"}
//	    },
//	    {
//	      "key": "9a0b…",
//	      "request": {"model": "gpt-4o-mini", "step": "brief", "messages": […]},
//	      "error": {"class": "transient", "message": "openai: 503 Service Unavailable"}
//	    }
//	  ]
//	}
//
// A request that offers tools also records "tools" (name, description,
// schema) and "tool_choice"; its messages carry "tool_calls" and
// "tool_call_id"/"is_error" where they have them, and a response its
// "tool_calls" ({"id", "name", "args"}, the arguments' text as the model
// wrote it).
//
// "step" and "corrective" are informational. "key" is what replay matches
// on; after editing a request by hand, delete its key and it is computed
// from the request when the cassette is read. An exchange has a response,
// an error, or both (the usage of a failed call).
//
// Secrets. Requests carry no API keys, but prompts, replies and above all
// provider error messages may echo one. Before anything is written the
// recorder replaces with [REDACTED], through package redact: the values of
// environment variables whose names say they are secrets (redact.SecretName,
// 8 bytes or longer) and values given to Recorder.Redact, in their common
// encodings, and token-shaped strings (sk-…, AIza…, "Bearer …")
// everywhere, tool call arguments and tool results included; in error messages also the values of header- and
// parameter-like secrets (Authorization:, x-api-key:, api_key=, …). Keys
// are computed before redaction, so a redacted cassette still replays; a
// redacted reply is replayed redacted.
package cassette
