// Package conformance is the one table of flows every backend of rein
// runs with the same results: the local engine on SQLite and on
// PostgreSQL (this package's tests) and the Temporal workflow (the
// temporal module's servertest). Each case is a folder under testdata/:
// flow.yaml, input.json, a script.yaml when it calls a model, and
// expected.json, the observable result: the run's final status and error
// class, each step's status, the decisions a person sends and what the
// run waits on before each, each tool's execution count, and, where it
// does not depend on timing, what the run spent (iterations, model calls,
// tokens: rein run --output json's usage).
//
// The counts are observed outside rein: every tool of the table is
// testdata/tool.sh (testdata/rein.yaml names it many times), an exec tool
// that appends one line per execution to a ledger file (LedgerEnv), so a
// call that ran twice shows twice whatever the backend recorded.
//
// A backend implements Runner; Run runs every case through it, but those
// of its skip list, which says why each one is skipped (a feature the
// backend does not have yet), so that a case lights up when the skip goes.
package conformance
