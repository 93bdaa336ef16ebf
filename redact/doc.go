// Package redact is the one place rein hides secrets before a string
// leaves the process: error messages stored in the journal and the trace,
// the tail of an exec tool's stderr, model cassettes, the CLI's output and
// hints, and the worker's log.
//
// A Redactor knows secret values (the API keys rein reads, the values of
// environment variables whose names say KEY, TOKEN, SECRET, PASSWORD or
// CREDENTIAL, DSN passwords, and what rein.yaml secrets: names) and finds
// them in their common encodings: as they are, in any letter case,
// URL-escaped (%-escapes in either case), hex, JSON-escaped once and twice
// (a JSON document inside a JSON string), and base64 (both alphabets,
// wherever the secret starts in a longer encoded text). It also
// hides strings shaped like credentials (sk-…, AIza…, ghp_…, Bearer …)
// whoever they belong to. DSN hides the password of a database DSN in
// every form rein accepts.
package redact
