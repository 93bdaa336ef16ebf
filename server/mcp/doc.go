// Package mcp is the MCP server of a rein Client
// (github.com/modelcontextprotocol/go-sdk): it serves flow folders' tools
// on stdio (ServeStdio: `rein mcp DIR…`) and as a streamable-HTTP handler
// (Handler), so any MCP-capable agent host can call them. Package tool/mcp
// is the other direction: tools of external MCP servers named in
// rein.yaml mcp:.
//
//	c, err := rein.Open(ctx, rein.Config{DB: "runs.db"})
//	srv, err := mcp.New(ctx, c, &mcp.Options{Dirs: []string{"flows"}, Log: os.Stderr})
//	defer srv.Close()
//	err = srv.ServeStdio(ctx, os.Stdin, os.Stdout) // or mount srv.Handler() at /mcp
//
// New loads the folders and serves: one workflow tool per flow
// (<name>_workflow, package workflowtool), its tasks runs of the Client's
// store; every tool the flows can call; the workflow tools their agents
// declare; Options.Tools; and the read-only runs_list and runs_show over
// the Client's runs.
//
// Every tool is served with its name, description and input schema. A call
// goes through the one invocation pipeline (args schema, gate, idempotency
// key "<ledger run>/<tool>/<n>", call, output schema); it is never a bare
// tool.Tool.Call. The gate of a tool is that of each folder that offers it
// (its rein.yaml policy: joined with the flow's policy:), after
// Options.Gate, joined with safety.DefaultRules whatever the folders say. The
// client is a model's host, so every leaf of a call's arguments has
// provenance inferred (safety.Inferred), and a workflow tool's start whose
// flow hands its input to a side effect has its /input inferred: the
// default inferred-drives-effect holds for them. A call the gate holds for
// a person is put to the host's user with MCP elicitation (an input request
// with a signed request state; the SDK asks clients of older protocol
// versions itself): accepted, it is made once with its key; declined,
// cancelled, or with a client that cannot ask, it is refused, nothing done.
// Every call is journaled in the Server's ledger, a run of flow LedgerFlow in
// the Client's store (call records with the gate's and the user's
// decisions and the outcome); a decision other than allow is also written
// to Options.Log (GateLog). The answer, a JSON value, is the MCP result's structured
// content and, encoded, its text, with the secrets of every served folder
// hidden. A failed call is an MCP tool error (IsError) whose structured
// content and text are the same JSON object: the error's own JSON when it
// implements json.Marshaler (the workflow tools' envelope with problems),
// otherwise the one error envelope, fault.EnvelopeOf: {class, error_type,
// message, hint?, retryable, pointer?}. Requests that are not valid JSON-RPC get protocol
// errors.
package mcp
