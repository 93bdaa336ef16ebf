// Package client calls the tools of external MCP servers that rein.yaml
// names under mcp:, as tool.Tools the engine, plans and agents call like
// any other (through the invocation pipeline). A server is a program
// speaking MCP on stdio, started with an explicit environment like an exec
// tool's (tool/exec.Environ), or a streamable-HTTP endpoint.
//
// Each server tool becomes the tool "<server>.<tool>" with the server's
// description and input and output schemas, and what rein.yaml declares
// it does (flow.EffectDecl: effect, reversibility, idempotent, undo,
// compensate, resources, tags). An undeclared tool takes its effect from
// its server's tool annotations (annotate), else external.
// Each call has a timeout (the server's timeout:, else
// flow.DefaultToolTimeout). A server that ends during a call fails that
// call with a business error saying its effect is unknown; the next call
// starts (or dials) the server again.
package mcp
