// Package http is the HTTP API of a rein Client (`rein serve`): the same
// operations as the CLI and the MCP server — start, list, show, decide,
// cancel, retry, effects, why, impact, remediate — over JSON, with the
// journal's events as Server-Sent Events, Prometheus metrics at /metrics
// and the OpenAPI 3.1 document of every route at /v1/openapi.json.
//
// New returns a Server whose Handler serves the routes of docs/server.md.
// Errors are application/problem+json (RFC 9457) carrying the fault
// envelope the CLI prints (class, hint, retryable, pointer): there is no
// second error vocabulary.
//
// Access is by bearer tokens (Tokens: a file of their sha256 hashes, never
// the tokens), each of one tenant and some scopes (read, run, approve,
// admin). A token sees only its tenant's runs: another tenant's run is not
// found (404), never forbidden. A Server without Tokens admits every
// request as the local user of the empty tenant; the caller binds it to
// loopback only (cmd/rein does).
//
// The Server starts runs by enqueuing them (Client.Enqueue): the runs are
// advanced by workers (Client.Work), which the caller runs beside it; a
// decision makes a waiting run ready for them again.
package http
